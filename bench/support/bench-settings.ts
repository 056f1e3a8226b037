import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CONFIG_DEFAULTS } from '../../src/config/load-config.js';
import { DEFAULT_DATABASE_URL } from './bench-database.js';
import { HarnessError } from './bench-errors.js';
import { BENCHMARK_NAMES, isBenchmarkName, type BenchmarkName } from './report.js';

/**
 * The settings of one `npm run bench`: flags, then BENCH_* environment variables, then defaults.
 * The defaults are the full-size setup; --quick is a small smoke version.
 */

export interface BenchSettings {
  readonly mode: 'full' | 'quick';
  /** Calls the simulator holds over 90 days (the dataset of benchmarks 1–4). */
  readonly calls: number;
  /** Runs of each measurement; every figure is their median. */
  readonly runs: number;
  readonly only: readonly BenchmarkName[];
  readonly databaseUrl: string;
  readonly seed: string;
  /** TELESYNC_CONCURRENCY of every telesync run and of the fetch limit. */
  readonly concurrency: number;
  /** TELESYNC_MAX_RPS of the unthrottled runs: high enough never to be what limits them. */
  readonly unthrottledMaxRps: number;
  /** The service's published limit, enforced by the simulator in the throttled benchmark. */
  readonly rateLimit: { readonly requests: number; readonly windowSeconds: number };
  /**
   * TELESYNC_REQUEST_SHARE of the throttled benchmarks (3 and 7), in percent of the service's
   * budget (TELESYNC_REQUEST_BUDGET, given as rateLimit).
   */
  readonly throttledSharePercent: number;
  /** How long the throttled backfill should last; its day range is chosen from the dataset. */
  readonly throttledSeconds: number;
  /** Whole UTC days of the slice the naive reference and telesync both sync. */
  readonly naiveDays: number;
  /** Rows of each load of the loader choice. */
  readonly loaderRows: number;
  readonly loaderBatchSizes: readonly number[];
  /** Product default batch size (TELESYNC_BATCH_SIZE), used by the COPY limit. */
  readonly batchSize: number;
  /** An extra, untimed, CPU-profiled backfill of telesync and the simulator. */
  readonly profile: boolean;
  readonly profileDays: number;
  /** A short untimed backfill before the first timed one (JIT, caches, connections). */
  readonly warmup: boolean;
  /** Where latest.json and summary.md go (quick runs write latest-quick.json, summary-quick.md). */
  readonly resultsDir: string;
  /** Whether the default selection includes running the fault-injection tests (step 6). */
  readonly faultHarness: boolean;
  /** Measure a copy of the code taken at the start, not the working tree as it changes. */
  readonly snapshot: boolean;
  /** The multi-account benchmark: accounts and calls per account of its two scenarios. */
  readonly multiAccount: {
    readonly accounts: number;
    readonly callsPerAccount: number;
    readonly wideAccounts: number;
    readonly wideCallsPerAccount: number;
  };
  /** Only write the summary again from the results file. */
  readonly summaryOnly: boolean;
  /**
   * A git ref to compare with: benchmark 1 then runs only its backfill, alternately with that
   * commit's telesync and this one, and reports the CPU per stored row of each and their ratios.
   */
  readonly against: string | undefined;
}

export const USAGE = `npm run bench -- [options]

  --quick                 small smoke version (100,000 calls, 1 run, short throttled run)
  --calls <n>             calls over 90 days in the simulator (default 1,000,000)
  --runs <n>              runs per measurement, figures are medians (default 3)
  --only <names>          comma-separated: ${BENCHMARK_NAMES.join(', ')}
  --concurrency <n>       TELESYNC_CONCURRENCY for telesync and the fetch limit (default ${CONFIG_DEFAULTS.concurrency})
  --max-rps <n>           TELESYNC_MAX_RPS of the unthrottled runs (default 100000)
  --throttled-share <n>   TELESYNC_REQUEST_SHARE of the throttled runs, in % (default 100)
  --throttled-seconds <n> target length of the throttled backfill (default 120)
  --naive-days <n>        days of the naive comparison slice (default 30, one full window; 3 with --quick)
  --loader-rows <n>       rows per load in the loader choice (default 100,000)
  --[no-]profile          CPU-profile an extra backfill (default on, off with --quick)
  --[no-]fault-harness    run the fault-injection tests for the summary (default on, off with --quick)
  --no-warmup             skip the untimed warm-up backfill
  --no-snapshot           run the working tree as it is (default: a copy taken at the start)
  --seed <text>           simulator seed (default "bench")
  --results-dir <path>    where to write the results (default bench/results)
  --summary-only          only write summary.md again from latest.json (no benchmark runs)
  --against <git-ref>     benchmark 1 only: its backfill run alternately with the telesync of
                          <git-ref> (a temporary git worktree, built) and this one, --runs times
                          each; reports CPU per stored row of both and the ratios this ÷ <git-ref>

Environment: DATABASE_URL (default ${DEFAULT_DATABASE_URL}), and BENCH_CALLS, BENCH_RUNS,
BENCH_ONLY, BENCH_QUICK=1 as defaults for the flags.`;

function positiveInteger(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.replaceAll('_', '').replaceAll(',', ''));
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new HarnessError(`${name} must be a whole number of at least 1 (got "${raw}")`);
  }
  return value;
}

function sharePercent(raw: string | undefined): number {
  const value = positiveInteger('--throttled-share', raw, 100);
  if (value > 100) throw new HarnessError(`--throttled-share must be at most 100 (got "${raw}")`);
  return value;
}

/** A git ref as given; refused when empty or when it reads as an option. */
function parseAgainst(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const ref = raw.trim();
  if (ref === '' || ref.startsWith('-') || /\s/.test(ref)) {
    throw new HarnessError(`--against needs a git ref (a commit, branch or tag; got "${raw}")`);
  }
  return ref;
}

export function parseBenchSettings(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  defaultResultsDir: string,
): BenchSettings | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      help: { type: 'boolean', short: 'h' },
      quick: { type: 'boolean' },
      calls: { type: 'string' },
      runs: { type: 'string' },
      only: { type: 'string' },
      concurrency: { type: 'string' },
      'max-rps': { type: 'string' },
      'throttled-share': { type: 'string' },
      'throttled-seconds': { type: 'string' },
      'naive-days': { type: 'string' },
      'loader-rows': { type: 'string' },
      profile: { type: 'boolean' },
      'no-profile': { type: 'boolean' },
      'no-warmup': { type: 'boolean' },
      'fault-harness': { type: 'boolean' },
      'no-fault-harness': { type: 'boolean' },
      'no-snapshot': { type: 'boolean' },
      seed: { type: 'string' },
      'results-dir': { type: 'string' },
      'summary-only': { type: 'boolean' },
      against: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help === true) return 'help';
  const quick = values.quick === true || env.BENCH_QUICK === '1';
  const faultHarness =
    values['no-fault-harness'] === true ? false : (values['fault-harness'] ?? !quick);
  const against = parseAgainst(values.against);
  const onlyText = values.only ?? env.BENCH_ONLY;
  const only =
    onlyText === undefined || onlyText === ''
      ? against === undefined
        ? BENCHMARK_NAMES.filter((name) => name !== 'fault-harness' || faultHarness)
        : ['backfill-throughput']
      : onlyText.split(',').map((name) => name.trim());
  const unknown = only.filter((name) => !isBenchmarkName(name));
  if (unknown.length > 0) {
    throw new HarnessError(
      `unknown benchmark ${unknown.join(', ')}; the benchmarks are ${BENCHMARK_NAMES.join(', ')}`,
    );
  }
  if (against !== undefined && (only.length !== 1 || only[0] !== 'backfill-throughput')) {
    throw new HarnessError(
      `--against compares benchmark 1 only: use it with --only backfill-throughput (got --only ${only.join(',')})`,
    );
  }
  const calls = positiveInteger(
    '--calls',
    values.calls ?? env.BENCH_CALLS,
    quick ? 100_000 : 1_000_000,
  );
  const naiveDays = positiveInteger('--naive-days', values['naive-days'], quick ? 3 : 30);
  if (naiveDays > 30) throw new HarnessError('--naive-days must be at most 30');
  return {
    mode: quick ? 'quick' : 'full',
    calls,
    // A comparison alternates the two commits: three of each even when quick.
    runs: positiveInteger(
      '--runs',
      values.runs ?? env.BENCH_RUNS,
      quick && against === undefined ? 1 : 3,
    ),
    only: only as BenchmarkName[],
    databaseUrl: env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    seed: values.seed ?? 'bench',
    concurrency: positiveInteger('--concurrency', values.concurrency, CONFIG_DEFAULTS.concurrency),
    unthrottledMaxRps: positiveInteger('--max-rps', values['max-rps'], 100_000),
    rateLimit: { requests: 300, windowSeconds: 5 },
    throttledSharePercent: sharePercent(values['throttled-share']),
    throttledSeconds: positiveInteger(
      '--throttled-seconds',
      values['throttled-seconds'],
      quick ? 30 : 120,
    ),
    naiveDays,
    loaderRows: positiveInteger('--loader-rows', values['loader-rows'], quick ? 20_000 : 100_000),
    loaderBatchSizes: [500, 2_000, 10_000],
    batchSize: CONFIG_DEFAULTS.batchSize,
    profile: values['no-profile'] === true ? false : (values.profile ?? !quick),
    profileDays: 30,
    warmup: values['no-warmup'] !== true,
    // Absolute: the benchmarks run from a copy of the code, whose own directory is deleted after.
    resultsDir: resolve(values['results-dir'] ?? defaultResultsDir),
    snapshot: values['no-snapshot'] !== true,
    faultHarness,
    summaryOnly: values['summary-only'] === true,
    against,
    // Full: about 17 s of one account's budget each; quick: a few hundred calls, start-up dominates.
    multiAccount: quick
      ? { accounts: 10, callsPerAccount: 400, wideAccounts: 5, wideCallsPerAccount: 400 }
      : { accounts: 10, callsPerAccount: 20_000, wideAccounts: 50, wideCallsPerAccount: 10_000 },
  };
}

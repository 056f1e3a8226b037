import type { BenchSettings } from '../support/bench-settings.js';
import { cpuPerRow, medianCpuPerRow } from '../support/cpu-per-row.js';
import { medianCpu } from '../support/median-cpu.js';
import { sharedMachineNote } from '../support/process-monitor.js';
import {
  checkTarget,
  formatInteger,
  formatPercent,
  judgedOnFullRunsOnly,
  MB,
  type BenchmarkReport,
} from '../support/report.js';
import { maxOf, median, round } from '../support/stats.js';
import { copyLaneCounts } from './measure-copy-limit.js';
import { BACKFILL_DAYS, type BackfillProfile, type ThroughputRound } from './throughput-round.js';
import {
  copyLoadsTable,
  cpuPerRowTable,
  cpuTable,
  profileTables,
  roundsTable,
} from './throughput-tables.js';

/** What the report is built from. */
export interface ThroughputResults {
  readonly settings: BenchSettings;
  /** When the benchmark started, ISO. */
  readonly startedAt: string;
  readonly rounds: readonly ThroughputRound[];
  readonly profile: BackfillProfile | null;
  /** Notes gathered while running (they come first). */
  readonly notes: readonly string[];
}

/**
 * The benchmark's report: figures (medians over the rounds), targets, notes, settings and tables.
 * The finishing time is taken here.
 */
export function buildThroughputReport(results: ThroughputResults): BenchmarkReport {
  const { settings, startedAt, rounds, profile } = results;
  const notes = [...results.notes];
  const e2e = rounds.map((r) => r.endToEnd);
  const peaks = e2e
    .map((run) => run.peakRssBytes)
    .filter((value): value is number => value !== null);
  const growths = e2e
    .map((run) => run.rssGrowth)
    .filter((value): value is number => value !== null);
  const worstGrowth = growths.length > 0 ? round(maxOf(growths), 3) : null;
  const basis = `median of ${rounds.length} run${rounds.length === 1 ? '' : 's'}`;
  const worst = `worst of ${rounds.length} run${rounds.length === 1 ? '' : 's'}`;
  const figures = {
    rows: median(e2e.map((run) => run.rows)),
    endToEndRowsPerSecond: round(median(e2e.map((run) => run.rowsPerSecond))),
    endToEndWallMs: round(median(e2e.map((run) => run.wallMs))),
    telesyncInternalRowsPerSecond: round(
      median(e2e.map((run) => (run.rows / run.telesyncDurationMs) * 1000)),
    ),
    requests: median(e2e.map((run) => run.requests)),
    simulatorCountedRequests: median(e2e.map((run) => run.simulatorRequests)),
    peakRssBytes: median(peaks),
    peakRssBytesWorst: maxOf(peaks),
    rssGrowthWorst: worstGrowth,
    fetchLimitRowsPerSecond: round(median(rounds.map((r) => r.fetchLimit.rowsPerSecond))),
    copyLimitRowsPerSecond: round(median(rounds.map((r) => r.copyLimit.rowsPerSecond))),
    ratioToSlowerLimit: round(median(rounds.map((r) => r.ratio)), 3),
    slowerLimitByRound: rounds.map((r) => r.slowerLimit),
    cpuDuringEndToEnd: medianCpu(e2e.map((run) => run.cpu)),
    cpuPerRow: medianCpuPerRow(e2e.map((run) => cpuPerRow(run.rows, run.cpu))),
    profile,
  };

  // A quick backfill is over in seconds, start-up much of its wall time, while the limits time
  // only their work.
  const vsLimitsJudged = judgedOnFullRunsOnly(
    settings.mode,
    [
      checkTarget({
        id: 'backfill-vs-limits',
        description: 'end-to-end rows/s vs the slower of the fetch and COPY limits',
        measured: figures.ratioToSlowerLimit,
        unit: 'ratio',
        comparator: '>=',
        threshold: 0.7,
        basis: `${basis} (ratio within each run)`,
      }),
    ],
    `a backfill of ${formatInteger(figures.rows)} rows spends much of its wall time starting up, which the limits do not time`,
  );
  notes.push(...vsLimitsJudged.notes);
  const targets = [
    ...vsLimitsJudged.targets,
    checkTarget({
      id: 'backfill-peak-rss',
      description: 'peak RSS of the telesync process',
      measured: peaks.length > 0 ? round(maxOf(peaks) / MB, 1) : null,
      unit: 'MB',
      comparator: '<=',
      threshold: 300,
      basis: worst,
    }),
  ];
  // A quick run's backfill is over in seconds, its second quarter still inside the heap's growth
  // to its working size: flatness is judged on full runs only, and a quick one reports what it saw.
  if (settings.mode === 'full') {
    targets.push(
      checkTarget({
        id: 'backfill-rss-flat',
        description: 'memory flat over the backfill (last-quarter RSS peak ÷ second-quarter peak)',
        measured: worstGrowth,
        unit: 'ratio',
        comparator: '<=',
        threshold: 1.1,
        basis: worst,
      }),
    );
  } else {
    notes.push(
      `Memory flatness is judged on full runs only: this quick backfill of ${formatInteger(figures.rows)} rows ends before telesync's heap settles${worstGrowth === null ? '' : ` (its last quarter's RSS peak ${worstGrowth}× its second quarter's)`}.`,
    );
  }

  notes.push(
    'End to end is the wall time of the `telesync backfill --days 90` process, start-up included; the limits time only their work (first request to last answer; first batch to last commit).',
    `The fetch limit uses telesync's HttpTransport and TelephonyClient with the same settings (concurrency ${settings.concurrency}, ${settings.concurrency * 2} pages queued at once, TELESYNC_MAX_RPS ${settings.unthrottledMaxRps}) and the same 1-day windows, but keeps every window's pages flowing at once; records are parsed by the client and then discarded.`,
    `The COPY limit loads rows made by telesync's own parser and normaliser from the same simulated data (generated in-process, untimed) with telesync's upsertDataRows (staging table and upsert) in batches of ${settings.batchSize} (TELESYNC_BATCH_SIZE default), one transaction each, into a freshly migrated trunk_calls (same indexes), emptied and CHECKPOINTed before each load. It loads them over ${copyLaneCounts().join(', ')} connection(s) ("lanes", each taking the next batch when its transaction commits), and the best is the limit: one connection is one PostgreSQL backend, one core at most.`,
    'CPU per row: CPU seconds of each party during the backfill ÷ rows stored. "postgres (own backends)" counts the backends of telesync\'s own connections (its client ports mapped to backend pids through pg_stat_activity, sampled through the run); "postgres (all)" every postgres process on the machine, other users of the server included. Rows per machine CPU-second: rows ÷ the busy time of every core during the run, whoever used it.',
    'Memory is the resident set of the telesync process and its children, sampled every 50 ms, and the kernel\'s VmHWM of the process; "flat" compares the peak of the run\'s last quarter with that of its second quarter.',
  );
  const shared = sharedMachineNote(
    'telesync backfills',
    e2e.map((run) => run.cpu),
  );
  if (shared !== undefined) notes.push(shared);
  const mismatched = e2e.filter((run) => run.requests !== run.simulatorRequests);
  if (mismatched.length > 0) {
    notes.push(
      `telesync's own request count differed from what the simulator counted in ${mismatched.length} run(s) (e.g. ${mismatched[0]!.requests} vs ${mismatched[0]!.simulatorRequests}).`,
    );
  }

  return {
    name: 'backfill-throughput',
    title: `1. Backfill throughput — 90 days, ${formatInteger(settings.calls)} calls, unthrottled`,
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      calls: settings.calls,
      runs: settings.runs,
      days: BACKFILL_DAYS,
      concurrency: settings.concurrency,
      pageConcurrency: settings.concurrency * 2,
      maxRps: settings.unthrottledMaxRps,
      batchSize: settings.batchSize,
      warmup: settings.warmup,
    },
    figures,
    runs: rounds,
    targets,
    tables: [
      {
        title: 'Runs (each row is one round: telesync and both limits, in the order shown)',
        table: roundsTable(rounds),
      },
      {
        title: 'COPY limit by number of connections (the best is the limit)',
        table: copyLoadsTable(rounds),
      },
      {
        title:
          "Where the CPU went during each telesync backfill (CPU seconds; capacity = cores × wall; own backends: those serving telesync's connections)",
        table: cpuTable(rounds),
      },
      {
        title: `CPU per stored row of each telesync backfill (end to end ${formatInteger(figures.endToEndRowsPerSecond)} rows/s, ${formatPercent(figures.ratioToSlowerLimit)} of the slower limit, ${formatInteger(figures.cpuPerRow.rowsPerMachineCpuSecond)} rows per machine CPU-second)`,
        table: cpuPerRowTable(rounds),
      },
      ...(profile !== null ? profileTables(profile) : []),
    ],
    notes,
  };
}

import { startBenchSimulator, type BenchContext } from './support/bench-context.js';
import { RowsLostError } from './support/bench-errors.js';
import { formatInteger, formatPercent, type BenchmarkReport } from './support/report.js';
import { SimulatorOracle } from './support/simulator-oracle.js';
import { rotate } from './support/stats.js';
import { runTelesync, type TelesyncSettings } from './support/telesync-command.js';
import { runCommitComparison } from './backfill/compare-commits.js';
import { measureCopyLimit } from './backfill/measure-copy-limit.js';
import { measureEndToEnd } from './backfill/measure-end-to-end.js';
import { measureFetchLimit } from './backfill/measure-fetch-limit.js';
import { profileBackfill } from './backfill/profile-backfill.js';
import { buildThroughputReport } from './backfill/throughput-report.js';
import type {
  BackfillProfile,
  CopyLimitRun,
  EndToEndRun,
  FetchLimitRun,
  Step,
  ThroughputRound,
} from './backfill/throughput-round.js';

/**
 * Benchmark 1, backfill throughput: `telesync backfill --days 90` of the whole dataset, unthrottled,
 * end to end (rows stored ÷ wall time of the command), beside the two limits measured in the same
 * round — (a) fetching every page with telesync's client and discarding it, (b) loading the same
 * rows with COPY, no HTTP. Target: end to end ≥ 70% of the slower limit; peak RSS under 300 MB and
 * not growing with the backfill.
 *
 * With --against <ref>, only the backfill runs, alternately with that commit's telesync and this
 * one (bench/backfill/compare-commits.ts), and the report compares their CPU per stored row.
 *
 * This file runs the rounds; bench/backfill/ holds each measurement (measure-*.ts), the profiled
 * backfill, and the report built from the rounds (throughput-report.ts, throughput-tables.ts).
 */

/** Runs the warm-up, the rounds and the optional profile, and reports them. */
export async function runBackfillThroughput(context: BenchContext): Promise<BenchmarkReport> {
  if (context.settings.against !== undefined) return runCommitComparison(context);
  const startedAt = new Date().toISOString();
  const { settings, db } = context;
  const notes: string[] = [];
  const simulator = await startBenchSimulator(context);
  const rounds: ThroughputRound[] = [];
  let profile: BackfillProfile | null = null;
  try {
    const dataset = await simulator.dataset();
    const oracle = new SimulatorOracle({ dataset, account: context.account });
    await oracle.verifyAgainst(simulator);
    context.log(
      `simulator at ${simulator.url}: ${formatInteger(dataset.accounts[0]?.callsLast90Days)} calls in the last 90 days`,
    );
    const telesync = (schema: string): TelesyncSettings => ({
      databaseUrl: settings.databaseUrl,
      schema,
      simulator,
      maxRps: settings.unthrottledMaxRps,
      concurrency: settings.concurrency,
    });

    if (settings.warmup) {
      const schema = await db.createSchema('warmup');
      context.log('warm-up: telesync backfill --days 2 (untimed)');
      await runTelesync(['backfill', '--days', '2'], telesync(schema), {
        label: 'warm-up backfill',
        timeoutMs: 10 * 60_000,
        track: (pid) => context.track(pid),
      });
      await db.dropSchema(schema);
    }

    for (let index = 0; index < settings.runs; index++) {
      const order = rotate<Step>(['telesync', 'fetch', 'copy'], index);
      const done: Partial<Record<Step, EndToEndRun | FetchLimitRun | CopyLimitRun>> = {};
      for (const step of order) {
        context.log(`round ${index + 1}/${settings.runs}: ${step}`);
        if (step === 'telesync')
          done.telesync = await measureEndToEnd(context, simulator, oracle, telesync);
        if (step === 'fetch') done.fetch = await measureFetchLimit(context, simulator, oracle);
        if (step === 'copy') done.copy = await measureCopyLimit(context, oracle, index);
      }
      const endToEnd = done.telesync as EndToEndRun;
      const fetchLimit = done.fetch as FetchLimitRun;
      const copyLimit = done.copy as CopyLimitRun;
      const slowerLimit = fetchLimit.rowsPerSecond <= copyLimit.rowsPerSecond ? 'fetch' : 'copy';
      const slower = Math.min(fetchLimit.rowsPerSecond, copyLimit.rowsPerSecond);
      const ratio = endToEnd.rowsPerSecond / slower;
      rounds.push({ round: index + 1, order, endToEnd, fetchLimit, copyLimit, slowerLimit, ratio });
      context.log(
        `round ${index + 1}: telesync ${formatInteger(endToEnd.rowsPerSecond)} rows/s, fetch limit ${formatInteger(fetchLimit.rowsPerSecond)}, ` +
          `COPY limit ${formatInteger(copyLimit.rowsPerSecond)} → ${formatPercent(ratio)} of the slower`,
      );
    }
  } finally {
    await simulator.stop();
  }

  if (settings.profile) {
    try {
      profile = await profileBackfill(context);
    } catch (error) {
      if (error instanceof RowsLostError) throw error;
      notes.push(`the CPU profile could not be taken: ${String(error)}`);
    }
  }

  return buildThroughputReport({ settings, startedAt, rounds, profile, notes });
}

import { loadavg } from 'node:os';
import { startBenchSimulator, type BenchContext } from '../support/bench-context.js';
import { HarnessError } from '../support/bench-errors.js';
import { cpuPerRow } from '../support/cpu-per-row.js';
import { checkOutRef } from '../support/ref-checkout.js';
import { formatDecimal, formatInteger, type BenchmarkReport } from '../support/report.js';
import { SimulatorOracle } from '../support/simulator-oracle.js';
import { originalRepoRoot } from '../support/source-snapshot.js';
import { round } from '../support/stats.js';
import { runTelesync, type TelesyncSettings } from '../support/telesync-command.js';
import { buildComparisonReport, type ComparisonRun, type Side } from './commit-comparison.js';
import { createRunSchema, measureEndToEnd } from './measure-end-to-end.js';

/**
 * `--against <ref>`: benchmark 1's backfill with the ref's telesync and the current one, one after
 * the other (ref first in each pair), against one simulator and a fresh schema each time.
 */
export async function runCommitComparison(context: BenchContext): Promise<BenchmarkReport> {
  const { settings } = context;
  const refName = settings.against;
  if (refName === undefined) throw new HarnessError('no --against ref given');
  const startedAt = new Date().toISOString();
  context.log(`checking out and building ${refName}`);
  const checkout = checkOutRef(originalRepoRoot(), refName);
  context.log(
    `${refName} is ${checkout.commit.slice(0, 12)} ("${checkout.subject}"), built in ${checkout.root}`,
  );
  const runs: ComparisonRun[] = [];
  try {
    const simulator = await startBenchSimulator(context);
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
        for (const side of ['ref', 'current'] as Side[]) {
          context.log(`warm-up (${side === 'ref' ? refName : 'current'}): backfill --days 2`);
          const code = side === 'ref' ? { root: checkout.root } : undefined;
          const schema = await createRunSchema(context, telesync, code, 'warmup');
          try {
            await runTelesync(['backfill', '--days', '2'], telesync(schema), {
              label: 'warm-up backfill',
              timeoutMs: 10 * 60_000,
              track: (pid) => context.track(pid),
              ...(code === undefined ? {} : { root: code.root }),
            });
          } finally {
            await context.db.dropSchema(schema);
          }
        }
      }
      for (let run = 1; run <= settings.runs; run++) {
        for (const side of ['ref', 'current'] as Side[]) {
          const label = side === 'ref' ? refName : 'current';
          const loadAverageAtStart = loadavg().map((value) => round(value, 2));
          context.log(
            `run ${run}/${settings.runs}: ${label} (load ${loadAverageAtStart.join(' ')})`,
          );
          const endToEnd = await measureEndToEnd(
            context,
            simulator,
            oracle,
            telesync,
            side === 'ref' ? { root: checkout.root } : undefined,
          );
          const perRow = cpuPerRow(endToEnd.rows, endToEnd.cpu);
          context.log(
            `run ${run}: ${label} ${formatInteger(endToEnd.rows)} rows, ${formatInteger(endToEnd.rowsPerSecond)} rows/s, ` +
              `telesync ${formatDecimal(perRow.telesyncUs, 1)} µs/row, postgres (own) ${formatDecimal(perRow.ownPostgresUs, 1)} µs/row`,
          );
          runs.push({ run, side, loadAverageAtStart, endToEnd });
        }
      }
    } finally {
      await simulator.stop();
    }
  } finally {
    checkout.remove();
  }
  return buildComparisonReport({
    settings,
    startedAt,
    ref: { name: refName, commit: checkout.commit, subject: checkout.subject },
    runs,
    notes: [],
  });
}

import type { BenchContext } from '../support/bench-context.js';
import { HarnessError } from '../support/bench-errors.js';
import {
  peakRssBytes,
  requireSuccess,
  rssByQuarter,
  runMonitored,
} from '../support/process-monitor.js';
import { baseChildEnv, createScratchDir, telesyncInvocation } from '../support/paths.js';
import { RunBackendsCpu, serverPortOf } from '../support/run-backends.js';
import type { SimulatorOracle } from '../support/simulator-oracle.js';
import type { SimulatorProcess } from '../support/simulator-process.js';
import { round } from '../support/stats.js';
import {
  numberField,
  runTelesync,
  stringField,
  telesyncEnv,
  type TelesyncSettings,
} from '../support/telesync-command.js';
import { verifyStoredRows } from '../support/verify-rows.js';
import { BACKFILL_DAYS, type EndToEndRun } from './throughput-round.js';

/** A checkout of another commit whose own command runs the backfill (a comparison's base). */
export interface OtherCheckout {
  readonly root: string;
}

/**
 * `telesync backfill --days 90` into a fresh schema, timed from process start to exit, every row
 * checked against the oracle; the schema is dropped after. With `checkout`, that checkout's command
 * migrates the empty schema and runs the backfill.
 */
export async function measureEndToEnd(
  context: BenchContext,
  simulator: SimulatorProcess,
  oracle: SimulatorOracle,
  telesync: (schema: string) => TelesyncSettings,
  checkout?: OtherCheckout,
): Promise<EndToEndRun> {
  const { db } = context;
  const schema = await createRunSchema(context, telesync, checkout, 'e2e');
  const port = serverPortOf(context.settings.databaseUrl);
  const backends =
    port === undefined
      ? undefined
      : new RunBackendsCpu((ports) => db.backendsOfClientPorts(ports), port);
  try {
    await db.checkpoint();
    const before = await simulator.stats();
    let lastProgress = 0;
    const run = await runTelesync(['backfill', '--days', String(BACKFILL_DAYS)], telesync(schema), {
      label: 'telesync backfill',
      timeoutMs: 2 * 60 * 60_000,
      track: (pid) => context.track(pid),
      ...(checkout === undefined ? {} : { root: checkout.root }),
      ...(backends === undefined ? {} : { backends }),
      onProgress: (line) => {
        if (performance.now() - lastProgress > 15_000 && line.startsWith('backfill')) {
          lastProgress = performance.now();
          context.log(`  ${line}`);
        }
      },
    });
    const after = await simulator.stats();
    const coveredFrom = stringField(run.json, 'covered_from');
    const coveredTo = stringField(run.json, 'covered_to');
    if (numberField(run.json, 'records_rejected') !== 0) {
      throw new HarnessError(
        `telesync rejected ${String(run.json.records_rejected)} records of a clean dataset`,
      );
    }
    const rows = await verifyStoredRows('telesync backfill', db, schema, oracle, {
      from: coveredFrom,
      to: coveredTo,
    });
    const quarters = rssByQuarter(run);
    const q2 = quarters[1];
    const q4 = quarters[3];
    return {
      rows,
      wallMs: round(run.wallMs),
      rowsPerSecond: round((rows / run.wallMs) * 1000),
      telesyncDurationMs: numberField(run.json, 'duration_ms'),
      requests: numberField(run.json, 'requests'),
      simulatorRequests: after.requests.total - before.requests.total,
      retries: numberField(run.json, 'retries'),
      windows: numberField(run.json, 'windows_planned'),
      peakRssBytes: peakRssBytes(run),
      rssQuarterPeaksBytes: quarters,
      rssGrowth:
        q2 !== null && q2 !== undefined && q4 !== null && q4 !== undefined
          ? round(q4 / q2, 3)
          : null,
      cpu: run.cpu,
      coveredFrom,
      coveredTo,
    };
  } finally {
    await db.dropSchema(schema);
  }
}

/**
 * A fresh schema for a run: migrated by this code in-process, or, for another checkout, an empty
 * one migrated by that checkout's own `telesync migrate` (its migrations may differ).
 */
export async function createRunSchema(
  context: BenchContext,
  telesync: (schema: string) => TelesyncSettings,
  checkout: OtherCheckout | undefined,
  label: string,
): Promise<string> {
  if (checkout === undefined) return context.db.createSchema(label);
  const schema = await context.db.createEmptySchema(label);
  const scratch = createScratchDir('migrate');
  try {
    const invocation = telesyncInvocation(['migrate'], [], checkout.root);
    const run = await runMonitored({
      label: `telesync migrate of ${checkout.root}`,
      command: invocation.command,
      args: invocation.args,
      env: { ...baseChildEnv(), ...telesyncEnv(telesync(schema)) },
      cwd: scratch.path,
      timeoutMs: 5 * 60_000,
      track: (pid) => context.track(pid),
    });
    requireSuccess(run);
    return schema;
  } finally {
    scratch.remove();
  }
}

import { availableParallelism } from 'node:os';
import type { CopyLimitInput, CopyLimitResult } from '../workers/copy-limit-worker.js';
import type { BenchContext } from '../support/bench-context.js';
import { HarnessError, RowsLostError } from '../support/bench-errors.js';
import type { SimulatorOracle } from '../support/simulator-oracle.js';
import { rotate, round } from '../support/stats.js';
import { verifyStoredRows } from '../support/verify-rows.js';
import { runWorkerProcess } from '../support/worker-protocol.js';
import { BACKFILL_DAYS, type CopyLimitRun, type CopyLoad } from './throughput-round.js';

/**
 * The COPY limit: the backfill's rows, made in a worker process without HTTP, loaded with COPY
 * over each count of connections in turn (`laneCounts`, by default copyLaneCounts(), rotated by
 * round); the best load is the limit.
 */
export async function measureCopyLimit(
  context: BenchContext,
  oracle: SimulatorOracle,
  index: number,
  laneCounts: readonly number[] = copyLaneCounts(),
): Promise<CopyLimitRun> {
  const { db, settings } = context;
  const schema = await db.createSchema('copy');
  try {
    const input: CopyLimitInput = {
      oracle: oracle.spec,
      databaseUrl: settings.databaseUrl,
      schema,
      days: BACKFILL_DAYS,
      batchSize: settings.batchSize,
      laneCounts: rotate(laneCounts, index),
    };
    const { result } = await runWorkerProcess<CopyLimitResult>('copy-limit-worker', input, {
      label: 'COPY limit',
      timeoutMs: 2 * 60 * 60_000,
      // A million normalised rows in memory at once.
      nodeArgs: ['--max-old-space-size=8192'],
      track: (pid) => context.track(pid),
      onProgress: (line) => context.log(`  ${line}`),
    });
    if (result.rejected !== 0) {
      throw new HarnessError(
        `the COPY limit's rows: ${result.rejected} rejected by the normaliser`,
      );
    }
    // The table holds the last load; every load's count was checked by the worker.
    const rows = await verifyStoredRows('COPY limit', db, schema, oracle, {
      from: result.coveredFrom,
      to: result.coveredTo,
    });
    if (rows !== result.rows) {
      throw new RowsLostError('COPY limit (rows handed to the loader)', result.rows, rows);
    }
    const loads: CopyLoad[] = result.loads
      .map((load) => ({
        lanes: load.lanes,
        loadMs: round(load.loadMs),
        rowsPerSecond: round((rows / load.loadMs) * 1000),
        gcMs: round(load.gcMs),
      }))
      .sort((a, b) => a.lanes - b.lanes);
    const best = loads.reduce((a, b) => (b.rowsPerSecond > a.rowsPerSecond ? b : a));
    return {
      rows,
      rowsPerSecond: best.rowsPerSecond,
      bestLanes: best.lanes,
      loads,
      prepareMs: round(result.prepareMs),
      batches: result.loads[0]?.batches ?? 0,
    };
  } finally {
    await db.dropSchema(schema);
  }
}

/** Connections the COPY limit loads with: one, one per core, two per core. */
export function copyLaneCounts(): number[] {
  const cores = availableParallelism();
  return [...new Set([1, cores, 2 * cores])];
}

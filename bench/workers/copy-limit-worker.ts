import { PerformanceObserver } from 'node:perf_hooks';
import { sql } from 'kysely';
import { CONFIG_DEFAULTS } from '../../src/config/load-config.js';
import { openDatabase } from '../../src/db/connect.js';
import { upsertDataRows, type LoadRow } from '../../src/db/data-loader.js';
import { TRUNK_CALLS } from '../../src/db/table-specs.js';
import { lastDays, planBackfill, plannerSettings } from '../../src/sync/window-planner.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../../src/util/micros.js';
import { generateTrunkCallRows } from '../support/generate-rows.js';
import { SimulatorOracle, type OracleSpec } from '../support/simulator-oracle.js';
import { readWorkerInput, runWorker, writeWorkerResult } from '../support/worker-protocol.js';

/**
 * The COPY limit: the rows a backfill of the last `days` days stores, normalised beforehand (by
 * telesync's own parser and normaliser, from the same simulated data, untimed), then loaded the
 * way telesync upserts them — telesync's upsertDataRows (COPY into a temporary staging table,
 * then one INSERT … SELECT … ON CONFLICT), `batchSize` rows per transaction — into the
 * freshly migrated trunk_calls of `schema`. No HTTP. It loads them once for each number of lanes
 * asked for (connections each running their transactions one after the other, taking the next
 * batch as they finish), emptying the table (TRUNCATE) and CHECKPOINTing before each: the best of
 * these is what the loading side allows, with one connection or with several as telesync may use.
 */

export interface CopyLimitInput {
  oracle: OracleSpec;
  databaseUrl: string;
  schema: string;
  days: number;
  batchSize: number;
  /** Lane counts to measure, in this order. */
  laneCounts: number[];
}

export interface CopyLimitLoad {
  lanes: number;
  batches: number;
  /** Timed: every batch, first start to last commit. */
  loadMs: number;
  /** Garbage-collection pauses inside the timed part. */
  gcMs: number;
}

export interface CopyLimitResult {
  coveredFrom: string;
  coveredTo: string;
  rows: number;
  rejected: number;
  /** Untimed: generating and normalising the rows. */
  prepareMs: number;
  loads: CopyLimitLoad[];
  heapUsedBytes: number;
}

runWorker(async () => {
  const input = readWorkerInput<CopyLimitInput>();
  const oracle = new SimulatorOracle(input.oracle);
  const now = epochMicrosFromMillis(Date.now());
  const plan = planBackfill(now, lastDays(now, input.days), plannerSettings(CONFIG_DEFAULTS));
  if (plan.covered === undefined) throw new Error('nothing to load');

  const prepareStarted = performance.now();
  const { rows, rejected } = generateTrunkCallRows(oracle, plan.windows);
  const batches: LoadRow[][] = [];
  for (let offset = 0; offset < rows.length; offset += input.batchSize) {
    batches.push(rows.slice(offset, offset + input.batchSize));
  }
  const prepareMs = performance.now() - prepareStarted;

  const database = await openDatabase(
    { url: input.databaseUrl, schema: input.schema, dataDir: '/nonexistent' },
    { maxConnections: Math.max(...input.laneCounts) + 1 },
  );
  const table = `"${input.schema}".trunk_calls`;
  const loads: CopyLimitLoad[] = [];
  try {
    for (const lanes of input.laneCounts) {
      await sql.raw(`TRUNCATE ${table}`).execute(database.root);
      await sql
        .raw('CHECKPOINT')
        .execute(database.root)
        .catch(() => undefined);
      // Open the lanes' connections before the clock starts.
      await Promise.all(
        Array.from({ length: lanes }, () =>
          database.db.transaction().execute((trx) => sql`SELECT pg_sleep(0.05)`.execute(trx)),
        ),
      );
      let gcMs = 0;
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) gcMs += entry.duration;
      });
      observer.observe({ entryTypes: ['gc'] });
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          const syncedAt = formatIsoMicros(epochMicrosFromMillis(Date.now()));
          await database.db
            .transaction()
            .execute((trx) => upsertDataRows(trx, database.schema, TRUNK_CALLS, batch, syncedAt));
        }
      };
      const started = performance.now();
      await Promise.all(Array.from({ length: lanes }, lane));
      const loadMs = performance.now() - started;
      for (const entry of observer.takeRecords()) gcMs += entry.duration;
      observer.disconnect();
      const counted = await sql<{
        n: string;
      }>`SELECT count(*) AS n FROM ${sql.table(`${input.schema}.trunk_calls`)}`.execute(
        database.root,
      );
      const stored = Number(counted.rows[0]?.n);
      if (stored !== rows.length) {
        throw new Error(
          `${lanes} lane(s): ${rows.length} rows loaded but the table holds ${stored}`,
        );
      }
      loads.push({ lanes, batches: batches.length, loadMs, gcMs });
      process.stderr.write(
        `COPY limit, ${lanes} lane(s): ${Math.round((rows.length / loadMs) * 1000)} rows/s\n`,
      );
    }
  } finally {
    await database.close();
  }

  const result: CopyLimitResult = {
    coveredFrom: formatIsoMicros(plan.covered.start),
    coveredTo: formatIsoMicros(plan.covered.end),
    rows: rows.length,
    rejected,
    prepareMs,
    loads,
    heapUsedBytes: process.memoryUsage().heapUsed,
  };
  writeWorkerResult(result);
});

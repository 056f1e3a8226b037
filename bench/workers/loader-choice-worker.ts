import pg from 'pg';
import { openDatabase } from '../../src/db/connect.js';
import { upsertDataRows, type LoadRow } from '../../src/db/data-loader.js';
import { TRUNK_CALLS } from '../../src/db/table-specs.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../../src/util/micros.js';
import { rotate } from '../support/stats.js';
import { generateTrunkCallRows } from '../support/generate-rows.js';
import { DAY_MICROS, SimulatorOracle, type OracleSpec } from '../support/simulator-oracle.js';
import { readWorkerInput, runWorker, writeWorkerResult } from '../support/worker-protocol.js';

/**
 * The loader choice: telesync's upsertDataRows in the two ways the product loads — 'direct' (a
 * COPY straight into the table in a savepoint, upserted after a unique violation) and 'staging'
 * (COPY into a staging table, then INSERT … SELECT … ON CONFLICT) — at several batch sizes, into
 * the real trunk_calls table (emptied before each load), each batch its own transaction as the
 * sync engine does. Each load is timed twice: into the empty table (new rows), then again with the
 * same rows (every row present and unchanged: what re-reading a window costs; 'direct' then tries
 * each batch directly before its upsert, which the product's lanes stop doing after a conflict).
 * Configurations rotate from run to run.
 */

/** How a batch is loaded: the two ways of the product (UpsertOptions.direct or not). */
export type LoadWay = 'direct' | 'staging';

export interface LoaderChoiceInput {
  oracle: OracleSpec;
  databaseUrl: string;
  schema: string;
  rows: number;
  batchSizes: number[];
  ways: LoadWay[];
  runs: number;
}

export interface LoaderMeasurement {
  run: number;
  way: LoadWay;
  batchSize: number;
  rows: number;
  /** Loading into the empty table. */
  freshMs: number;
  freshWritten: number;
  /** Loading the same rows again (all present, none changed). */
  unchangedMs: number;
  unchangedWritten: number;
}

export interface LoaderChoiceResult {
  rows: number;
  prepareMs: number;
  measurements: LoaderMeasurement[];
}

runWorker(async () => {
  const input = readWorkerInput<LoaderChoiceInput>();
  const oracle = new SimulatorOracle(input.oracle);
  const anchor = oracle.anchorMicros;
  // Recent whole days, newest first, until there are enough rows.
  const windows = Array.from({ length: 89 }, (_, k) => ({
    start: anchor - (k + 1) * DAY_MICROS,
    end: anchor - k * DAY_MICROS,
  }));
  const prepareStarted = performance.now();
  const { rows } = generateTrunkCallRows(oracle, windows, input.rows);
  const prepareMs = performance.now() - prepareStarted;
  if (rows.length < input.rows) {
    throw new Error(`the dataset holds only ${rows.length} rows; ${input.rows} were asked for`);
  }

  const admin = new pg.Client({ connectionString: input.databaseUrl });
  await admin.connect();
  const database = await openDatabase(
    { url: input.databaseUrl, schema: input.schema, dataDir: '/nonexistent' },
    { maxConnections: 2 },
  );
  const table = `"${input.schema}".trunk_calls`;
  const count = async (): Promise<number> =>
    Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n);

  const load = async (
    way: LoadWay,
    batchSize: number,
    subset: readonly LoadRow[] = rows,
  ): Promise<{ ms: number; written: number }> => {
    let written = 0;
    const started = performance.now();
    for (let offset = 0; offset < subset.length; offset += batchSize) {
      const batch: LoadRow[] = subset.slice(offset, offset + batchSize);
      const syncedAt = formatIsoMicros(epochMicrosFromMillis(Date.now()));
      const result = await database.db.transaction().execute((trx) =>
        upsertDataRows(trx, database.schema, TRUNK_CALLS, batch, syncedAt, {
          direct: way === 'direct',
        }),
      );
      written += result.written;
    }
    return { ms: performance.now() - started, written };
  };

  const configs = input.ways.flatMap((way) =>
    input.batchSizes.map((batchSize) => ({ way, batchSize })),
  );
  const measurements: LoaderMeasurement[] = [];
  try {
    // Warm the connections and both code paths (untimed).
    await load('staging', 500, rows.slice(0, 1000));
    await admin.query(`TRUNCATE ${table}`);
    await load('direct', 500, rows.slice(0, 1000));
    for (let run = 0; run < input.runs; run++) {
      for (const { way, batchSize } of rotate(configs, run)) {
        await admin.query(`TRUNCATE ${table}`);
        await admin.query('CHECKPOINT').catch(() => undefined);
        const fresh = await load(way, batchSize);
        const afterFresh = await count();
        const unchanged = await load(way, batchSize);
        const afterUnchanged = await count();
        if (afterFresh !== rows.length || afterUnchanged !== rows.length) {
          throw new Error(
            `${way}/${batchSize}: ${rows.length} rows loaded but the table holds ${afterFresh} then ${afterUnchanged}`,
          );
        }
        measurements.push({
          run: run + 1,
          way,
          batchSize,
          rows: rows.length,
          freshMs: fresh.ms,
          freshWritten: fresh.written,
          unchangedMs: unchanged.ms,
          unchangedWritten: unchanged.written,
        });
        process.stderr.write(
          `loader ${way}/${batchSize} run ${run + 1}: ${Math.round((rows.length / fresh.ms) * 1000)} rows/s new, ` +
            `${Math.round((rows.length / unchanged.ms) * 1000)} rows/s unchanged\n`,
        );
      }
    }
  } finally {
    await database.close();
    await admin.end();
  }
  const result: LoaderChoiceResult = { rows: rows.length, prepareMs, measurements };
  writeWorkerResult(result);
});

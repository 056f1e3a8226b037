/**
 * PostgreSQL's and telesync's CPU per row of loading trunk calls, by the staging table and upsert
 * and by a direct COPY (UpsertOptions.direct), alternately on one connection, in batches of 2,000.
 * The server's CPU is that connection's backend only (/proc), so other work on the server does not
 * count. `npx tsx bench/loader-cpu.ts [rows] [rounds]` with DATABASE_URL.
 */
import { sql } from 'kysely';
import { openDatabase } from '../src/db/connect.js';
import { upsertDataRows, type LoadRow } from '../src/db/data-loader.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { TRUNK_CALLS } from '../src/db/table-specs.js';
import { trunkCallRow } from '../test/support/load-rows.js';
import { readProcessCpuTicks, ticksToSeconds } from './support/proc-stats.js';

const rows = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 3);
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = 'bench_loader_cpu';

/** A call as the service sends it: raw holds every wire field (about 900 bytes). */
function call(index: number): LoadRow {
  const uuid = `${index.toString(16).padStart(8, '0')}-5b1e-4c2a-9d3f-${index.toString().padStart(12, '0')}`;
  const base = trunkCallRow(uuid);
  const wire: Record<string, unknown> = {};
  for (const column of TRUNK_CALLS.columns) {
    if (column !== 'raw' && column !== 'account_id') wire[column] = base[column];
  }
  return trunkCallRow(uuid, { ...wire, total_amount: `0.0${index % 1000}5` });
}

const all = Array.from({ length: rows }, (_, index) => call(index));
const database = await openDatabase(
  { url, schema, dataDir: '/nonexistent' },
  { maxConnections: 1 },
);
try {
  await sql.raw(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).execute(database.root);
  await migrateToLatest(database);
  const pid = Number(
    (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(database.root)).rows[0]!
      .pid,
  );
  const load = async (direct: boolean) => {
    const server = readProcessCpuTicks(pid) ?? Number.NaN;
    const client = process.cpuUsage();
    for (let offset = 0; offset < all.length; offset += 2000) {
      const batch = all.slice(offset, offset + 2000);
      const at = new Date().toISOString();
      await database.db
        .transaction()
        .execute((trx) => upsertDataRows(trx, database.schema, TRUNK_CALLS, batch, at, { direct }));
    }
    const used = process.cpuUsage(client);
    const serverSeconds = ticksToSeconds((readProcessCpuTicks(pid) ?? Number.NaN) - server);
    return {
      postgresUsPerRow: Math.round((serverSeconds / rows) * 1e7) / 10,
      telesyncUsPerRow: Math.round(((used.user + used.system) / rows) * 10) / 10,
    };
  };
  const results = [];
  for (let round = 0; round < rounds; round++) {
    for (const direct of [false, true]) {
      await sql.raw(`TRUNCATE ${schema}.trunk_calls`).execute(database.root);
      const first = await load(direct);
      // The same rows again: a re-read, which the direct way hands to the upsert.
      const again = await load(direct);
      const result = { round, way: direct ? 'direct' : 'upsert', first, again };
      results.push(result);
      process.stdout.write(`${JSON.stringify(result)}\n`);
    }
  }
} finally {
  await sql.raw(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).execute(database.root);
  await database.close();
}

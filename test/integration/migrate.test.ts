import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { listMigrationStatus, migrateToLatest } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../migrations/index.js';
import { bothDatabases, createTestDatabase } from '../support/test-database.js';

describe.each(bothDatabases())('migrations on $description', (target) => {
  it('apply from empty, and a second run applies nothing', async () => {
    const handle = await createTestDatabase({ migrate: false, target });
    try {
      const before = await listMigrationStatus(handle.database);
      expect(before.every((status) => status.executedAt === undefined)).toBe(true);

      const applied = await migrateToLatest(handle.database);
      expect(applied).toEqual(MIGRATIONS.map((migration) => migration.name));

      expect(await migrateToLatest(handle.database)).toEqual([]);
      const after = await listMigrationStatus(handle.database);
      expect(after.map((status) => status.name)).toEqual(applied);
      expect(after.every((status) => status.executedAt !== undefined)).toBe(true);

      const tables = await sql<{ table_name: string }>`
        SELECT table_name FROM information_schema.tables
         WHERE table_schema = ${handle.database.schema} ORDER BY table_name
      `.execute(handle.database.root);
      expect(tables.rows.map((row) => row.table_name)).toEqual(
        expect.arrayContaining([
          'trunk_calls',
          'sip_endpoints',
          'verified_caller_ids',
          'messages',
          'powerpacks',
          'call_streams',
          'message_refs',
          'call_stream_refs',
          'sync_state',
          'sync_windows',
          'sync_runs',
          'rejected_records',
          'powerpack_number_priorities',
        ]),
      );
    } finally {
      await handle.close();
    }
  });

  it('converts stored trunk calls to a json raw, every field kept (0011)', async () => {
    const handle = await createTestDatabase({ migrate: false, target });
    try {
      const before = MIGRATIONS.findIndex(
        (migration) => migration.name === '0011-trunk-calls-raw-json',
      );
      await migrateToLatest(handle.database, MIGRATIONS.slice(0, before));
      const table = sql.table(`${handle.database.schema}.trunk_calls`);
      const raw = '{"call_uuid":"m1","api_id":"req-1","total_amount":"0.00850000000001","n":1.50}';
      await sql`INSERT INTO ${table} (account_id, call_uuid, end_time, raw)
                VALUES ('A', 'm1', '2026-11-20T10:01:05.000001Z', ${raw}::jsonb)`.execute(
        handle.database.root,
      );
      await migrateToLatest(handle.database);
      const row = await sql<{ type: string; amount: string; n: string; same: boolean }>`
        SELECT pg_typeof(raw)::text AS type, raw ->> 'total_amount' AS amount,
               (raw -> 'n')::text AS n, raw::jsonb = ${raw}::jsonb AS same
          FROM ${table}`.execute(handle.database.root);
      expect(row.rows).toEqual([
        { type: 'json', amount: '0.00850000000001', n: '1.50', same: true },
      ]);
    } finally {
      await handle.close();
    }
  });

  it('keeps two schemas in one database apart', async () => {
    const first = await createTestDatabase({ target });
    const second = await createTestDatabase({ target });
    try {
      await first.database.db
        .insertInto('sync_state')
        .values({ account_id: 'A', stream: 'trunk_calls' })
        .execute();
      const inSecond = await second.database.db.selectFrom('sync_state').selectAll().execute();
      expect(inSecond).toEqual([]);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

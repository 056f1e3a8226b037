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

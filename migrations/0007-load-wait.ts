import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * `sync_runs.load_wait_ms`: how long a run's reading waited for its rows to be written, the sign
 * that the database, not the service's budget, set the run's pace (docs/scaling.md).
 */
export const loadWait: SchemaMigration = {
  name: '0007-load-wait',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const table = sql.id(schema, 'sync_runs');
    await sql`ALTER TABLE ${table} ADD COLUMN load_wait_ms bigint NOT NULL DEFAULT 0`.execute(db);
    await sql`COMMENT ON COLUMN ${table}.load_wait_ms IS ${sql.lit(LOAD_WAIT_COMMENT)}`.execute(db);
  },
};

const LOAD_WAIT_COMMENT =
  'Time the run stopped reading while its rows waited to be written, in milliseconds: a large share of the run means the database set its pace.';

import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * `trunk_calls.raw` becomes `json`: the record's text as received, checked as JSON but not parsed
 * into `jsonb` on every write, which was the largest part of the server's CPU per stored call
 * (docs/performance.md). `->`, `->>` and the `json_*` functions read it as before; containment and
 * the other jsonb operators take `raw::jsonb` (docs/schema.md). Existing rows are converted in place
 * (the table is rewritten once, under its lock).
 */
export const trunkCallsRawJson: SchemaMigration = {
  name: '0011-trunk-calls-raw-json',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const column = sql.id(schema, 'trunk_calls', 'raw');
    await sql`ALTER TABLE ${sql.id(schema, 'trunk_calls')} ALTER COLUMN raw TYPE json USING raw::json`.execute(
      db,
    );
    await sql`COMMENT ON COLUMN ${column} IS ${sql.lit(RAW_COMMENT)}`.execute(db);
  },
};

const RAW_COMMENT =
  "The call record as the service sent it (json, its text as received): every field, including ones without a column; original time offsets are here. Read fields with raw ->> 'field'; for containment (@>) and other jsonb operators use raw::jsonb.";

import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * Columns that must hold null for what the real service sends (docs/assumptions.md A44, A46):
 *
 * - `powerpacks.number_priority`: the service's documented packs leave the field out. Null says
 *   "not sent", which `[]` ("no priorities") would misstate; the CHECK still requires an array
 *   when there is a value, and the priorities view simply has no rows for such a pack.
 * - `rejected_records.raw_bytes`: an oversize record is quarantined by its digest and size, not its
 *   bytes (a 300 MB record must not be written to the database twice over).
 */
export const nullableWireFields: SchemaMigration = {
  name: '0004-nullable-wire-fields',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    const statements = [
      sql`ALTER TABLE ${s}.powerpacks ALTER COLUMN number_priority DROP NOT NULL`,
      sql`ALTER TABLE ${s}.powerpacks ALTER COLUMN number_priority DROP DEFAULT`,
      sql`ALTER TABLE ${s}.rejected_records ALTER COLUMN raw_bytes DROP NOT NULL`,
      sql`COMMENT ON COLUMN ${s}.rejected_records.raw_bytes IS ${sql.lit(
        'The record as received, byte for byte; null for a record over the size limit, which is kept as its payload_sha256 and the size in reason.',
      )}`,
    ];
    for (const statement of statements) await statement.execute(db);
  },
};

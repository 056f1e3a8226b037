import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * The window ledger's column comments (0003) with the precision of docs/schema.md: when `running`
 * and `attempts` are set (with a read's first write, so a short window may go straight to
 * complete) and when `rows_stored` is counted (in the transaction that completes or verifies the
 * window). BI tools show these comments beside the columns.
 */
export const ledgerComments: SchemaMigration = {
  name: '0006-ledger-comments',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const table = sql.id(schema, 'sync_windows');
    const comments: Readonly<Record<string, string>> = {
      status:
        "planned (planned by a run or backfill, not read yet), running (being read: set with the read's first write, within about a second of its start, so a short window may go straight to complete; or left so by a crashed run), complete (read in full and added up) or failed (the last attempt failed: see last_error; the next run reads it again).",
      attempts: "Full reads started for this slot, counted with each read's first write (count).",
      rows_stored:
        'Rows of trunk_calls in the range, counted when the window last completed or was verified, in the same transaction. Below total_count by the records quarantined; above it if the service dropped calls telesync still holds.',
    };
    for (const [column, comment] of Object.entries(comments)) {
      await sql`COMMENT ON COLUMN ${table}.${sql.id(column)} IS ${sql.lit(comment)}`.execute(db);
    }
  },
};

import type { Kysely } from 'kysely';
import type { Tables } from '../schema.js';
import { DATA_TABLES } from '../table-specs.js';
import { LOOKUP_QUEUE_TABLES } from './lookup-queue-repository.js';

/** Tables that hold rows of an account, bookkeeping last (runs are referenced by the others). */
const ACCOUNT_TABLES = [
  ...DATA_TABLES.map((spec) => spec.table),
  ...LOOKUP_QUEUE_TABLES,
  'sync_state',
  'sync_windows',
  'rejected_records',
  'sync_runs',
] as const;

/**
 * Deletes every row of one account, in one transaction, and returns how many there were. Meant
 * for synthetic accounts (the demo's): real data is never deleted, only marked.
 */
export async function deleteAccountRows(db: Kysely<Tables>, accountId: string): Promise<number> {
  let removed = 0;
  await db.transaction().execute(async (trx) => {
    for (const table of ACCOUNT_TABLES) {
      const result = await trx
        .deleteFrom(table)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      removed += Number(result.numDeletedRows);
    }
  });
  return removed;
}

import type { Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/**
 * What telesync keeps about an account besides its data: where each stream stands, the window
 * ledger, the runs, and the lookup queues. Forgetting an account (a mistyped TELESYNC_AUTH_ID)
 * deletes these; ledger and queues first, runs last (sync_state and sync_windows point at runs).
 */
export const ACCOUNT_BOOKKEEPING_TABLES = [
  'sync_windows',
  'sync_state',
  'message_refs',
  'call_stream_refs',
  'powerpack_refs',
  'sync_runs',
] as const;

/** The account's rows of the service's data, and the records it refused (with their bytes). */
export const ACCOUNT_DATA_TABLES = [
  'trunk_calls',
  'sip_endpoints',
  'verified_caller_ids',
  'messages',
  'powerpacks',
  'call_streams',
  'stream_events',
  'rejected_records',
] as const;

export type AccountTable =
  (typeof ACCOUNT_BOOKKEEPING_TABLES)[number] | (typeof ACCOUNT_DATA_TABLES)[number];

/** Rows of `accountId` in each of `tables`, in their order. */
export async function countAccountRows(
  db: Kysely<Tables>,
  accountId: string,
  tables: readonly AccountTable[],
): Promise<{ table: AccountTable; rows: number }[]> {
  const counts = [];
  for (const table of tables) {
    const row = await db
      .selectFrom(table as 'sync_state')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    counts.push({ table, rows: Number(row.n) });
  }
  return counts;
}

/** Deletes the rows of `accountId` from each of `tables`, in their order; the rows deleted of each. */
export async function deleteAccountRows(
  trx: Kysely<Tables>,
  accountId: string,
  tables: readonly AccountTable[],
): Promise<{ table: AccountTable; rows: number }[]> {
  const deleted = [];
  for (const table of tables) {
    const result = await trx
      .deleteFrom(table as 'sync_state')
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    deleted.push({ table, rows: Number(result.numDeletedRows) });
  }
  return deleted;
}

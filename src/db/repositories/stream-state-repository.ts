import { sql, type Kysely } from 'kysely';
import type { LedgerKey } from '../../domain/ledger-entry.js';
import type { Tables } from '../schema.js';
import type { LookupQueue } from './lookup-queue-repository.js';

/**
 * The state of a stream as `telesync state` shows and resets it: the watermark and cursor
 * (sync_state), the window ledger (sync_windows) and the lookup queues. Resetting touches only
 * these; data rows are kept.
 */

/** The window ledger of one account's stream, summed up. */
export interface LedgerSummary {
  readonly complete: number;
  /** Windows a run began and did not finish (status running). */
  readonly incomplete: number;
  readonly failed: number;
  readonly planned: number;
  /** Start of the oldest window; null without windows. */
  readonly oldest: string | null;
  /** End of the newest window; null without windows. */
  readonly newest: string | null;
  /** When a window was last read in full; null if never. */
  readonly lastReadAt: string | null;
}

/** Sums up the ledger of `key` in one query. */
export async function findLedgerSummary(
  db: Kysely<Tables>,
  key: LedgerKey,
): Promise<LedgerSummary> {
  const row = await db
    .selectFrom('sync_windows')
    .select([
      sql<number>`count(*) FILTER (WHERE status = 'complete')`.as('complete'),
      sql<number>`count(*) FILTER (WHERE status = 'running')`.as('incomplete'),
      sql<number>`count(*) FILTER (WHERE status = 'failed')`.as('failed'),
      sql<number>`count(*) FILTER (WHERE status = 'planned')`.as('planned'),
      sql<string | null>`min(lower(time_range))`.as('oldest'),
      sql<string | null>`max(upper(time_range))`.as('newest'),
      sql<string | null>`max(read_at)`.as('last_read_at'),
    ])
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .executeTakeFirst();
  return {
    complete: row?.complete ?? 0,
    incomplete: row?.incomplete ?? 0,
    failed: row?.failed ?? 0,
    planned: row?.planned ?? 0,
    oldest: row?.oldest ?? null,
    newest: row?.newest ?? null,
    lastReadAt: row?.last_read_at ?? null,
  };
}

/**
 * Sets the stream's watermark back to `to` (never forward: a watermark already older stays), or
 * clears it when `to` is null. Returns the watermark it had.
 */
export async function resetWatermark(
  db: Kysely<Tables>,
  accountId: string,
  stream: string,
  to: string | null,
): Promise<string | null> {
  const before = await db
    .selectFrom('sync_state')
    .select('watermark')
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .forUpdate()
    .executeTakeFirst();
  await db
    .updateTable('sync_state')
    .set({
      watermark: to === null ? null : sql<string>`LEAST(watermark, ${to}::timestamptz)`,
      updated_at: sql<string>`now()`,
    })
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .execute();
  return before?.watermark ?? null;
}

/**
 * Marks the ledger windows that reach past `from` (all of them when null) as planned, with no
 * read or verification time, so the next run or backfill reads them again. Their last service
 * count is kept for reference. Returns how many windows were reopened.
 */
export async function reopenWindows(
  db: Kysely<Tables>,
  key: LedgerKey,
  from: string | null,
): Promise<number> {
  let query = db
    .updateTable('sync_windows')
    .set({
      status: 'planned',
      read_at: null,
      verified_at: null,
      last_error: null,
      updated_at: sql<string>`now()`,
    })
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream);
  if (from !== null) query = query.where(sql<boolean>`upper(time_range) > ${from}::timestamptz`);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Puts the entries of a lookup queue back to pending, with their attempts forgotten, so the next
 * run looks them up again: all of the account's entries, or those requested at or after `from`.
 * Returns how many were re-queued.
 */
export async function requeueLookups(
  db: Kysely<Tables>,
  queue: LookupQueue,
  accountId: string,
  from: string | null,
): Promise<number> {
  let query = db
    .updateTable(queue.table)
    .set({ status: 'pending', attempts: 0, next_attempt_at: null, last_error: null })
    .where('account_id', '=', accountId);
  if (from !== null) query = query.where('requested_at', '>=', from);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

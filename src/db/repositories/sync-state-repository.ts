import { sql, type Kysely } from 'kysely';
import {
  watermarkFromLedger,
  type IncrementalPass,
  type LedgerKey,
} from '../../domain/ledger-entry.js';
import { formatIsoMicros } from '../../util/micros.js';
import type { Tables } from '../schema.js';
import { findLedgerEntries } from './sync-windows-repository.js';

export interface SyncStateRow {
  /** ISO text; undefined before the first complete window. */
  watermark: string | undefined;
  cursor: Record<string, unknown>;
}

export async function findSyncState(
  db: Kysely<Tables>,
  accountId: string,
  stream: string,
): Promise<SyncStateRow> {
  const row = await db
    .selectFrom('sync_state')
    .select(['watermark', 'cursor'])
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .executeTakeFirst();
  return { watermark: row?.watermark ?? undefined, cursor: row?.cursor ?? {} };
}

/**
 * Moves the watermark to `watermark`, never backwards (a concurrent or older writer cannot undo a
 * later one's progress). Call it in the transaction that stores the data it covers.
 */
export async function advanceWatermark(
  trx: Kysely<Tables>,
  accountId: string,
  stream: string,
  watermark: string,
): Promise<void> {
  await trx
    .insertInto('sync_state')
    .values({ account_id: accountId, stream, watermark, updated_at: sql<string>`now()` })
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'stream']).doUpdateSet({
        watermark: sql<string>`GREATEST(sync_state.watermark, excluded.watermark)`,
        updated_at: sql<string>`now()`,
      }),
    )
    .execute();
}

/**
 * Moves the watermark to what the ledger justifies for `pass` (see watermarkFromLedger), never
 * backwards. Call it in the transaction that completes a window of the pass. The stream's
 * sync_state row is locked first, so transactions that complete windows of one stream at the same
 * time take turns, and the later one sees the window the earlier one completed: two windows that
 * complete together can never each leave the other out.
 */
export async function advanceWatermarkFromLedger(
  trx: Kysely<Tables>,
  key: LedgerKey,
  pass: IncrementalPass,
): Promise<void> {
  await lockSyncState(trx, key.accountId, key.stream);
  const ledger = await findLedgerEntries(trx, key, pass.fromSlot, pass.to);
  const watermark = watermarkFromLedger(ledger.values(), pass);
  if (watermark !== undefined)
    await advanceWatermark(trx, key.accountId, key.stream, formatIsoMicros(watermark));
}

/** Locks the stream's sync_state row until the end of the transaction, creating it if need be. */
async function lockSyncState(
  trx: Kysely<Tables>,
  accountId: string,
  stream: string,
): Promise<void> {
  await trx
    .insertInto('sync_state')
    .values({ account_id: accountId, stream })
    .onConflict((conflict) => conflict.columns(['account_id', 'stream']).doNothing())
    .execute();
  await trx
    .selectFrom('sync_state')
    .select('stream')
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .forUpdate()
    .execute();
}

/** Replaces the stream's cursor (stream-specific state such as a backfill in progress). */
export async function saveCursor(
  db: Kysely<Tables>,
  accountId: string,
  stream: string,
  cursor: Record<string, unknown>,
): Promise<void> {
  await db
    .insertInto('sync_state')
    .values({
      account_id: accountId,
      stream,
      cursor: JSON.stringify(cursor) as unknown as Record<string, unknown>,
    })
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'stream']).doUpdateSet({
        cursor: JSON.stringify(cursor) as unknown as Record<string, unknown>,
        updated_at: sql<string>`now()`,
      }),
    )
    .execute();
}

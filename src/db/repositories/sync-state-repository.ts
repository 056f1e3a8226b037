import { sql, type Kysely } from 'kysely';
import type { Tables } from '../schema.js';

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

import { sql, type Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/**
 * The powerpack_refs queue is filled from the data: the sender packs stored messages reference,
 * and the packs due for a refresh.
 */

/** Queues the packs that the account's stored messages reference and that are not queued yet. */
export async function queueReferencedPowerpacks(
  db: Kysely<Tables>,
  schema: string,
  accountId: string,
): Promise<void> {
  await sql`
    INSERT INTO ${sql.id(schema, 'powerpack_refs')} (account_id, powerpack_uuid, requested_by)
    SELECT DISTINCT account_id, powerpack_id, 'messages'
      FROM ${sql.id(schema, 'messages')}
     WHERE account_id = ${accountId} AND powerpack_id IS NOT NULL AND powerpack_id <> ''
    ON CONFLICT DO NOTHING
  `.execute(db);
}

/** Puts back in the queue the packs fetched before `staleBefore` (ISO text). */
export async function requeueStalePowerpacks(
  db: Kysely<Tables>,
  accountId: string,
  staleBefore: string,
): Promise<void> {
  await db
    .updateTable('powerpack_refs')
    .set({ status: 'pending', next_attempt_at: null })
    .where('account_id', '=', accountId)
    .where('status', '=', 'fetched')
    .where('fetched_at', '<', staleBefore)
    .execute();
}

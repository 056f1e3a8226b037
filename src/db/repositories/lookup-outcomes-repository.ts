import { sql, type Kysely } from 'kysely';
import type { LookupStatus, Tables } from '../schema.js';
import type { LookupQueue } from './lookup-queue-repository.js';

/** Where one queued lookup stands. */
export interface LookupEntryOutcome {
  /** The UUID looked up (message, call or sender pack). */
  readonly key: string;
  readonly status: LookupStatus;
  readonly lastError: string | null;
}

/**
 * Where the given entries of a lookup queue stand, ordered by key (what `telesync lookup` prints
 * after its runs). Keys not in the queue are left out.
 */
export async function findLookupOutcomes(
  db: Kysely<Tables>,
  schema: string,
  queue: LookupQueue,
  accountId: string,
  keys: readonly string[],
): Promise<LookupEntryOutcome[]> {
  const keyColumn = sql.ref(queue.key);
  const result = await sql<{ key: string; status: LookupStatus; last_error: string | null }>`
    SELECT ${keyColumn} AS key, status, last_error
      FROM ${sql.id(schema, queue.table)}
     WHERE account_id = ${accountId} AND ${keyColumn} = ANY(${[...keys]}::text[])
     ORDER BY 1
  `.execute(db);
  return result.rows.map((row) => ({
    key: row.key,
    status: row.status,
    lastError: row.last_error,
  }));
}

import { sql, type Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/**
 * The lookup queues: message_refs (messages to fetch by UUID), call_stream_refs (calls whose stream
 * records are wanted) and powerpack_refs (sender packs referenced by stored messages). Each entry
 * is pending until fetched, found missing (404) or given up on after too many failures.
 */
export type LookupQueueTable = 'message_refs' | 'call_stream_refs' | 'powerpack_refs';

/** A lookup queue: its table and the column of the key it queues (a lookup stream declares it). */
export interface LookupQueue {
  readonly table: LookupQueueTable;
  readonly key: 'message_uuid' | 'call_uuid' | 'powerpack_uuid';
}

export const MESSAGE_REFS: LookupQueue = { table: 'message_refs', key: 'message_uuid' };
export const CALL_STREAM_REFS: LookupQueue = { table: 'call_stream_refs', key: 'call_uuid' };
export const POWERPACK_REFS: LookupQueue = { table: 'powerpack_refs', key: 'powerpack_uuid' };

/** Every lookup queue's table, for what deletes an account's rows. */
export const LOOKUP_QUEUE_TABLES: readonly LookupQueueTable[] = [
  MESSAGE_REFS.table,
  CALL_STREAM_REFS.table,
  POWERPACK_REFS.table,
];

export interface DueLookup {
  key: string;
  attempts: number;
}

/**
 * Queues `keys` for lookup. An explicit request (`retry: true`, the command line) also puts back
 * an entry that ended not_found, failed or fetched, so asking again means trying again; an
 * automatic one (packs referenced by messages) leaves existing entries alone.
 */
export async function enqueueLookups(
  db: Kysely<Tables>,
  queue: LookupQueue,
  accountId: string,
  keys: readonly string[],
  requestedBy: string,
  options: { retry: boolean },
): Promise<number> {
  const unique = [...new Set(keys)];
  if (unique.length === 0) return 0;
  const keyColumn = queue.key;
  let total = 0;
  for (let offset = 0; offset < unique.length; offset += 5000) {
    const chunk = unique.slice(offset, offset + 5000);
    const values = chunk.map((key) => ({
      account_id: accountId,
      [keyColumn]: key,
      requested_by: requestedBy,
    }));
    const result = await db
      .insertInto(queue.table)
      .values(values)
      .onConflict((conflict) => {
        const target = conflict.columns(['account_id', keyColumn] as never);
        return options.retry
          ? target.doUpdateSet({
              status: 'pending',
              attempts: 0,
              next_attempt_at: null,
              last_error: null,
              requested_at: sql<string>`now()`,
              requested_by: sql<string>`excluded.requested_by`,
            } as never)
          : target.doNothing();
      })
      .executeTakeFirst();
    total += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return total;
}

/** Pending entries due now (never tried, or their backoff has passed), oldest request first. */
export async function findDueLookups(
  db: Kysely<Tables>,
  queue: LookupQueue,
  accountId: string,
  now: string,
  limit: number,
): Promise<DueLookup[]> {
  const keyColumn = queue.key;
  const rows = await db
    .selectFrom(queue.table)
    .select([sql<string>`${sql.ref(keyColumn)}`.as('key'), 'attempts'])
    .where('account_id', '=', accountId)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)]))
    .orderBy('requested_at')
    .orderBy(sql.ref(keyColumn))
    .limit(limit)
    .execute();
  return rows.map((row) => ({ key: row.key, attempts: row.attempts }));
}

export type LookupOutcome =
  | { status: 'fetched' }
  | { status: 'not_found'; error: string }
  /** A failure worth retrying at `nextAttemptAt`, or given up on when that is undefined. */
  | { status: 'retry'; error: string; nextAttemptAt: string | undefined }
  /** Fetched, but worth fetching again at `nextAttemptAt` (a stream still running); not a failure. */
  | { status: 'recheck'; nextAttemptAt: string };

/**
 * Records the outcomes of a round of lookup attempts, key → outcome, in one statement (in the
 * transaction that stored their data): a round is up to a few hundred entries, and one UPDATE per
 * entry would be as many round trips, each felt with a database far away.
 */
export async function recordLookupOutcomes(
  db: Kysely<Tables>,
  schema: string,
  queue: LookupQueue,
  accountId: string,
  outcomes: ReadonlyMap<string, LookupOutcome>,
  now: string,
): Promise<void> {
  if (outcomes.size === 0) return;
  const records = [...outcomes].map(([key, outcome]) => ({ key, ...queueChange(outcome) }));
  await sql`
    UPDATE ${sql.id(schema, queue.table)} AS q
       SET status = x.status,
           fetched_at = CASE WHEN x.marks_fetched THEN ${now}::timestamptz ELSE q.fetched_at END,
           last_error = x.last_error,
           next_attempt_at = x.next_attempt_at,
           attempts = q.attempts + CASE WHEN x.counts_attempt THEN 1 ELSE 0 END
      FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS x(
             key text, status text, marks_fetched boolean, last_error text,
             next_attempt_at timestamptz, counts_attempt boolean)
     WHERE q.account_id = ${accountId} AND ${sql.ref(`q.${queue.key}`)} = x.key`.execute(db);
}

/** What one outcome does to its queue entry (a record of the UPDATE's recordset). */
interface QueueChange {
  readonly status: 'pending' | 'fetched' | 'not_found' | 'failed';
  /** fetched_at becomes the round's time (else it stays). */
  readonly marks_fetched: boolean;
  readonly last_error: string | null;
  readonly next_attempt_at: string | null;
  /** The attempt counts towards TELESYNC_LOOKUP_MAX_ATTEMPTS (a recheck does not). */
  readonly counts_attempt: boolean;
}

function queueChange(outcome: LookupOutcome): QueueChange {
  switch (outcome.status) {
    case 'fetched':
      return {
        status: 'fetched',
        marks_fetched: true,
        last_error: null,
        next_attempt_at: null,
        counts_attempt: true,
      };
    case 'recheck':
      return {
        status: 'pending',
        marks_fetched: true,
        last_error: null,
        next_attempt_at: outcome.nextAttemptAt,
        counts_attempt: false,
      };
    case 'not_found':
      return {
        status: 'not_found',
        marks_fetched: false,
        last_error: outcome.error,
        next_attempt_at: null,
        counts_attempt: true,
      };
    case 'retry':
      return {
        status: outcome.nextAttemptAt === undefined ? 'failed' : 'pending',
        marks_fetched: false,
        last_error: outcome.error,
        next_attempt_at: outcome.nextAttemptAt ?? null,
        counts_attempt: true,
      };
  }
}

/** How many entries of each status a queue holds for an account. */
export async function countLookupsByStatus(
  db: Kysely<Tables>,
  queue: LookupQueue,
  accountId: string,
): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom(queue.table)
    .select(['status', sql<number>`count(*)`.as('n')])
    .where('account_id', '=', accountId)
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

import { sql, type Kysely } from 'kysely';
import { formatIsoMicros, toEpochMicros, type EpochMicros } from '../../util/micros.js';
import type { Tables, WindowStatus } from '../schema.js';

/**
 * The window ledger (sync_windows): one row per slot, keyed by the slot's start. The sync engine
 * reads it to decide what to read, probe or skip, and writes it as windows progress, so backfills
 * resume and finance can reconcile service totals with stored rows in SQL.
 */

export interface LedgerRow {
  id: number;
  status: WindowStatus;
  start: EpochMicros;
  coveredEnd: EpochMicros;
  totalCount: number | null;
  rowsStored: number | null;
  readAt: EpochMicros | null;
  attempts: number;
}

export interface LedgerKey {
  accountId: string;
  stream: string;
}

function rangeText(start: EpochMicros, end: EpochMicros): string {
  return `[${formatIsoMicros(start)},${formatIsoMicros(end)})`;
}

/** Ledger rows whose slot starts in [from, to), by slot start. */
export async function findLedgerRows(
  db: Kysely<Tables>,
  key: LedgerKey,
  from: EpochMicros,
  to: EpochMicros,
): Promise<Map<EpochMicros, LedgerRow>> {
  const rows = await db
    .selectFrom('sync_windows')
    .select([
      'id',
      'status',
      'total_count',
      'rows_stored',
      'read_at',
      'attempts',
      sql<string>`lower(time_range)`.as('start'),
      sql<string>`upper(time_range)`.as('end'),
    ])
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .where(sql<boolean>`lower(time_range) >= ${formatIsoMicros(from)}::timestamptz`)
    .where(sql<boolean>`lower(time_range) < ${formatIsoMicros(to)}::timestamptz`)
    .execute();
  const byStart = new Map<EpochMicros, LedgerRow>();
  for (const row of rows) {
    const start = toEpochMicros(row.start);
    byStart.set(start, {
      id: row.id,
      status: row.status,
      start,
      coveredEnd: toEpochMicros(row.end),
      totalCount: row.total_count,
      rowsStored: row.rows_stored,
      readAt: row.read_at === null ? null : toEpochMicros(row.read_at),
      attempts: row.attempts,
    });
  }
  return byStart;
}

/**
 * Marks the slot of `[start, end)` as being read by run `runId`: creates its row, or widens and
 * re-opens the existing one, counting the attempt.
 */
export async function markWindowRunning(
  db: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  window: { start: EpochMicros; end: EpochMicros },
  runId: number,
): Promise<void> {
  await sql`
    INSERT INTO ${sql.id(schema, 'sync_windows')} (account_id, stream, time_range, status, attempts, last_run_id, updated_at)
    VALUES (${key.accountId}, ${key.stream}, ${rangeText(window.start, window.end)}::tstzrange, 'running', 1, ${runId}, now())
    ON CONFLICT (account_id, stream, lower(time_range)) DO UPDATE SET
      status = 'running',
      attempts = sync_windows.attempts + 1,
      last_run_id = EXCLUDED.last_run_id,
      updated_at = now()
  `.execute(db);
}

export interface WindowCompletion {
  start: EpochMicros;
  /** The new upper bound of the slot's row. */
  end: EpochMicros;
  /** The service's count for [start, end). */
  totalCount: number;
  runId: number;
  /** Set when every page was read now (not just counted). */
  readAt?: string;
  /** Set when a count probe confirmed the row. */
  verifiedAt?: string;
}

/**
 * Marks a slot complete up to `end`, with the service's total and the rows stored in it (counted
 * here, in the caller's transaction, so the two can be reconciled).
 */
export async function completeWindow(
  trx: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  completion: WindowCompletion,
): Promise<void> {
  const start = formatIsoMicros(completion.start);
  const end = formatIsoMicros(completion.end);
  await sql`
    INSERT INTO ${sql.id(schema, 'sync_windows')}
      (account_id, stream, time_range, status, total_count, rows_stored, attempts, last_error, last_run_id, read_at, verified_at, updated_at)
    VALUES (
      ${key.accountId}, ${key.stream}, ${rangeText(completion.start, completion.end)}::tstzrange, 'complete', ${completion.totalCount},
      (SELECT count(*) FROM ${sql.id(schema, 'trunk_calls')}
        WHERE account_id = ${key.accountId} AND end_time >= ${start}::timestamptz AND end_time < ${end}::timestamptz),
      1, NULL, ${completion.runId}, ${completion.readAt ?? null}::timestamptz, ${completion.verifiedAt ?? null}::timestamptz, now()
    )
    ON CONFLICT (account_id, stream, lower(time_range)) DO UPDATE SET
      time_range = EXCLUDED.time_range,
      status = 'complete',
      total_count = EXCLUDED.total_count,
      rows_stored = EXCLUDED.rows_stored,
      last_error = NULL,
      last_run_id = EXCLUDED.last_run_id,
      read_at = COALESCE(EXCLUDED.read_at, sync_windows.read_at),
      verified_at = COALESCE(EXCLUDED.verified_at, sync_windows.verified_at),
      updated_at = now()
  `.execute(trx);
}

/** Marks a slot failed with the reason, keeping what it covered before. */
export async function failWindow(
  db: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  start: EpochMicros,
  error: string,
): Promise<void> {
  await sql`
    UPDATE ${sql.id(schema, 'sync_windows')}
       SET status = 'failed', last_error = ${error}, updated_at = now()
     WHERE account_id = ${key.accountId} AND stream = ${key.stream}
       AND lower(time_range) = ${formatIsoMicros(start)}::timestamptz
  `.execute(db);
}

import { sql, type Kysely } from 'kysely';
import type {
  LedgerEntry,
  LedgerKey,
  LedgerStatus,
  SlotWindow,
} from '../../domain/ledger-entry.js';
import { formatIsoMicros, toEpochMicros, type EpochMicros } from '../../util/micros.js';
import type { Tables } from '../schema.js';

/**
 * The window ledger (sync_windows): one row per slot of the UTC grid, keyed by the slot's start.
 * The sync engine reads it to decide what to read, probe or skip, and writes it as windows
 * progress, so backfills resume and finance can reconcile service totals with stored rows in SQL.
 */

function rangeText(start: EpochMicros, end: EpochMicros): string {
  return `[${formatIsoMicros(start)},${formatIsoMicros(end)})`;
}

/** Ledger entries of the slots starting in [fromSlot, to), by slot start. */
export async function findLedgerEntries(
  db: Kysely<Tables>,
  key: LedgerKey,
  fromSlot: EpochMicros,
  to: EpochMicros,
): Promise<Map<EpochMicros, LedgerEntry>> {
  const rows = await db
    .selectFrom('sync_windows')
    .select([
      'status',
      'slot_start',
      'total_count',
      'read_at',
      'verified_at',
      sql<string>`lower(time_range)`.as('start'),
      sql<string>`upper(time_range)`.as('end'),
    ])
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .where('slot_start', '>=', formatIsoMicros(fromSlot))
    .where('slot_start', '<', formatIsoMicros(to))
    .execute();
  const bySlot = new Map<EpochMicros, LedgerEntry>();
  for (const row of rows) {
    const slotStart = toEpochMicros(row.slot_start);
    bySlot.set(slotStart, {
      status: row.status,
      slotStart,
      start: toEpochMicros(row.start),
      coveredEnd: toEpochMicros(row.end),
      totalCount: row.total_count,
      readAt: row.read_at === null ? null : toEpochMicros(row.read_at),
      verifiedAt: row.verified_at === null ? null : toEpochMicros(row.verified_at),
    });
  }
  return bySlot;
}

/**
 * Inserts the windows of a plan that have no row yet as `planned`, so the ledger shows the whole of
 * a run or backfill from its start.
 */
export async function insertPlannedWindows(
  db: Kysely<Tables>,
  key: LedgerKey,
  windows: readonly SlotWindow[],
): Promise<void> {
  for (let offset = 0; offset < windows.length; offset += 500) {
    const chunk = windows.slice(offset, offset + 500);
    await db
      .insertInto('sync_windows')
      .values(
        chunk.map((window) => ({
          account_id: key.accountId,
          stream: key.stream,
          slot_start: formatIsoMicros(window.slotStart),
          time_range: rangeText(window.start, window.end),
          status: 'planned' as const,
        })),
      )
      .onConflict((conflict) =>
        conflict.columns(['account_id', 'stream', 'slot_start']).doNothing(),
      )
      .execute();
  }
}

/**
 * Marks a slot as being read by run `runId`: creates its row, or re-opens the existing one,
 * counting the attempt. The range it covers changes only when the window completes.
 */
export async function markWindowRunning(
  db: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  window: SlotWindow,
  runId: number,
): Promise<void> {
  await sql`
    INSERT INTO ${sql.id(schema, 'sync_windows')} (account_id, stream, slot_start, time_range, status, attempts, last_run_id, updated_at)
    VALUES (${key.accountId}, ${key.stream}, ${formatIsoMicros(window.slotStart)}::timestamptz,
            ${rangeText(window.start, window.end)}::tstzrange, 'running', 1, ${runId}, now())
    ON CONFLICT (account_id, stream, slot_start) DO UPDATE SET
      status = 'running',
      attempts = sync_windows.attempts + 1,
      last_run_id = EXCLUDED.last_run_id,
      updated_at = now()
  `.execute(db);
}

export interface WindowCompletion extends SlotWindow {
  /** The service's count for [start, end). */
  readonly totalCount: number;
  readonly runId: number;
  /** Set when every page was read now (not just counted). */
  readonly readAt?: string;
  /** Set when a count probe confirmed the row. */
  readonly verifiedAt?: string;
}

/**
 * Marks a slot complete over [start, end), with the service's total and the rows stored in that
 * range (counted here, in the caller's transaction, so the two can be reconciled).
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
      (account_id, stream, slot_start, time_range, status, total_count, rows_stored, attempts, last_error, last_run_id, read_at, verified_at, updated_at)
    VALUES (
      ${key.accountId}, ${key.stream}, ${formatIsoMicros(completion.slotStart)}::timestamptz,
      ${rangeText(completion.start, completion.end)}::tstzrange, 'complete', ${completion.totalCount},
      (SELECT count(*) FROM ${sql.id(schema, 'trunk_calls')}
        WHERE account_id = ${key.accountId} AND end_time >= ${start}::timestamptz AND end_time < ${end}::timestamptz),
      1, NULL, ${completion.runId}, ${completion.readAt ?? null}::timestamptz, ${completion.verifiedAt ?? null}::timestamptz, now()
    )
    ON CONFLICT (account_id, stream, slot_start) DO UPDATE SET
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

/**
 * Puts back the status a slot had before a run began reading it, when the run stopped on request
 * half-way: a re-read that was cut short does not undo an earlier complete read, and a window never
 * read goes back to planned.
 */
export async function restoreWindowStatus(
  db: Kysely<Tables>,
  key: LedgerKey,
  slotStart: EpochMicros,
  status: LedgerStatus,
): Promise<void> {
  await db
    .updateTable('sync_windows')
    .set({ status: status === 'running' ? 'planned' : status, updated_at: sql<string>`now()` })
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .where('slot_start', '=', formatIsoMicros(slotStart))
    .where('status', '=', 'running')
    .execute();
}

/** Marks a slot failed with the reason, keeping what it covered before. */
export async function failWindow(
  db: Kysely<Tables>,
  key: LedgerKey,
  slotStart: EpochMicros,
  error: string,
): Promise<void> {
  await db
    .updateTable('sync_windows')
    .set({ status: 'failed', last_error: error, updated_at: sql<string>`now()` })
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .where('slot_start', '=', formatIsoMicros(slotStart))
    .execute();
}

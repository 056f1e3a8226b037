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
 * What a run did to a window, in the order it did it: planned it, began reading it, completed it,
 * failed it (`error`), or, stopped half-way, put back the status it had before (`status`).
 */
export type WindowChange =
  | { readonly kind: 'planned'; readonly window: SlotWindow }
  | ReadChange
  | {
      readonly kind: 'failed';
      readonly slotStart: EpochMicros;
      readonly error: string;
      readonly runId: number;
    }
  | {
      readonly kind: 'restored';
      readonly slotStart: EpochMicros;
      readonly status: LedgerStatus;
      readonly runId: number;
    };

/** The changes of reading a window, folded into one statement for the windows of a transaction. */
type ReadChange =
  | { readonly kind: 'running'; readonly window: SlotWindow; readonly runId: number }
  | { readonly kind: 'complete'; readonly completion: WindowCompletion };

/**
 * The one way a run writes the window ledger: applies `changes` (of one account and stream) in
 * order, in the caller's transaction or on `db`. Running marks and completions that follow each
 * other go in one statement (see recordReadChanges); planned windows in chunks.
 */
export async function recordWindowChanges(
  trx: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  changes: readonly WindowChange[],
): Promise<void> {
  for (let index = 0; index < changes.length;) {
    const change = changes[index]!;
    if (change.kind === 'running' || change.kind === 'complete') {
      const reads: ReadChange[] = [];
      for (let next = changes[index]; next?.kind === 'running' || next?.kind === 'complete';) {
        reads.push(next);
        next = changes[++index];
      }
      await recordReadChanges(trx, schema, key, reads);
      continue;
    }
    if (change.kind === 'planned') {
      const windows: SlotWindow[] = [];
      for (let next = changes[index]; next?.kind === 'planned'; next = changes[++index])
        windows.push(next.window);
      await insertPlannedWindows(trx, key, windows);
      continue;
    }
    if (change.kind === 'failed')
      await failWindow(trx, key, change.slotStart, change.error, change.runId);
    else await restoreWindowStatus(trx, key, change.slotStart, change.status, change.runId);
    index++;
  }
}

/** The changes to one slot, folded: attempts begun, and the last completion if any. */
interface FoldedChange {
  readonly window: SlotWindow;
  attempts: number;
  runId: number;
  completion: WindowCompletion | undefined;
}

/**
 * Applies `changes` (running marks and completions of the windows of one account and stream) in
 * one statement: the same rows as markWindowRunning and completeWindow called one after another,
 * in order. A transaction that commits several quiet windows at once would otherwise send two
 * statements per window, and with many accounts at once each statement's round trip is what the
 * database spends its time on. A slot with no row yet (every run inserts its planned windows
 * first, so only in a race with a reset) gets its row from those two functions.
 */
async function recordReadChanges(
  trx: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  changes: readonly ReadChange[],
): Promise<void> {
  const folded = new Map<EpochMicros, FoldedChange>();
  for (const change of changes) {
    const window = change.kind === 'running' ? change.window : change.completion;
    const entry = folded.get(slotOf(change)) ?? {
      window,
      attempts: 0,
      runId: 0,
      completion: undefined,
    };
    if (change.kind === 'running' && entry.completion !== undefined) {
      // Read again after a completion in the same transaction: the fold would lose the order.
      await applyOneByOne(trx, schema, key, changes);
      return;
    }
    if (change.kind === 'running') {
      entry.attempts++;
      entry.runId = change.runId;
    } else {
      entry.completion = change.completion;
      entry.runId = change.completion.runId;
    }
    folded.set(slotOf(change), entry);
  }
  if (folded.size === 0) return;
  const records = [...folded.values()].map(({ window, attempts, runId, completion }) => ({
    slot_start: formatIsoMicros(window.slotStart),
    status: completion === undefined ? 'running' : 'complete',
    range_start: formatIsoMicros(completion?.start ?? window.start),
    range_end: formatIsoMicros(completion?.end ?? window.end),
    total_count: completion?.totalCount ?? null,
    attempts,
    run_id: runId,
    read_at: completion?.readAt ?? null,
    verified_at: completion?.verifiedAt ?? null,
  }));
  const complete = sql`x.status = 'complete'`;
  const updated = await sql<{ slot_start: string }>`
    UPDATE ${sql.id(schema, 'sync_windows')} AS w SET
      status = x.status,
      time_range = CASE WHEN ${complete}
        THEN tstzrange(x.range_start, x.range_end, '[)') ELSE w.time_range END,
      total_count = CASE WHEN ${complete} THEN x.total_count ELSE w.total_count END,
      rows_stored = CASE WHEN ${complete}
        THEN (SELECT count(*) FROM ${sql.id(schema, 'trunk_calls')} AS t
              WHERE t.account_id = w.account_id
                AND t.end_time >= x.range_start AND t.end_time < x.range_end)
        ELSE w.rows_stored END,
      last_error = CASE WHEN ${complete} THEN NULL ELSE w.last_error END,
      attempts = w.attempts + x.attempts,
      last_run_id = x.run_id,
      read_at = COALESCE(x.read_at, w.read_at),
      verified_at = COALESCE(x.verified_at, w.verified_at),
      updated_at = now()
    FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS x(
      slot_start timestamptz, status text, range_start timestamptz, range_end timestamptz,
      total_count bigint, attempts integer, run_id bigint, read_at timestamptz,
      verified_at timestamptz)
    WHERE w.account_id = ${key.accountId} AND w.stream = ${key.stream}
      AND w.slot_start = x.slot_start
    RETURNING w.slot_start`.execute(trx);
  if (updated.rows.length === folded.size) return;
  const found = new Set(updated.rows.map((row) => toEpochMicros(row.slot_start)));
  await applyOneByOne(
    trx,
    schema,
    key,
    changes.filter((change) => !found.has(slotOf(change))),
  );
}

function slotOf(change: ReadChange): EpochMicros {
  return change.kind === 'running' ? change.window.slotStart : change.completion.slotStart;
}

/** `changes` as markWindowRunning and completeWindow, one statement each, in order. */
async function applyOneByOne(
  trx: Kysely<Tables>,
  schema: string,
  key: LedgerKey,
  changes: readonly ReadChange[],
): Promise<void> {
  for (const change of changes) {
    if (change.kind === 'running')
      await markWindowRunning(trx, schema, key, change.window, change.runId);
    else await completeWindow(trx, schema, key, change.completion);
  }
}

/**
 * Puts back the status a slot had before run `runId` began reading it, when the run stopped on
 * request half-way: a re-read that was cut short does not undo an earlier complete read, and a
 * window never read goes back to planned. Only while the slot is still that run's: a run that lost
 * its lock stops too, and by then another run may have taken the slot.
 */
export async function restoreWindowStatus(
  db: Kysely<Tables>,
  key: LedgerKey,
  slotStart: EpochMicros,
  status: LedgerStatus,
  runId: number,
): Promise<void> {
  await db
    .updateTable('sync_windows')
    .set({ status: status === 'running' ? 'planned' : status, updated_at: sql<string>`now()` })
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .where('slot_start', '=', formatIsoMicros(slotStart))
    .where('status', '=', 'running')
    .where('last_run_id', '=', runId)
    .execute();
}

/**
 * Marks a slot failed by run `runId` with the reason, keeping what it covered before. Not a slot
 * another run has read or begun reading since (a run that lost its lock may fail after another
 * took over): the other run's word stands.
 */
export async function failWindow(
  db: Kysely<Tables>,
  key: LedgerKey,
  slotStart: EpochMicros,
  error: string,
  runId: number,
): Promise<void> {
  await db
    .updateTable('sync_windows')
    .set({
      status: 'failed',
      last_error: error,
      last_run_id: runId,
      updated_at: sql<string>`now()`,
    })
    .where('account_id', '=', key.accountId)
    .where('stream', '=', key.stream)
    .where('slot_start', '=', formatIsoMicros(slotStart))
    .where((eb) => eb.or([eb('last_run_id', 'is', null), eb('last_run_id', '=', runId)]))
    .execute();
}

import { sql, type Kysely } from 'kysely';
import type { CoverageWindow } from '../../domain/coverage-days.js';
import { formatIsoMicros, toEpochMicros, type EpochMicros } from '../../util/micros.js';
import type { Tables } from '../schema.js';

/**
 * The queries behind the trunk-call coverage strip and the horizon alarm: the ledger rows of a
 * span of days, where each account's ledger begins, and the rows stored per UTC day.
 */

/** Ledger rows never span more than the 30-day cap: a row starting earlier cannot reach `from`. */
const WIDEST_SLOT_MICROS = 30 * 24 * 3600 * 1_000_000;

const STREAM = 'trunk_calls';

/** The trunk_calls ledger rows of each account that overlap `[from, to)`, by account. */
export async function findCoverageWindows(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  from: EpochMicros,
  to: EpochMicros,
): Promise<Map<string, CoverageWindow[]>> {
  const byAccount = new Map<string, CoverageWindow[]>(accountIds.map((id) => [id, []]));
  if (accountIds.length === 0) return byAccount;
  const rows = await db
    .selectFrom('sync_windows')
    .select([
      'account_id',
      'status',
      'total_count',
      sql<string>`lower(time_range)`.as('start'),
      sql<string>`upper(time_range)`.as('end'),
    ])
    .where('account_id', 'in', accountIds)
    .where('stream', '=', STREAM)
    // The slot bounds let the slot index do the work; the range test is the exact one.
    .where('slot_start', '>=', formatIsoMicros(from - WIDEST_SLOT_MICROS))
    .where('slot_start', '<', formatIsoMicros(to))
    .where(sql<boolean>`upper(time_range) > ${formatIsoMicros(from)}::timestamptz`)
    .orderBy('account_id')
    .orderBy('slot_start')
    .execute();
  for (const row of rows)
    byAccount.get(row.account_id)?.push({
      status: row.status,
      start: toEpochMicros(row.start),
      end: toEpochMicros(row.end),
      totalCount: row.total_count,
    });
  return byAccount;
}

/**
 * Where each account's trunk_calls ledger begins (the start of its oldest slot), whatever its
 * age; accounts without a ledger row are left out.
 */
export async function findTrackedFrom(
  db: Kysely<Tables>,
  accountIds: readonly string[],
): Promise<Map<string, EpochMicros>> {
  if (accountIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('sync_windows')
    .select(['account_id', sql<string>`min(slot_start)`.as('first_slot')])
    .where('account_id', 'in', accountIds)
    .where('stream', '=', STREAM)
    .groupBy('account_id')
    .execute();
  return new Map(rows.map((row) => [row.account_id, toEpochMicros(row.first_slot)]));
}

/** What is stored of one UTC day of trunk_calls. */
export interface StoredDay {
  readonly rows: number;
  /** The exact sum of total_amount, decimal text ("0" for a day without amounts). */
  readonly billedAmount: string;
  /** The sum of billed_duration. */
  readonly billedSeconds: number;
}

/**
 * trunk_calls rows stored per account and UTC day of end_time (`YYYY-MM-DD`), for end times in
 * `[from, to)`, with the day's billed amount and seconds: the side of the nightly reconciliation
 * that is ours, for the status page and `telesync verify`. One indexed scan; the edges of the
 * range cut the first and last day, as verify compares them.
 */
export async function findStoredDays(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  from: EpochMicros,
  to: EpochMicros,
): Promise<Map<string, Map<string, StoredDay>>> {
  const byAccount = new Map<string, Map<string, StoredDay>>(
    accountIds.map((id) => [id, new Map<string, StoredDay>()]),
  );
  if (accountIds.length === 0) return byAccount;
  const day = sql<string>`to_char(end_time AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
  const rows = await db
    .selectFrom('trunk_calls')
    .select([
      'account_id',
      day.as('day'),
      sql<number>`count(*)`.as('n'),
      sql<string>`coalesce(sum(total_amount), 0)::text`.as('amount'),
      sql<number>`coalesce(sum(billed_duration), 0)::bigint`.as('billed'),
    ])
    .where('account_id', 'in', accountIds)
    .where('end_time', '>=', formatIsoMicros(from))
    .where('end_time', '<', formatIsoMicros(to))
    .groupBy(['account_id', day])
    .execute();
  for (const row of rows)
    byAccount.get(row.account_id)?.set(row.day, {
      rows: Number(row.n),
      billedAmount: row.amount,
      billedSeconds: Number(row.billed),
    });
  return byAccount;
}

/** trunk_calls rows of `accountId` with an end_time in each of `ranges`, by the range's `day`. */
export async function findStoredRowsInParts(
  db: Kysely<Tables>,
  accountId: string,
  ranges: readonly {
    readonly day: string;
    readonly start: EpochMicros;
    readonly end: EpochMicros;
  }[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const range of ranges) {
    const row = await db
      .selectFrom('trunk_calls')
      .select(sql<number>`count(*)`.as('n'))
      .where('account_id', '=', accountId)
      .where('end_time', '>=', formatIsoMicros(range.start))
      .where('end_time', '<', formatIsoMicros(range.end))
      .executeTakeFirstOrThrow();
    counts.set(range.day, Number(row.n));
  }
  return counts;
}

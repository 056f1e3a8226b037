import { sql, type Kysely } from 'kysely';
import type { DayComparison, VerifyResult } from '../../domain/verify-days.js';
import { formatIsoMicros, toEpochMicros, type EpochMicros } from '../../util/micros.js';
import type { Tables } from '../schema.js';

/**
 * The verifications `telesync verify` keeps in day_verifications, for verify's summary, status,
 * state show, the status page and /metrics (the rows stored per day: findStoredDays in
 * coverage-repository.ts).
 */

/** Records what verify found for each of `days` of `accountId`, replacing earlier findings. */
export async function upsertDayVerifications(
  db: Kysely<Tables>,
  accountId: string,
  days: readonly DayComparison[],
  verifiedAt: EpochMicros,
  result: (day: DayComparison) => VerifyResult,
): Promise<void> {
  if (days.length === 0) return;
  await db
    .insertInto('day_verifications')
    .values(
      days.map((day) => ({
        account_id: accountId,
        day: day.day,
        range_start: formatIsoMicros(day.start),
        range_end: formatIsoMicros(day.end),
        verified_at: formatIsoMicros(verifiedAt),
        service_count: day.serviceCount,
        stored_count: day.storedCount,
        stored_amount: day.storedAmount,
        billed_seconds: day.billedSeconds,
        result: result(day),
      })),
    )
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'day']).doUpdateSet((eb) => ({
        range_start: eb.ref('excluded.range_start'),
        range_end: eb.ref('excluded.range_end'),
        verified_at: eb.ref('excluded.verified_at'),
        service_count: eb.ref('excluded.service_count'),
        stored_count: eb.ref('excluded.stored_count'),
        stored_amount: eb.ref('excluded.stored_amount'),
        billed_seconds: eb.ref('excluded.billed_seconds'),
        result: eb.ref('excluded.result'),
      })),
    )
    .execute();
}

/** The stored side of a set of verified days, summed exactly by the database. */
export interface VerifiedTotals {
  readonly calls: number;
  /** Exact decimal text. */
  readonly amount: string;
  readonly billedSeconds: number;
}

/** Sums the stored counts and amounts of `accountId`'s verifications of `days`. */
export async function findVerifiedTotals(
  db: Kysely<Tables>,
  accountId: string,
  days: readonly string[],
): Promise<VerifiedTotals> {
  if (days.length === 0) return { calls: 0, amount: '0', billedSeconds: 0 };
  const row = await db
    .selectFrom('day_verifications')
    .select([
      sql<number>`coalesce(sum(stored_count), 0)::bigint`.as('calls'),
      sql<string>`coalesce(sum(stored_amount), 0)::text`.as('amount'),
      sql<number>`coalesce(sum(billed_seconds), 0)::bigint`.as('billed'),
    ])
    .where('account_id', '=', accountId)
    .where('day', 'in', days)
    .executeTakeFirstOrThrow();
  return { calls: Number(row.calls), amount: row.amount, billedSeconds: Number(row.billed) };
}

/** The last verification of one account's days, as status, the page and /metrics show it. */
export interface VerificationSummary {
  readonly accountId: string;
  /** When a day of the account was last verified (ISO text); null: never. */
  readonly lastVerifiedAt: string | null;
  readonly agree: number;
  readonly differs: number;
  /** The days whose last verification differed, oldest first (`YYYY-MM-DD`). */
  readonly differingDays: readonly string[];
}

/**
 * Per account, the verifications of days from `sinceDay` (`YYYY-MM-DD`) on: days older than the
 * service's 90 days keep their last finding in the table, but are no longer anyone's worry.
 */
export async function findVerificationSummaries(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  sinceDay: string,
): Promise<VerificationSummary[]> {
  if (accountIds.length === 0) return [];
  const rows = await db
    .selectFrom('day_verifications')
    .select(['account_id', 'day', 'result', 'verified_at'])
    .where('account_id', 'in', accountIds)
    .where('day', '>=', sinceDay)
    .orderBy('account_id')
    .orderBy('day')
    .execute();
  return accountIds.map((accountId) => {
    const mine = rows.filter((row) => row.account_id === accountId);
    const last = mine.reduce<string | null>(
      (latest, row) =>
        latest === null || toEpochMicros(row.verified_at) > toEpochMicros(latest)
          ? row.verified_at
          : latest,
      null,
    );
    const differing = mine.filter((row) => row.result === 'differs').map((row) => row.day);
    return {
      accountId,
      lastVerifiedAt: last,
      agree: mine.length - differing.length,
      differs: differing.length,
      differingDays: differing,
    };
  });
}

/** One day's last verification, for the status page's strip. */
export interface DayVerification {
  readonly day: string;
  readonly verifiedAt: string;
  readonly result: VerifyResult;
  readonly serviceCount: number;
  readonly storedCount: number;
}

/** The last verification of each day from `sinceDay` on, by account and day. */
export async function findDayVerifications(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  sinceDay: string,
): Promise<Map<string, Map<string, DayVerification>>> {
  const byAccount = new Map<string, Map<string, DayVerification>>(
    accountIds.map((id) => [id, new Map()]),
  );
  if (accountIds.length === 0) return byAccount;
  const rows = await db
    .selectFrom('day_verifications')
    .selectAll()
    .where('account_id', 'in', accountIds)
    .where('day', '>=', sinceDay)
    .execute();
  for (const row of rows)
    byAccount.get(row.account_id)?.set(row.day, {
      day: row.day,
      verifiedAt: row.verified_at,
      result: row.result,
      serviceCount: row.service_count,
      storedCount: row.stored_count,
    });
  return byAccount;
}

import { sql, type Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/** One UTC day × direction of the billing_daily view. */
export interface BillingDay {
  readonly day: string;
  readonly direction: string | null;
  readonly calls: number;
  /** Decimal text. */
  readonly billedMinutes: string;
  /** Decimal text. */
  readonly totalAmount: string;
}

/** An account's billing: its recent days, and the totals over everything stored. */
export interface BillingSummary {
  readonly days: readonly BillingDay[];
  readonly totals: {
    readonly calls: number;
    readonly billedMinutes: string;
    readonly totalAmount: string;
  };
}

/**
 * The billing_daily view of one account: the last `days` UTC days (today included) per day and
 * direction, oldest first, and the totals of every day stored.
 */
export async function findBillingSummary(
  db: Kysely<Tables>,
  accountId: string,
  days: number,
): Promise<BillingSummary> {
  const rows = await db
    .selectFrom('billing_daily')
    .select(['day', 'direction', 'calls', 'billed_minutes', 'total_amount'])
    .where('account_id', '=', accountId)
    .where(sql<boolean>`day >= (now() AT TIME ZONE 'UTC')::date - ${days - 1}::integer`)
    .orderBy('day')
    .orderBy('direction')
    .execute();
  const totals = await db
    .selectFrom('billing_daily')
    .select([
      sql<number>`coalesce(sum(calls), 0)::integer`.as('calls'),
      sql<string>`coalesce(sum(billed_minutes), 0)::text`.as('minutes'),
      sql<string>`coalesce(sum(total_amount), 0)::text`.as('amount'),
    ])
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return {
    days: rows.map((row) => ({
      day: row.day,
      direction: row.direction,
      calls: row.calls,
      billedMinutes: row.billed_minutes,
      totalAmount: row.total_amount,
    })),
    totals: { calls: totals.calls, billedMinutes: totals.minutes, totalAmount: totals.amount },
  };
}

import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * Views for finance and BI: billing per UTC day. Sums are over `numeric` amounts, so they are exact;
 * billed time is given in seconds (exact) and in minutes (seconds / 60, to 4 decimals).
 */
export const billingViews: SchemaMigration = {
  name: '0002-billing-views',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    const statements = [
      sql`CREATE VIEW ${s}.billing_daily AS
        SELECT (end_time AT TIME ZONE 'UTC')::date                     AS day,
               account_id,
               call_direction                                          AS direction,
               count(*)::integer                                       AS calls,
               coalesce(sum(billed_duration), 0)::bigint               AS billed_seconds,
               round(coalesce(sum(billed_duration), 0)::numeric / 60, 4) AS billed_minutes,
               coalesce(sum(total_amount), 0)                          AS total_amount
          FROM ${s}.trunk_calls
         GROUP BY 1, 2, 3`,
      sql`CREATE VIEW ${s}.messages_billing_daily AS
        SELECT (message_time AT TIME ZONE 'UTC')::date AS day,
               account_id,
               message_direction                        AS direction,
               message_type,
               count(*)::integer                        AS messages,
               coalesce(sum(units), 0)::bigint          AS units,
               coalesce(sum(total_amount), 0)           AS total_amount,
               coalesce(sum(carrier_fees), 0)           AS carrier_fees
          FROM ${s}.messages
         GROUP BY 1, 2, 3, 4`,
      sql`CREATE VIEW ${s}.call_streams_billing_daily AS
        SELECT (start_time AT TIME ZONE 'UTC')::date           AS day,
               account_id,
               count(*)::integer                               AS streams,
               coalesce(sum(bill_duration), 0)::bigint         AS bill_seconds,
               coalesce(sum(rounded_bill_duration), 0)::bigint AS rounded_bill_seconds,
               coalesce(sum(billed_amount), 0)                 AS billed_amount
          FROM ${s}.call_streams
         WHERE start_time IS NOT NULL
         GROUP BY 1, 2`,
      sql`COMMENT ON VIEW ${s}.billing_daily IS ${sql.lit('Trunk calls per UTC day of end_time, account and direction: calls, billed time and the exact sum of total_amount.')}`,
      sql`COMMENT ON VIEW ${s}.messages_billing_daily IS ${sql.lit('Messages per UTC day of message_time, account, direction and type: units, total_amount and carrier fees.')}`,
      sql`COMMENT ON VIEW ${s}.call_streams_billing_daily IS ${sql.lit('Audio streams per UTC day of start_time and account: billed seconds and the exact sum of billed_amount.')}`,
    ];
    for (const statement of statements) await statement.execute(db);
  },
};

import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * `billing_daily` counts a call's billed time as `billed_duration`, or `bill_duration` where the
 * record carries no `billed_duration` (the service's CDR reference shows records with
 * `bill_duration` alone: docs/assumptions.md A39), and says for how many calls of the row it did
 * so: finance would otherwise see 0 billed seconds beside a correct amount. The columns before the
 * new one keep their names and types, so the view is replaced in place.
 */
export const billedDurationFallback: SchemaMigration = {
  name: '0009-billed-duration-fallback',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    const view = sql.id(schema, 'billing_daily');
    const statements = [
      sql`CREATE OR REPLACE VIEW ${view} AS
        SELECT (end_time AT TIME ZONE 'UTC')::date                                       AS day,
               account_id,
               call_direction                                                            AS direction,
               count(*)::integer                                                         AS calls,
               coalesce(sum(coalesce(billed_duration, bill_duration)), 0)::bigint        AS billed_seconds,
               round(coalesce(sum(coalesce(billed_duration, bill_duration)), 0)::numeric / 60, 4)
                                                                                         AS billed_minutes,
               coalesce(sum(total_amount), 0)                                            AS total_amount,
               (count(*) FILTER (WHERE billed_duration IS NULL AND bill_duration IS NOT NULL))::integer
                                                                                         AS calls_billed_by_bill_duration
          FROM ${s}.trunk_calls
         GROUP BY 1, 2, 3`,
      sql`COMMENT ON COLUMN ${view}.billed_seconds IS ${sql.lit(BILLED_SECONDS_COMMENT)}`,
      sql`COMMENT ON COLUMN ${view}.billed_minutes IS ${sql.lit(BILLED_MINUTES_COMMENT)}`,
      sql`COMMENT ON COLUMN ${view}.calls_billed_by_bill_duration IS ${sql.lit(FALLBACK_COMMENT)}`,
    ];
    for (const statement of statements) await statement.execute(db);
  },
};

const BILLED_SECONDS_COMMENT =
  'Sum of billed_duration, in seconds, taking bill_duration for a call whose record has no billed_duration (calls_billed_by_bill_duration says how many); exact.';
const BILLED_MINUTES_COMMENT =
  'billed_seconds / 60, in minutes, rounded to 4 decimals. For a month, sum billed_seconds and divide once.';
const FALLBACK_COMMENT =
  'Calls of the row whose record carries no billed_duration, counted in billed_seconds by their bill_duration.';

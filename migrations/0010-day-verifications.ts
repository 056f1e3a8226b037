import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * `day_verifications`: what `telesync verify` found for each account and UTC day, the last time
 * it compared the day: the service's count beside the rows stored. One row per account and day,
 * replaced by each verification of the day; finance reads it to prove the warehouse.
 */
export const dayVerifications: SchemaMigration = {
  name: '0010-day-verifications',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const table = sql.id(schema, 'day_verifications');
    await sql`CREATE TABLE ${table} (
      account_id      text        NOT NULL,
      day             date        NOT NULL,
      range_start     timestamptz NOT NULL,
      range_end       timestamptz NOT NULL,
      verified_at     timestamptz NOT NULL,
      service_count   integer     NOT NULL,
      stored_count    integer     NOT NULL,
      stored_amount   numeric     NOT NULL,
      billed_seconds  bigint      NOT NULL,
      result          text        NOT NULL CHECK (result IN ('agree', 'differs')),
      PRIMARY KEY (account_id, day)
    )`.execute(db);
    await sql`COMMENT ON TABLE ${table} IS ${sql.lit(TABLE_COMMENT)}`.execute(db);
    for (const [column, comment] of Object.entries(COLUMN_COMMENTS)) {
      await sql`COMMENT ON COLUMN ${sql.id(schema, 'day_verifications', column)} IS ${sql.lit(comment)}`.execute(
        db,
      );
    }
  },
};

const TABLE_COMMENT =
  'What telesync verify last found for each account and UTC day of trunk calls: the service count beside the rows stored, over the part of the day the service still counts.';

const COLUMN_COMMENTS: Readonly<Record<string, string>> = {
  account_id: 'The account (auth_id) the day belongs to.',
  day: 'The UTC day of end_time that was compared.',
  range_start:
    'Start of the part of the day compared, UTC: midnight, or the 90-day cut-off when it falls inside the day (rows stored before it are not compared).',
  range_end:
    'End of the part of the day compared, exclusive, UTC: the next midnight, or now minus the settle lag for the newest day.',
  verified_at: 'When the day was last verified, UTC.',
  service_count: 'Calls the service counted with an end_time in the range (its total_count).',
  stored_count: 'trunk_calls rows stored with an end_time in the range when it was verified.',
  stored_amount: 'The sum of total_amount of those rows: exact, never rounded.',
  billed_seconds: 'The sum of billed_duration of those rows, in seconds.',
  result:
    'agree: the service count equals the rows stored; differs: it does not (telesync verify --repair re-reads the day).',
};

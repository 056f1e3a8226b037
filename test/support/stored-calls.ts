import type { CliDatabase } from './test-database.js';

export interface StoredCall {
  call_uuid: string;
  total_amount: string | null;
  end_time: string;
}

/**
 * The trunk calls stored with an end_time in [from, to) (ISO instants or dates), in call_uuid
 * order: the side of an oracle comparison that telesync wrote.
 */
export function findStoredCalls(
  database: CliDatabase,
  from: string,
  to: string,
): Promise<StoredCall[]> {
  return database.inspect(({ db }) =>
    db
      .selectFrom('trunk_calls')
      .select(['call_uuid', 'total_amount', 'end_time'])
      .where('end_time', '>=', from)
      .where('end_time', '<', to)
      .orderBy('call_uuid')
      .execute(),
  );
}

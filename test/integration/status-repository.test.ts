import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKnownAccounts } from '../../src/db/repositories/status-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// One database for the file: each test adds to what the one before stored.
let handle: TestDatabase;
beforeAll(async () => {
  handle = await createTestDatabase();
});
afterAll(async () => {
  await handle.close();
});

/** Stores `count` calls of each account named. */
async function storeCalls(counts: Record<string, number>): Promise<void> {
  const rows = Object.entries(counts).flatMap(([accountId, count]) =>
    Array.from({ length: count }, (_, index) => ({
      account_id: accountId,
      call_uuid: `${accountId}-${String(index).padStart(4, '0')}`,
      end_time: '2026-11-20T10:01:05Z',
      raw: '{}',
    })),
  );
  await handle.database.db.insertInto('trunk_calls').values(rows).execute();
}

describe('findKnownAccounts', () => {
  it('is empty for an empty database', async () => {
    expect(await findKnownAccounts(handle.database.db)).toEqual([]);
  });

  it('finds the accounts of calls alone, with no run or state recorded', async () => {
    await storeCalls({ MA_C: 3, MA_A: 250 });
    expect(await findKnownAccounts(handle.database.db)).toEqual(['MA_A', 'MA_C']);
  });

  it('lists each account of the calls, the state and the runs once, in order', async () => {
    const { db } = handle.database;
    // Beside those stored before: keys that sort next to theirs, one a prefix of another.
    await storeCalls({ MA_AB: 1, MA_B: 2 });
    await db.insertInto('sync_state').values({ account_id: 'MA_S', stream: 'endpoints' }).execute();
    await db
      .insertInto('sync_runs')
      .values(
        ['MA_R', 'MA_A'].map((accountId) => ({
          account_id: accountId,
          stream: 'trunk_calls',
          command: 'sync',
          status: 'succeeded' as const,
          started_at: '2026-11-24T01:00:00Z',
        })),
      )
      .execute();

    expect(await findKnownAccounts(db)).toEqual(['MA_A', 'MA_AB', 'MA_B', 'MA_C', 'MA_R', 'MA_S']);
  });
});

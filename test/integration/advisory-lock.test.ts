import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { advisoryLockKey, LockLostError, withAdvisoryLock } from '../../src/db/advisory-lock.js';
import { createTestDatabase, harnessTarget, type TestDatabase } from '../support/test-database.js';

const opened: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((test) => test.close()));
});

/**
 * Ends the session holding the lock `name` (only it: other test files share the database), as an
 * operator or a proxy would.
 */
async function terminateLockHolder(test: TestDatabase, name: string): Promise<number> {
  const key = advisoryLockKey(`telesync:${test.database.schema}:${name}`);
  const result = await sql<{ pid: number }>`
    SELECT pg_terminate_backend(pid) AS terminated, pid FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
      AND ((classid::bigint << 32) | objid::bigint) = ${key}::bigint`.execute(test.database.root);
  return result.rows.length;
}

describe.skipIf(harnessTarget().kind !== 'postgres')('the connection holding a run lock', () => {
  it('ended mid-run (pg_terminate_backend): the process lives on, the holder is told, and the lock is free again', async () => {
    const test = await createTestDatabase({ migrate: false });
    opened.push(test);
    const started = performance.now();
    const outcome = await withAdvisoryLock(
      test.database,
      'MA_LOCK:trunk_calls',
      { waitMs: 0 },
      async (lockLost) => {
        expect(await terminateLockHolder(test, 'MA_LOCK:trunk_calls')).toBe(1);
        // An 'error' on the checked-out client without a listener would end the test process here.
        await new Promise<void>((resolve) => {
          if (lockLost.aborted) resolve();
          lockLost.addEventListener('abort', () => resolve(), { once: true });
        });
        return lockLost.reason as unknown;
      },
    );
    expect(outcome).toBeInstanceOf(LockLostError);
    expect((outcome as Error).message).toContain(
      'lost the database connection holding the lock MA_LOCK:trunk_calls',
    );
    expect(performance.now() - started).toBeLessThan(5_000);
    // The pool still works, and the next run takes the lock.
    const again = await withAdvisoryLock(
      test.database,
      'MA_LOCK:trunk_calls',
      { waitMs: 0 },
      (lockLost) => Promise.resolve(lockLost.aborted),
    );
    expect(again).toBe(false);
  });

  it('held by a live connection, is never reported lost', async () => {
    const test = await createTestDatabase({ migrate: false });
    opened.push(test);
    const lost = await withAdvisoryLock(
      test.database,
      'MA_LOCK:endpoints',
      { waitMs: 0 },
      async (lockLost) => {
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        return lockLost.aborted;
      },
    );
    expect(lost).toBe(false);
  });
});

import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  advisoryLockKey,
  LockBusyError,
  LockLostError,
  withAdvisoryLock,
} from '../../src/db/advisory-lock.js';
import { openDatabase } from '../../src/db/connect.js';
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

  it('held by many runs of a process, all sit on one connection of its pool, other processes find them busy, and Node warns of no listener leak', async () => {
    const test = await createTestDatabase({ migrate: false });
    opened.push(test);
    // Each held lock listens for its session's loss: twelve are more than Node's default of ten.
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const target = harnessTarget();
    if (target.kind !== 'postgres') throw new Error('PostgreSQL only');
    // Another process: its own pool on the same schema.
    const other = await openDatabase(
      { url: target.url, dataDir: '', schema: test.database.schema },
      { maxConnections: 2 },
    );
    try {
      // Three times the pool of 4: with a connection per lock these could not all be held.
      const names = Array.from({ length: 12 }, (_, index) => `MA_MANY${index}:trunk_calls`);
      const keys = names.map((name) => advisoryLockKey(`telesync:${test.database.schema}:${name}`));
      const holders = async (): Promise<{ locks: number; sessions: number }> => {
        const result = await sql<{ locks: string; sessions: string }>`
          SELECT count(*) AS locks, count(DISTINCT pid) AS sessions FROM pg_locks
          WHERE locktype = 'advisory' AND granted
            AND ((classid::bigint << 32) | objid::bigint) = ANY(${keys}::bigint[])`.execute(
          other.root,
        );
        const row = result.rows[0]!;
        return { locks: Number(row.locks), sessions: Number(row.sessions) };
      };
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let held = 0;
      let allHeld!: () => void;
      const allHeldNow = new Promise<void>((resolve) => (allHeld = resolve));
      const runs = names.map((name) =>
        withAdvisoryLock(test.database, name, { waitMs: 0 }, async () => {
          held += 1;
          if (held === names.length) allHeld();
          await released;
        }),
      );
      await allHeldNow;
      expect(await holders()).toEqual({ locks: 12, sessions: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      const warnedWhileHeld = [...warnings];
      await expect(
        withAdvisoryLock(other, names[5]!, { waitMs: 0 }, () => Promise.resolve()),
      ).rejects.toBeInstanceOf(LockBusyError);
      release();
      await Promise.all(runs);
      expect(warnedWhileHeld).not.toContain('MaxListenersExceededWarning');
      expect(await holders()).toEqual({ locks: 0, sessions: 0 });
      expect(
        await withAdvisoryLock(other, names[5]!, { waitMs: 0 }, () => Promise.resolve('taken')),
      ).toBe('taken');
    } finally {
      process.off('warning', onWarning);
      await other.close();
    }
  });

  it('asked for twice at once within one process, is given once', async () => {
    const test = await createTestDatabase({ migrate: false });
    opened.push(test);
    const attempt = (): Promise<string> =>
      withAdvisoryLock(test.database, 'MA_TWICE:trunk_calls', { waitMs: 0 }, async () => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        return 'held';
      });
    const outcomes = await Promise.allSettled([attempt(), attempt()]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(LockBusyError);
  });

  it('lost with its session: every run holding a lock on it is told', async () => {
    const test = await createTestDatabase({ migrate: false });
    opened.push(test);
    let bothHeld!: () => void;
    const held = new Promise<void>((resolve) => (bothHeld = resolve));
    let count = 0;
    const hold = (name: string): Promise<unknown> =>
      withAdvisoryLock(test.database, name, { waitMs: 0 }, async (lockLost) => {
        count += 1;
        if (count === 2) bothHeld();
        await new Promise<void>((resolve) => {
          if (lockLost.aborted) resolve();
          lockLost.addEventListener('abort', () => resolve(), { once: true });
        });
        return lockLost.reason as unknown;
      });
    const runs = [hold('MA_LOST1:trunk_calls'), hold('MA_LOST2:endpoints')];
    await held;
    expect(await terminateLockHolder(test, 'MA_LOST1:trunk_calls')).toBe(1);
    const reasons = await Promise.all(runs);
    expect(reasons.map((reason) => (reason as Error).message)).toEqual([
      expect.stringContaining('holding the lock MA_LOST1:trunk_calls'),
      expect.stringContaining('holding the lock MA_LOST2:endpoints'),
    ]);
    expect(reasons.every((reason) => reason instanceof LockLostError)).toBe(true);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  closeAbandonedRuns,
  finishRun,
  insertRun,
  insertSkippedRun,
  type RunOutcome,
} from '../../src/db/repositories/sync-runs-repository.js';
import { createHealthCheck } from '../../src/scheduler/health-check.js';
import {
  bothDatabases,
  createTestDatabase,
  harnessTarget,
  type TestDatabase,
} from '../support/test-database.js';

const ORIGIN = { stream: 'trunk_calls', command: 'sync', pid: 4242, host: 'worker-b' };
const OUTCOME: RunOutcome = {
  status: 'succeeded',
  error: null,
  windowStart: null,
  windowEnd: null,
  gapStart: null,
  gapEnd: null,
  windowsPlanned: 1,
  windowsCompleted: 1,
  requests: 3,
  retries: 0,
  waitMs: 0,
  loadWaitMs: 0,
  recordsFetched: 20,
  recordsUpserted: 20,
  recordsChanged: 20,
  recordsRejected: 0,
};

/**
 * A run's start is the database's clock (the column's default). Its end must be too: a worker whose
 * own clock is a day behind the database's (another machine, a clock not yet synchronised) would
 * otherwise close every run a day before it began, and `status`, the status page and the health
 * check would show runs that lasted minus a day. Only a server has a clock of its own: the
 * embedded database runs in the process and reads its clock, so it cannot disagree with it.
 */
const SERVER = harnessTarget();

describe.skipIf(SERVER.kind !== 'postgres')('sync_runs on the database clock', () => {
  const target = SERVER;
  let handle: TestDatabase;
  beforeAll(async () => {
    handle = await createTestDatabase({ target });
  });
  afterAll(async () => {
    await handle?.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const spanOf = async (id: number) => {
    const row = await handle.database.db
      .selectFrom('sync_runs')
      .select(['started_at', 'finished_at', 'status'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    return {
      status: row.status,
      startedAt: Date.parse(String(row.started_at)),
      finishedAt: Date.parse(String(row.finished_at)),
    };
  };
  const aDayBehind = () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() - 24 * 3600 * 1000);
  };
  const expectOrderedNow = (span: { startedAt: number; finishedAt: number }) => {
    expect(span.finishedAt).toBeGreaterThanOrEqual(span.startedAt);
    // Both within a minute of the real time, not of the process's clock.
    vi.useRealTimers();
    expect(Math.abs(span.finishedAt - Date.now())).toBeLessThan(60_000);
  };

  it('a finished run ends after it started, whatever the process clock says', async () => {
    const { db } = handle.database;
    const id = await insertRun(db, { ...ORIGIN, accountId: 'ACC_CLOCK_1' });
    aDayBehind();
    await finishRun(db, id, OUTCOME);
    const span = await spanOf(id);
    expect(span.status).toBe('succeeded');
    expectOrderedNow(span);
  });

  it("a finished run keeps its counts, the reading's wait for the loader in whole milliseconds", async () => {
    const { db } = handle.database;
    const id = await insertRun(db, { ...ORIGIN, accountId: 'ACC_CLOCK_COUNTS' });
    await finishRun(db, id, { ...OUTCOME, waitMs: 250, loadWaitMs: 1_234.6 });
    const row = await db
      .selectFrom('sync_runs')
      .select(['wait_ms', 'load_wait_ms', 'records_upserted'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ wait_ms: 250, load_wait_ms: 1_235, records_upserted: 20 });
  });

  it('so does a run closed as abandoned, and a skipped one', async () => {
    const { db } = handle.database;
    const abandoned = await insertRun(db, { ...ORIGIN, accountId: 'ACC_CLOCK_2' });
    aDayBehind();
    expect(await closeAbandonedRuns(db, 'ACC_CLOCK_2', 'trunk_calls')).toBe(1);
    const closed = await spanOf(abandoned);
    expect(closed.status).toBe('failed');
    expectOrderedNow(closed);

    aDayBehind();
    const skipped = await insertSkippedRun(db, {
      ...ORIGIN,
      accountId: 'ACC_CLOCK_2',
      reason: 'another run held the lock',
    });
    const span = await spanOf(skipped);
    expect(span.status).toBe('skipped');
    expectOrderedNow(span);
  });
});

/**
 * /healthz judges those runs on the same clock. A scheduler whose clock is a day off the
 * database's still sees a run cut short before its start as before its start (grace: `starting`),
 * and a success of a moment ago as a moment ago (`ok`), on either database.
 */
describe.each(bothDatabases())(
  'the health check on the database clock ($description)',
  (target) => {
    let handle: TestDatabase;
    beforeAll(async () => {
      handle = await createTestDatabase({ target });
    });
    afterAll(async () => {
      await handle?.close();
    });

    const DAY_MS = 24 * 3600 * 1000;
    const checkAt = async (accountId: string, offsetMs: number) => {
      const now = () => Date.now() + offsetMs;
      const check = createHealthCheck({
        database: handle.database,
        accountIds: [accountId],
        streams: ['trunk_calls'],
        maxAgeMinutes: 60,
        startedAtMs: now(),
        now,
      });
      const report = await check();
      expect(report.database.ok).toBe(true);
      return report.streams[0]!;
    };

    it('a run stopped before the scheduler started is from before its start, a day behind or not', async () => {
      const { db } = handle.database;
      const id = await insertRun(db, { ...ORIGIN, accountId: 'ACC_HEALTH_1' });
      await finishRun(db, id, { ...OUTCOME, status: 'stopped' });
      // The scheduler starts a moment later: more than the clock offset's measuring error.
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const offsetMs of [0, -DAY_MS]) {
        expect(await checkAt('ACC_HEALTH_1', offsetMs)).toMatchObject({
          state: 'starting',
          healthy: true,
          last_status: 'stopped',
        });
      }
    });

    it('a success of a moment ago is recent, a day ahead or not', async () => {
      const { db } = handle.database;
      const id = await insertRun(db, { ...ORIGIN, accountId: 'ACC_HEALTH_2' });
      await finishRun(db, id, OUTCOME);
      for (const offsetMs of [0, DAY_MS]) {
        const health = await checkAt('ACC_HEALTH_2', offsetMs);
        expect(health).toMatchObject({ state: 'ok', healthy: true });
        expect(health.last_success_age_seconds).toBeLessThan(60);
      }
    });
  },
);

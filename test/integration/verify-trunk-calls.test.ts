import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TelephonyClient } from '../../src/api/telephony-client.js';
import { HttpTransport } from '../../src/api/transport.js';
import { loadConfig } from '../../src/config/load-config.js';
import { withAdvisoryLock } from '../../src/db/advisory-lock.js';
import { handleVerifyJob } from '../../src/jobs/job-handlers.js';
import type { AccountJob, JobQueue, TakenJob } from '../../src/jobs/job-queue.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import {
  planVerifyDays,
  retrievableRange,
  verifyTrunkCalls,
  type VerifyDependencies,
} from '../../src/sync/verify-trunk-calls.js';
import { createLogger } from '../../src/util/logger.js';
import { epochMicrosFromMillis } from '../../src/util/micros.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * verify against the simulator on a database of its own: its own lock (it runs while a sync of the
 * account holds the stream's, and a second verify of the account skips), nothing written but its
 * findings, and the workers' verify job.
 */

const ACCOUNT = { authId: 'MA_VERIFY_INT', authToken: 'tok_verify_int_secret' };
const NOW_MS = Date.now();

let handle: TestDatabase;
let sim: RunningSimulator;
let transport: HttpTransport;
let client: TelephonyClient;
let deps: VerifyDependencies;

beforeAll(async () => {
  handle = await createTestDatabase();
  sim = await startSimulator({
    seed: 'verify-int',
    calls: 400,
    accounts: [ACCOUNT],
    now: () => epochMicrosFromMillis(NOW_MS - 3_600_000),
  });
  transport = new HttpTransport({
    baseUrl: sim.url,
    authId: ACCOUNT.authId,
    authToken: ACCOUNT.authToken,
    maxRps: 10_000,
    concurrency: 4,
    timeoutMs: 15_000,
    maxRetries: 0,
  });
  client = new TelephonyClient(transport, ACCOUNT.authId);
  deps = {
    database: handle.database,
    settings: loadConfig({}).sync,
    log: createLogger({ level: 'silent', secrets: [], pretty: false }),
    requestConcurrency: 4,
    clock: () => epochMicrosFromMillis(Date.now()),
  };
});

afterAll(async () => {
  await transport?.close();
  await sim?.close();
  await handle?.close();
});

function wholeRange() {
  const now = deps.clock();
  return planVerifyDays(now, retrievableRange(now), deps.settings);
}

async function rowCounts(): Promise<{ calls: number; windows: number; runs: number }> {
  const { db } = handle.database;
  const count = async (table: 'trunk_calls' | 'sync_windows' | 'sync_runs') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    calls: await count('trunk_calls'),
    windows: await count('sync_windows'),
    runs: await count('sync_runs'),
  };
}

describe('verifyTrunkCalls', () => {
  it("runs while a sync holds the account's trunk_calls lock, one request a day, writing only its findings", async () => {
    const days = wholeRange();
    sim.resetStats();
    const verification = await withAdvisoryLock(
      handle.database,
      `${ACCOUNT.authId}:trunk_calls`,
      { waitMs: 0 },
      () => verifyTrunkCalls(deps, client, days),
    );
    expect(verification.status).toBe('verified');
    expect(verification.days).toHaveLength(days.length);
    expect(sim.stats().requests.total).toBe(days.length);
    // Nothing is stored yet: every day with a call differs, by all of its calls.
    const counted = verification.days.reduce((sum, day) => sum + day.serviceCount, 0);
    expect(counted).toBeGreaterThan(350);
    expect(
      verification.days.filter((day) => day.serviceCount > 0 && day.result === 'agree'),
    ).toEqual([]);
    expect(await rowCounts()).toEqual({ calls: 0, windows: 0, runs: 0 });
    const kept = await handle.database.db
      .selectFrom('day_verifications')
      .select(['day', 'service_count', 'stored_count', 'result'])
      .orderBy('day')
      .execute();
    expect(kept).toHaveLength(days.length);
    expect(kept.reduce((sum, row) => sum + row.service_count, 0)).toBe(counted);
  });

  it('skips when another verify of the account holds its lock, and says why', async () => {
    const days = wholeRange();
    const [first, second] = await Promise.all([
      verifyTrunkCalls(deps, client, days),
      verifyTrunkCalls(deps, client, days),
    ]);
    expect([first.status, second.status].sort()).toEqual(['skipped', 'verified']);
    const skipped = first.status === 'skipped' ? first : second;
    expect(skipped.error).toBe(`another telesync verify of ${ACCOUNT.authId} is running`);
  });
});

describe('the verify job', () => {
  function recordingQueue() {
    const settled: string[] = [];
    const queue: JobQueue = {
      enqueue: () => Promise.resolve(),
      take: () => Promise.resolve(undefined),
      waitForWork: () => Promise.resolve(),
      extend: () => Promise.resolve(true),
      hasWorkAhead: () => Promise.resolve(false),
      waitForSettled: () => Promise.resolve(),
      complete: (taken) => Promise.resolve(void settled.push(`complete ${taken.id}`)),
      fail: (taken, reason) => Promise.resolve(void settled.push(`fail ${taken.id}: ${reason}`)),
      keepSchedules: () => Promise.resolve(),
      stop: () => Promise.resolve(),
    };
    return { queue, settled };
  }
  const job: AccountJob = { kind: 'verify', accountId: ACCOUNT.authId };
  const taken: TakenJob = {
    id: 'j1',
    retryCount: 0,
    job,
    priority: 0,
    leaseEndsAtMs: Date.now() + 60_000,
    renewSeconds: 0,
    expiresAtMs: Date.now() + 60_000,
  };

  it('completes with days that differ (a finding, kept), and fails when the verify cannot run', async () => {
    const { queue, settled } = recordingQueue();
    const verification = await handleVerifyJob(deps, client, queue, taken);
    expect(verification.status).toBe('verified');
    expect(verification.days.some((day) => day.result === 'differs')).toBe(true);
    expect(settled).toEqual(['complete j1']);

    const held = recordingQueue();
    await withAdvisoryLock(handle.database, `${ACCOUNT.authId}:verify`, { waitMs: 0 }, () =>
      handleVerifyJob(deps, client, held.queue, taken),
    );
    expect(held.settled).toEqual([
      `fail j1: another telesync verify of ${ACCOUNT.authId} is running`,
    ]);
  });
});

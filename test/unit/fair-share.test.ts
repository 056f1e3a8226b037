import { describe, expect, it } from 'vitest';
import { FairShare, fairShareOf } from '../../src/jobs/fair-share.js';
import type { AccountJob, JobQueue, TakenJob } from '../../src/jobs/job-queue.js';
import { runWorkerLoop } from '../../src/jobs/worker-loop.js';
import { createLogger } from '../../src/util/logger.js';

describe('fairShareOf', () => {
  it('divides the accounts with work among the live workers, rounded up, at least one', () => {
    expect(fairShareOf(50, 3)).toBe(17);
    expect(fairShareOf(20, 3)).toBe(7);
    expect(fairShareOf(10, 2)).toBe(5);
    expect(fairShareOf(50, 1)).toBe(50);
    expect(fairShareOf(0, 3)).toBe(1);
    // No heartbeat seen yet (the table is new): the worker asking is live.
    expect(fairShareOf(8, 0)).toBe(8);
  });
});

describe('FairShare', () => {
  it('asks the database at most once per cacheMs', async () => {
    let reads = 0;
    let now = 0;
    const share = new FairShare(
      () => {
        reads++;
        return Promise.resolve({ accountsWithWork: 10 * reads, liveWorkers: 2 });
      },
      { cacheMs: 1_000, now: () => now },
    );
    expect(await share.current()).toBe(5);
    now = 999;
    expect(await share.current()).toBe(5);
    expect(reads).toBe(1);
    now = 1_000;
    expect(await share.current()).toBe(10);
    expect(reads).toBe(2);
  });
});

/** A queue of one job per account, each held until released. */
function heldJobs(accounts: number) {
  const waiting = Array.from({ length: accounts }, (_, index) => `MA${index}`);
  const releases: (() => void)[] = [];
  const queue: JobQueue = {
    enqueue: () => Promise.resolve(),
    take: () => {
      const accountId = waiting.shift();
      if (accountId === undefined) return Promise.resolve(undefined);
      const job: AccountJob = { kind: 'sync', accountId, stream: 'endpoints' };
      return Promise.resolve({
        id: accountId,
        retryCount: 0,
        job,
        priority: 0,
        leaseEndsAtMs: Infinity,
        renewSeconds: 0,
        expiresAtMs: Infinity,
      });
    },
    waitForWork: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    extend: () => Promise.resolve(true),
    hasWorkAhead: () => Promise.resolve(false),
    waitForSettled: () => Promise.resolve(),
    complete: () => Promise.resolve(),
    fail: () => Promise.resolve(),
    keepSchedules: () => Promise.resolve(),
    stop: () => Promise.resolve(),
  };
  const inHand = new Set<string>();
  const handle = (taken: TakenJob) => {
    inHand.add(taken.id);
    return new Promise<void>((resolve) =>
      releases.push(() => {
        inHand.delete(taken.id);
        resolve();
      }),
    );
  };
  return { queue, handle, inHand, releases, waiting };
}

const log = createLogger({ level: 'silent', secrets: [], pretty: false });
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

/** A worker loop over ten held jobs; `stop` ends it and releases every job it took. */
function startLoop(concurrency: number, fairShare: () => Promise<number>) {
  const jobs = heldJobs(10);
  const abort = new AbortController();
  const loop = runWorkerLoop({
    queue: jobs.queue,
    concurrency,
    fairShare,
    pollMs: 5,
    handle: jobs.handle,
    signal: abort.signal,
    log,
  });
  const stop = async () => {
    abort.abort();
    for (const release of jobs.releases) release();
    await loop;
  };
  return { jobs, stop };
}

describe('runWorkerLoop with a fair share', () => {
  it('holds no more jobs than its share, takes one even at a share of none, and more as it grows', async () => {
    let share = 0;
    const { jobs, stop } = startLoop(8, () => Promise.resolve(share));
    await settle();
    expect(jobs.inHand.size).toBe(1);
    share = 3;
    await settle();
    expect(jobs.inHand.size).toBe(3);
    // A job of its own ends: room for one more, not for more than the share.
    jobs.releases.shift()!();
    await settle();
    expect(jobs.inHand.size).toBe(3);
    expect(jobs.waiting).toHaveLength(6);
    // The share above the concurrency: the concurrency bounds it.
    share = 50;
    await settle();
    expect(jobs.inHand.size).toBe(8);
    await stop();
  });

  it('takes up to its concurrency when the share cannot be read', async () => {
    const { jobs, stop } = startLoop(4, () =>
      Promise.reject(new Error('the database did not answer')),
    );
    await settle();
    expect(jobs.inHand.size).toBe(4);
    await stop();
  });
});

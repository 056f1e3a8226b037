import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TakenJob } from '../../src/jobs/job-queue.js';
import { keepLease, leaseMarginMs } from '../../src/jobs/lease-keeper.js';

const LEASE_SECONDS = 60;
const MARGIN_MS = leaseMarginMs(LEASE_SECONDS);
const TURN_MS = LEASE_SECONDS * 1_000 - MARGIN_MS;

function takenJob(overrides: Partial<TakenJob> = {}): TakenJob {
  return {
    id: 'job-1',
    retryCount: 0,
    job: { kind: 'sync', accountId: 'MA1', stream: 'endpoints' },
    priority: 0,
    leaseEndsAtMs: Date.now() + LEASE_SECONDS * 1_000,
    renewSeconds: LEASE_SECONDS,
    expiresAtMs: Date.now() + 3_600_000,
    ...overrides,
  };
}

describe('keepLease', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a renewed lease keeps a job running past its first lease, and nothing waits: no stop', async () => {
    const renewals: number[] = [];
    const lease = keepLease({
      queue: { extend: () => Promise.resolve(void renewals.push(Date.now())).then(() => true) },
      taken: takenJob(),
      leaseSeconds: LEASE_SECONDS,
      turnMs: TURN_MS,
      shouldYield: () => Promise.resolve(false),
      now: () => Date.now(),
    });
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    expect(lease.signal.aborted).toBe(false);
    // Every quarter of a lease.
    expect(renewals.slice(0, 3)).toEqual([15_000, 30_000, 45_000]);
    lease.release();
    const renewed = renewals.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(renewals.length).toBe(renewed);
  });

  it('renewals that fail stop the job a margin before the last lease it holds ends', async () => {
    let reachable = true;
    const lease = keepLease({
      queue: {
        extend: () =>
          reachable ? Promise.resolve(true) : Promise.reject(new Error('connection lost')),
      },
      taken: takenJob(),
      leaseSeconds: LEASE_SECONDS,
      turnMs: TURN_MS,
      shouldYield: () => Promise.resolve(false),
      now: () => Date.now(),
    });
    // Renewed at 15 s and 30 s; the database is gone from 31 s: that lease ends at 90 s.
    await vi.advanceTimersByTimeAsync(31_000);
    reachable = false;
    await vi.advanceTimersByTimeAsync(90_000 - MARGIN_MS - 31_000 - 1);
    expect(lease.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.reason()).toBe('lease-ending');
  });

  it('a job the queue no longer holds for this attempt stops at once', async () => {
    const lease = keepLease({
      queue: { extend: () => Promise.resolve(false) },
      taken: takenJob(),
      leaseSeconds: LEASE_SECONDS,
      turnMs: TURN_MS,
      shouldYield: () => Promise.resolve(false),
      now: () => Date.now(),
    });
    await vi.advanceTimersByTimeAsync(15_000);
    expect(lease.reason()).toBe('lease-lost');
    expect(lease.signal.aborted).toBe(true);
  });

  it('after its turn a job stops when other work waits, and is not asked before', async () => {
    const asked: number[] = [];
    let waiting = false;
    const lease = keepLease({
      queue: { extend: () => Promise.resolve(true) },
      taken: takenJob(),
      leaseSeconds: LEASE_SECONDS,
      turnMs: TURN_MS,
      shouldYield: () => Promise.resolve(void asked.push(Date.now())).then(() => waiting),
      now: () => Date.now(),
    });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(asked).toEqual([45_000, 60_000]);
    expect(lease.signal.aborted).toBe(false);
    waiting = true;
    await vi.advanceTimersByTimeAsync(15_000);
    expect(lease.reason()).toBe('turn-over');
  });

  it('a lease that cannot be renewed (a job of an older telesync) is held to its end', async () => {
    let renewals = 0;
    const lease = keepLease({
      queue: { extend: () => Promise.resolve(++renewals > 0) },
      taken: takenJob({ renewSeconds: 0, expiresAtMs: LEASE_SECONDS * 1_000 }),
      leaseSeconds: LEASE_SECONDS,
      turnMs: TURN_MS,
      shouldYield: () => Promise.resolve(false),
      now: () => Date.now(),
    });
    await vi.advanceTimersByTimeAsync(TURN_MS - 1);
    expect(lease.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(lease.reason()).toBe('lease-ending');
    expect(renewals).toBe(0);
  });

  it('however often renewed, a job stops a margin before it expires', async () => {
    const lease = keepLease({
      queue: { extend: () => Promise.resolve(true) },
      taken: takenJob({ expiresAtMs: 600_000 }),
      leaseSeconds: LEASE_SECONDS,
      turnMs: TURN_MS,
      shouldYield: () => Promise.resolve(false),
      now: () => Date.now(),
    });
    await vi.advanceTimersByTimeAsync(600_000 - MARGIN_MS - 1);
    expect(lease.signal.aborted).toBe(false);
    // A renewal falls due at the same moment: the stop follows it.
    await vi.advanceTimersByTimeAsync(2);
    expect(lease.reason()).toBe('lease-ending');
  });
});

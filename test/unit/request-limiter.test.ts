import { describe, expect, it } from 'vitest';
import { LimiterAbortedError, RequestLimiter } from '../../src/api/request-limiter.js';

/** A clock and timer queue that the test moves by hand; timers fire `lateMs` after they are due. */
function drivenTime(lateMs = 0) {
  let now = 0;
  const timers: { at: number; run: () => void }[] = [];
  return {
    now: () => now,
    setTimer: (run: () => void, ms: number) => {
      timers.push({ at: now + ms + lateMs, run });
    },
    /** Moves the clock to the next timer and runs it (and whatever settles meanwhile). */
    async step(): Promise<boolean> {
      await new Promise((resolve) => setImmediate(resolve));
      timers.sort((a, b) => a.at - b.at);
      const next = timers.shift();
      if (next === undefined) return false;
      now = Math.max(now, next.at);
      next.run();
      await new Promise((resolve) => setImmediate(resolve));
      return true;
    },
  };
}

/** The most starts in any half-open window of `windowMs`. */
function busiestWindow(starts: readonly number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let busiest = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs) j++;
    busiest = Math.max(busiest, j - i);
  }
  return busiest;
}

async function startTimes(
  perSecond: number,
  lateMs: number,
  total: number,
  windowSeconds?: number,
): Promise<number[]> {
  const time = drivenTime(lateMs);
  const limiter = new RequestLimiter({
    maxPerSecond: perSecond,
    ...(windowSeconds === undefined ? {} : { windowSeconds }),
    maxConcurrent: 64,
    now: time.now,
    setTimer: time.setTimer,
  });
  const starts: number[] = [];
  const done = Promise.all(
    Array.from({ length: total }, () =>
      limiter.schedule(() => {
        starts.push(time.now());
        return Promise.resolve();
      }),
    ),
  );
  while (await time.step());
  await done;
  return starts;
}

describe('RequestLimiter', () => {
  describe.each([0, 0.4, 2.5, 3.9])('with timers firing %s ms late', (lateMs) => {
    it.each([1, 7, 20, 60, 300, 999, 1015, 5000])(
      'starts at most %i requests in any one-second window, without falling behind',
      async (perSecond) => {
        const total = Math.min(3 * perSecond + 5, 4000);
        const starts = await startTimes(perSecond, lateMs, total);
        expect(starts).toHaveLength(total);
        expect(busiestWindow(starts, 1000)).toBeLessThanOrEqual(perSecond);
        // Late timers do not add up: the whole run takes what the spacing says, give or take a
        // tick, and the spacing gives up at most 5% of the rate (stated here, not derived from
        // the limiter's allowance, so a larger allowance fails this test).
        expect(starts.at(-1)! - starts[0]!).toBeLessThanOrEqual(
          ((total - 1) / perSecond) * 1000 * 1.05 + 6,
        );
      },
    );
  });

  it.each([7, 60, 300, 5000])(
    'keeps the limit of %i a second even when timers fire 20 ms late',
    async (perSecond) => {
      const starts = await startTimes(perSecond, 20, Math.min(3 * perSecond + 5, 4000));
      expect(busiestWindow(starts, 1000)).toBeLessThanOrEqual(perSecond);
    },
  );

  describe.each([0, 2.5, 3.9, 20])('over a five-second window, timers %s ms late', (lateMs) => {
    it.each([1, 20, 60, 300])(
      'starts at most 5 × %i requests in any five seconds, at 99.0% of the rate',
      async (perSecond) => {
        const total = Math.min(20 * perSecond + 5, 6000);
        const starts = await startTimes(perSecond, lateMs, total, 5);
        expect(busiestWindow(starts, 5000)).toBeLessThanOrEqual(5 * perSecond);
        if (lateMs > 3.9) return; // very late timers only must not break the limit
        // The allowance is spread over five seconds: the run takes 1.01× its ideal time, where a
        // one-second window takes 1.05× (the case above).
        const span = starts.at(-1)! - starts[0]!;
        expect(span).toBeLessThanOrEqual(((total - 1) / perSecond) * 1000 * 1.01 + 6);
        expect(span).toBeGreaterThanOrEqual(((total - 1) / perSecond) * 1000);
      },
    );
  });

  it('refuses a window under one second', () => {
    expect(
      () => new RequestLimiter({ maxPerSecond: 60, windowSeconds: 0.5, maxConcurrent: 1 }),
    ).toThrow(RangeError);
  });

  it('never has more than maxConcurrent in flight, and starts them first come, first served', async () => {
    const limiter = new RequestLimiter({ maxPerSecond: 1e9, maxConcurrent: 3 });
    let inFlight = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        limiter.schedule(async () => {
          order.push(index);
          inFlight++;
          most = Math.max(most, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 1));
          inFlight--;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(order).toEqual(Array.from({ length: 30 }, (_, index) => index));
  });

  it('frees the place of a task that fails', async () => {
    const limiter = new RequestLimiter({ maxPerSecond: 1e9, maxConcurrent: 1 });
    await expect(limiter.schedule(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.schedule(() => Promise.resolve('next'))).resolves.toBe('next');
    expect(limiter.inFlight).toBe(0);
  });

  it('drops a queued request whose signal aborts, and runs the ones behind it', async () => {
    const limiter = new RequestLimiter({ maxPerSecond: 1e9, maxConcurrent: 1 });
    let release: (() => void) | undefined;
    const first = limiter.schedule(() => new Promise<void>((resolve) => (release = resolve)));
    const controller = new AbortController();
    const second = limiter
      .schedule(() => Promise.resolve('second'), controller.signal)
      .catch((error: unknown) => error);
    const third = limiter.schedule(() => Promise.resolve('third'));
    controller.abort();
    while (release === undefined) await new Promise((resolve) => setImmediate(resolve));
    release();
    await first;
    expect(await second).toBeInstanceOf(LimiterAbortedError);
    await expect(third).resolves.toBe('third');
    expect(limiter.waiting).toBe(0);
  });
});

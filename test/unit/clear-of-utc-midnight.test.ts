import { afterEach, describe, expect, it, vi } from 'vitest';
import { clearOfUtcMidnight } from '../support/utc-days.js';

const at = (iso: string) => () => Date.parse(iso);

describe('clearOfUtcMidnight (tests that take "today" once)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('does not wait when midnight is further away than the margin', async () => {
    expect(await clearOfUtcMidnight(60_000, at('2026-11-25T23:58:59.000Z'))).toBe(0);
    expect(await clearOfUtcMidnight(60_000, at('2026-11-25T00:00:00.000Z'))).toBe(0);
  });

  it('waits until a second past midnight when it is within the margin', async () => {
    vi.useFakeTimers();
    let done = false;
    const waited = clearOfUtcMidnight(60_000, at('2026-11-25T23:59:30.000Z')).then((ms) => {
      done = true;
      return ms;
    });
    await vi.advanceTimersByTimeAsync(30_999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await waited).toBe(31_000);
  });
});

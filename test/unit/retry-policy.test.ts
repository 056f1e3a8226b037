import { describe, expect, it } from 'vitest';
import { computeRetryDelayMs, parseRetryAfter } from '../../src/api/retry-policy.js';

const policy = { baseDelayMs: 500, maxDelayMs: 20_000 };

describe('computeRetryDelayMs', () => {
  it('doubles per retry, between half and all of the step', () => {
    expect([1, 2, 3, 4].map((n) => computeRetryDelayMs(n, policy, 0))).toEqual([
      250, 500, 1000, 2000,
    ]);
    expect([1, 2, 3, 4].map((n) => computeRetryDelayMs(n, policy, 0.999999))).toEqual([
      500, 1000, 2000, 4000,
    ]);
  });
  it('is capped', () => {
    expect(computeRetryDelayMs(30, policy, 0.999999)).toBe(20_000);
    expect(computeRetryDelayMs(30, policy, 0)).toBe(10_000);
  });
  it('never comes back sooner than Retry-After asks', () => {
    expect(computeRetryDelayMs(1, policy, 0, 7)).toBe(7000);
    expect(computeRetryDelayMs(6, policy, 0.999999, 1)).toBe(16_000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('3', now)).toBe(3);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:00:05 GMT', now)).toBe(5);
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
  });
});

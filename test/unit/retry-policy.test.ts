import { describe, expect, it } from 'vitest';
import {
  capRetryAfter,
  computeRetryDelayMs,
  isRetryableFailure,
  parseRetryAfter,
  RETRY_AFTER_MAX_SECONDS,
} from '../../src/api/retry-policy.js';
import { clampTimerMs, sleep, TIMER_MAX_MS } from '../../src/util/sleep.js';

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

describe('Retry-After past all reason (hostile input)', () => {
  it('is capped at 120 s by default; what was asked stays readable', () => {
    expect(RETRY_AFTER_MAX_SECONDS).toBe(120);
    expect(capRetryAfter(parseRetryAfter('3600', 0), RETRY_AFTER_MAX_SECONDS)).toBe(120);
    expect(capRetryAfter(parseRetryAfter('99999999', 0), 120)).toBe(120);
    expect(capRetryAfter(parseRetryAfter('9'.repeat(400), 0), 120)).toBe(120);
    expect(capRetryAfter(7, 120)).toBe(7);
    expect(capRetryAfter(undefined, 120)).toBeUndefined();
  });

  it('never gives a timer more than it holds', () => {
    expect(clampTimerMs(99_999_999_000)).toBe(TIMER_MAX_MS);
    expect(clampTimerMs(Number.POSITIVE_INFINITY)).toBe(TIMER_MAX_MS);
    expect(clampTimerMs(Number.NaN)).toBe(0);
    expect(clampTimerMs(-5)).toBe(0);
  });

  it('sleep longer than a timer holds does not fire early (no 1 ms busy loop)', async () => {
    const controller = new AbortController();
    let settled = false;
    const waiting = sleep(99_999_999_000, controller.signal).then(
      () => (settled = true),
      () => 'aborted',
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    controller.abort(new Error('stop'));
    expect(await waiting).toBe('aborted');
  });
});

describe('isRetryableFailure', () => {
  const cases = [
    { kind: 'http', status: 429, sent: true },
    { kind: 'http', status: 502, sent: true },
    { kind: 'http', status: 503, sent: true },
    { kind: 'network', sent: true },
    { kind: 'timeout', sent: true },
    { kind: 'malformed', status: 200, sent: true },
    { kind: 'network', sent: false },
    { kind: 'timeout', sent: false },
    { kind: 'http', status: 400, sent: true },
    { kind: 'http', status: 302, sent: true },
    { kind: 'too_large', status: 200, sent: true },
  ] as const;

  it('retries a read after a 429, a 5xx, a reset, a timeout or an unreadable answer', () => {
    expect(cases.map((failure) => isRetryableFailure('GET', failure))).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it('retries a POST only after a 429 or a failure before it was sent', () => {
    expect(cases.map((failure) => isRetryableFailure('POST', failure))).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import {
  checkCallbackRetryPolicy,
  DEFAULT_CALLBACK_RETRY,
  planCallbackRetryDelayMs,
} from '../../src/simulator/media/callback-retry.js';

describe('callback retry backoff', () => {
  const policy = { attempts: 6, baseDelayMs: 1000, maxDelayMs: 5000, timeoutMs: 1000 };

  it('doubles from the base, is capped, and draws the upper half of each ceiling', () => {
    expect([1, 2, 3, 4, 5].map((retry) => planCallbackRetryDelayMs(retry, policy, 0))).toEqual([
      500, 1000, 2000, 2500, 2500,
    ]);
    expect(
      [1, 2, 3, 4, 5].map((retry) => planCallbackRetryDelayMs(retry, policy, 0.999999)),
    ).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(planCallbackRetryDelayMs(2, policy, 0.5)).toBe(1500);
  });

  it('keeps the default retries of one callback well inside telesync’s 10-minute window', () => {
    const { attempts, timeoutMs } = DEFAULT_CALLBACK_RETRY;
    let worst = attempts * timeoutMs;
    for (let retry = 1; retry < attempts; retry++)
      worst += planCallbackRetryDelayMs(retry, DEFAULT_CALLBACK_RETRY, 0.999999);
    expect(worst).toBeLessThan(10 * 60_000);
    expect(checkCallbackRetryPolicy(DEFAULT_CALLBACK_RETRY)).toEqual([]);
  });

  it('names every unusable field of a policy', () => {
    const problems = checkCallbackRetryPolicy({
      attempts: 0,
      baseDelayMs: -1,
      maxDelayMs: Number.NaN,
      timeoutMs: 0,
    });
    expect(problems.join('\n')).toMatch(/attempts/);
    expect(problems.join('\n')).toMatch(/baseDelayMs/);
    expect(problems.join('\n')).toMatch(/maxDelayMs/);
    expect(problems.join('\n')).toMatch(/timeoutMs must be more than 0/);
  });
});

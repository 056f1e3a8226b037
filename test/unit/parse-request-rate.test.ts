import { describe, expect, it } from 'vitest';
import { parseRequestRate } from '../../src/domain/parse-request-rate.js';
import { parseRequestBudget } from '../../src/config/parse-request-budget.js';
import { parseRateLimit } from '../../src/simulator/rate-limiter.js';

describe('a request rate as people write it (the budget and the simulator read it alike)', () => {
  it.each([
    ['300/5s', 300, 5_000],
    ['300 / 5 s', 300, 5_000],
    ['60/s', 60, 1_000],
    ['60/1sec', 60, 1_000],
    ['1000/1m', 1_000, 60_000],
    ['1000/2MIN', 1_000, 120_000],
    ['10/500ms', 10, 500],
    ['0/0s', 0, 0],
  ])('reads %s', (text, requests, windowMs) => {
    expect(parseRequestRate(text)).toEqual({ requests, windowMs });
  });

  it.each(['300', '300/5', '300/5h', '-300/5s', '3e2/5s', '300/5.5s', 'fast', '/5s'])(
    'refuses %s',
    (text) => {
      expect(parseRequestRate(text)).toBeUndefined();
    },
  );

  it('leaves the bounds to each reader: the budget takes whole seconds, the simulator milliseconds', () => {
    expect(parseRequestBudget('10/500ms')).toEqual({
      problem: '"10/500ms": the window must be whole seconds, from 1 s to 60 m',
    });
    expect(parseRateLimit('10/500ms')).toEqual({ requests: 10, windowMs: 500 });
    expect(parseRequestBudget('300/5s')).toEqual({ requests: 300, windowSeconds: 5 });
    expect(parseRateLimit('300/5s')).toEqual({ requests: 300, windowMs: 5_000 });
    expect(parseRateLimit('0/5s')).toBeUndefined();
    expect(parseRateLimit('5/0ms')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import {
  parseRequestBudget,
  parseRequestShare,
  requestsAtShare,
} from '../../src/config/parse-request-budget.js';

describe('the request budget as the service states it', () => {
  it.each([
    ['300/5s', 300, 5],
    ['300 / 5 s', 300, 5],
    ['60/s', 60, 1],
    ['1000/1m', 1000, 60],
    ['1000/2min', 1000, 120],
    ['20/1S', 20, 1],
  ])('reads %s', (text, requests, windowSeconds) => {
    expect(parseRequestBudget(text)).toEqual({ requests, windowSeconds });
  });

  it.each(['300', '300/5', '300/5h', '0/5s', '300/0s', '300/61m', '-300/5s', '3e2/5s', '300/5.5s'])(
    'refuses %s with the form it takes',
    (text) => {
      const parsed = parseRequestBudget(text);
      expect(parsed).toHaveProperty('problem');
      expect((parsed as { problem: string }).problem).toContain(`"${text}"`);
    },
  );
});

describe('the share of the budget telesync uses', () => {
  it.each([
    ['80%', 0.8],
    ['100%', 1],
    ['12.5 %', 0.125],
    ['0.8', 0.8],
    ['1', 1],
    ['.5', 0.5],
  ])('reads %s', (text, share) => {
    expect(parseRequestShare(text)).toBeCloseTo(share, 10);
  });

  it.each(['0%', '0', '101%', '1.5', '80', 'most', '-10%'])('refuses %s', (text) => {
    expect(parseRequestShare(text)).toEqual({
      problem: `"${text}" is not a share above 0% and at most 100%, such as 80% or 0.8 (100% uses the whole budget)`,
    });
  });

  it('gives whole requests per window, never none', () => {
    const budget = { requests: 300, windowSeconds: 5 };
    expect(requestsAtShare(budget, 0.8)).toBe(240);
    expect(requestsAtShare(budget, 1)).toBe(300);
    // 0.29 × 300 is 86.99999… as a float: still 87.
    expect(requestsAtShare(budget, 0.29)).toBe(87);
    expect(requestsAtShare(budget, 0.001)).toBe(1);
  });
});

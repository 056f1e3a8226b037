import { describe, expect, it } from 'vitest';
import { accountConcurrencyByRule } from '../../bench/multi-account.js';

describe("benchmark 7's TELESYNC_ACCOUNT_CONCURRENCY (the README's sizing rule)", () => {
  it('is one and a half times the write ceiling ÷ one account’s ceiling, rounded', () => {
    expect(accountConcurrencyByRule(21_064, 1_200, 50)).toBe(26);
    expect(accountConcurrencyByRule(30_088, 1_200, 50)).toBe(38);
  });

  it('never more than the accounts or the setting’s maximum, never fewer than one', () => {
    expect(accountConcurrencyByRule(30_088, 1_200, 10)).toBe(10);
    expect(accountConcurrencyByRule(1_000_000, 1_200, 500)).toBe(64);
    expect(accountConcurrencyByRule(100, 1_200, 50)).toBe(1);
  });
});

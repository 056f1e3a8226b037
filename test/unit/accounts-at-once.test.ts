import { describe, expect, it } from 'vitest';
import { accountsAtOnce } from '../../bench/multi-account.js';

describe("benchmark 7's accounts at once (the README's sizing rule)", () => {
  it('is the write ceiling ÷ one account’s ceiling, rounded', () => {
    expect(accountsAtOnce(21_064, 1_200, 50)).toBe(18);
    expect(accountsAtOnce(30_088, 1_200, 50)).toBe(25);
  });

  it('never more than the accounts or the setting’s maximum, never fewer than one', () => {
    expect(accountsAtOnce(30_088, 1_200, 10)).toBe(10);
    expect(accountsAtOnce(1_000_000, 1_200, 500)).toBe(64);
    expect(accountsAtOnce(100, 1_200, 50)).toBe(1);
  });
});

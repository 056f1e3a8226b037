import { evenWaveWidth } from '../../src/util/even-wave-width.js';
import { describe, expect, it } from 'vitest';
import {
  accountsMemoryAllows,
  autoAccountConcurrency,
} from '../../src/config/auto-account-concurrency.js';

describe('the automatic accounts at once (TELESYNC_ACCOUNT_CONCURRENCY=auto)', () => {
  const at = (accounts: number, batchSize = 2_000, maxAccounts = 64) =>
    autoAccountConcurrency({ accounts, batchSize, maxAccounts });

  it('works on every account at once, within memory: each waits on its own budget', () => {
    expect(at(1)).toBe(1);
    expect(at(10)).toBe(10);
    expect(at(30)).toBe(30);
    // Fifty go at once: waves of 25 could read no faster than 25 accounts' budgets.
    expect(at(50)).toBe(50);
    expect(evenWaveWidth(50, at(50))).toBe(50);
    expect(at(300)).toBe(accountsMemoryAllows(2_000));
  });

  it('holds to what memory allows at the batch size, and to the most the setting takes', () => {
    expect(accountsMemoryAllows(2_000)).toBe(57);
    expect(at(300, 20_000)).toBe(6);
    expect(at(300, 500, 20)).toBe(20);
  });

  it('is never below one: a process with no account configured, or batches too large for memory', () => {
    expect(at(0)).toBe(1);
    expect(at(10, 1_000_000)).toBe(1);
  });
});

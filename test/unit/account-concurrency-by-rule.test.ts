import { describe, expect, it } from 'vitest';
import { accountConcurrencyByRule } from '../../bench/multi-account.js';
import { evenWaveWidth } from '../../src/util/even-wave-width.js';

describe("benchmark 7's TELESYNC_ACCOUNT_CONCURRENCY (docs/scaling.md's sizing rule)", () => {
  it('is twice the write ceiling ÷ one account’s ceiling, rounded', () => {
    expect(accountConcurrencyByRule(19_486, 1_200, 50)).toBe(32);
    expect(accountConcurrencyByRule(21_064, 1_200, 50)).toBe(35);
    expect(accountConcurrencyByRule(30_088, 1_200, 100)).toBe(50);
  });

  it('gives every even wave of fifty accounts at least the accounts the writer needs', () => {
    for (let ceiling = 12_000; ceiling <= 40_000; ceiling += 500) {
      const atOnce = evenWaveWidth(50, accountConcurrencyByRule(ceiling, 1_200, 50));
      const lastWave = 50 - (Math.ceil(50 / atOnce) - 1) * atOnce;
      expect(lastWave).toBeGreaterThanOrEqual(Math.min(50, Math.floor(ceiling / 1_200)));
    }
  });

  it('never more than the accounts or the setting’s maximum, never fewer than one', () => {
    expect(accountConcurrencyByRule(30_088, 1_200, 10)).toBe(10);
    expect(accountConcurrencyByRule(1_000_000, 1_200, 500)).toBe(64);
    expect(accountConcurrencyByRule(100, 1_200, 50)).toBe(1);
  });
});

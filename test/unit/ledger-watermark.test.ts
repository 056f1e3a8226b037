import { describe, expect, it } from 'vitest';
import { watermarkFromLedger, type LedgerEntry } from '../../src/domain/ledger-entry.js';

const DAY = 86_400_000_000;
const STARTED = 100 * DAY;
const pass = { from: 10 * DAY, startedAt: STARTED };

/** The entry of day `day`: complete and read after the pass started, unless told otherwise. */
function day(day: number, overrides: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    status: 'complete',
    slotStart: day * DAY,
    start: day * DAY,
    coveredEnd: (day + 1) * DAY,
    totalCount: 5,
    readAt: STARTED + 1,
    verifiedAt: null,
    ...overrides,
  };
}

describe('watermarkFromLedger', () => {
  it('is the end of the contiguous confirmed windows from the first window of the pass', () => {
    expect(watermarkFromLedger([day(12), day(10), day(11)], pass)).toBe(13 * DAY);
    expect(watermarkFromLedger([day(10), day(12)], pass)).toBe(11 * DAY);
    expect(watermarkFromLedger([day(11), day(12)], pass)).toBeUndefined();
  });

  it('stops at a window not complete, or not read nor verified since the pass started', () => {
    expect(watermarkFromLedger([day(10), day(11, { status: 'failed' }), day(12)], pass)).toBe(
      11 * DAY,
    );
    expect(watermarkFromLedger([day(10), day(11, { readAt: STARTED - 1 }), day(12)], pass)).toBe(
      11 * DAY,
    );
    expect(
      watermarkFromLedger(
        [day(10), day(11, { readAt: STARTED - 1, verifiedAt: STARTED }), day(12)],
        pass,
      ),
    ).toBe(13 * DAY);
  });

  it('ends at the covered end of a window cut short by the settle lag, and ignores windows before the pass', () => {
    expect(
      watermarkFromLedger([day(9), day(10), day(11, { coveredEnd: 11 * DAY + 5 })], pass),
    ).toBe(11 * DAY + 5);
    expect(watermarkFromLedger([day(9)], pass)).toBeUndefined();
  });
});

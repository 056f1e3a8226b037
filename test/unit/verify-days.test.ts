import { describe, expect, it } from 'vitest';
import { retrievableSinceDay } from '../../src/domain/verify-days.js';
import { parseEpochMicros, type EpochMicros } from '../../src/util/micros.js';

const at = (iso: string): EpochMicros => parseEpochMicros(iso)!;

describe('retrievableSinceDay', () => {
  it('is the UTC day holding the moment 90 days back, to the microsecond', () => {
    expect(retrievableSinceDay(at('2026-11-30T05:00:00Z'))).toBe('2026-09-01');
    expect(retrievableSinceDay(at('2026-11-30T00:00:00Z'))).toBe('2026-09-01');
    expect(retrievableSinceDay(at('2026-11-29T23:59:59.999999Z'))).toBe('2026-08-31');
    // Back across a leap day: 1 March 2028 less 90 days is 2 December 2027.
    expect(retrievableSinceDay(at('2028-03-01T12:00:00Z'))).toBe('2027-12-02');
  });
});

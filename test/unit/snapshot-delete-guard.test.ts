import { describe, expect, it } from 'vitest';
import { refusesDeletion } from '../../src/sync/streams/snapshots.js';

describe('the mass-delete guard of a snapshot', () => {
  it('marks exactly the share it allows, and refuses one row more', () => {
    // A guard of 0.5 over 10 active rows: 5 missing may be marked, 6 may not.
    expect(refusesDeletion({ missing: 5, active: 10 }, 0.5)).toBe(false);
    expect(refusesDeletion({ missing: 6, active: 10 }, 0.5)).toBe(true);
    // Over 1,000 rows at 0.1: 100 marked, 101 refused.
    expect(refusesDeletion({ missing: 100, active: 1_000 }, 0.1)).toBe(false);
    expect(refusesDeletion({ missing: 101, active: 1_000 }, 0.1)).toBe(true);
  });

  it('never refuses a snapshot that misses nothing, and a guard of 0 refuses any miss', () => {
    expect(refusesDeletion({ missing: 0, active: 0 }, 0)).toBe(false);
    expect(refusesDeletion({ missing: 0, active: 10 }, 0)).toBe(false);
    expect(refusesDeletion({ missing: 1, active: 10 }, 0)).toBe(true);
    // A guard of 1 lets every row go (the account emptied for real).
    expect(refusesDeletion({ missing: 10, active: 10 }, 1)).toBe(false);
  });
});

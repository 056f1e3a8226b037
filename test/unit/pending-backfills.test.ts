import { describe, expect, it } from 'vitest';
import {
  findResumedBackfill,
  readPendingBackfills,
  withPendingBackfills,
} from '../../src/sync/pending-backfills.js';
import { MICROS_PER_DAY, MICROS_PER_HOUR, toEpochMicros } from '../../src/util/micros.js';

const day = (text: string) => toEpochMicros(`${text}T00:00:00Z`);

describe('pending backfills', () => {
  const ninety = {
    startedAt: day('2026-11-20'),
    range: { start: day('2026-08-22') + 600_000_000, end: day('2026-11-20') + 5 * MICROS_PER_HOUR },
  };
  const two = {
    startedAt: day('2026-11-20') + MICROS_PER_HOUR,
    range: { start: day('2026-11-18'), end: day('2026-11-20') + 6 * MICROS_PER_HOUR },
  };

  it('round-trip through the cursor, keeping other keys, and read the older single entry', () => {
    const cursor = withPendingBackfills({ other: 1 }, [ninety, two]);
    expect(cursor.other).toBe(1);
    expect(readPendingBackfills(cursor)).toEqual([ninety, two]);
    const older = { backfill: (withPendingBackfills({}, [ninety]).backfills as unknown[])[0] };
    expect(readPendingBackfills(older)).toEqual([ninety]);
    expect(withPendingBackfills({ ...older, other: 1 }, [])).toEqual({ other: 1 });
  });

  it('resume only the one over the same slots', () => {
    const later = {
      start: ninety.range.start + 2 * MICROS_PER_HOUR,
      end: ninety.range.end + MICROS_PER_HOUR,
    };
    expect(findResumedBackfill([two, ninety], later, MICROS_PER_DAY)).toBe(ninety);
    const nextDay = { start: later.start + MICROS_PER_DAY, end: later.end + MICROS_PER_DAY };
    expect(findResumedBackfill([two, ninety], nextDay, MICROS_PER_DAY)).toBeUndefined();
    const other = { start: day('2026-11-19'), end: two.range.end };
    expect(findResumedBackfill([ninety], other, MICROS_PER_DAY)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import {
  createCallTimeline,
  endMicrosAt,
  endSecondsAt,
  firstIndexEndingAtOrAfter,
  indexRangeEndingWithin,
  type CallTimeline,
} from '../../src/simulator/data/call-timeline.js';
import { MICROS_PER_DAY, MICROS_PER_SECOND, toEpochMicros } from '../../src/util/micros.js';

const ANCHOR = toEpochMicros('2024-06-01T12:00:00.250000Z');

function timeline(calls: number, days: number): CallTimeline {
  return createCallTimeline({ anchorMicros: ANCHOR, days, calls, jitterKey: 0xabcdef });
}

describe('call timeline', () => {
  it('spreads `calls` calls over the `days` before the anchor, then keeps the same rate', () => {
    const t = timeline(1_000, 10);
    const start = ANCHOR - 10 * MICROS_PER_DAY;
    expect(endMicrosAt(t, 0)).toBeGreaterThanOrEqual(start - MICROS_PER_SECOND);
    expect(endMicrosAt(t, 999)).toBeLessThanOrEqual(ANCHOR);
    expect(endMicrosAt(t, 1_000)).toBeGreaterThan(ANCHOR - MICROS_PER_SECOND);
    // Ten more days of live traffic hold about as many calls again.
    const later = indexRangeEndingWithin(t, ANCHOR + 1, ANCHOR + 10 * MICROS_PER_DAY);
    expect(later.to - later.from).toBeGreaterThan(990);
    expect(later.to - later.from).toBeLessThan(1_010);
  });

  it('never goes back in time, in whole seconds, whether slots are wide or narrower than a second', () => {
    for (const t of [timeline(500, 1), timeline(400_000, 1)]) {
      let previous = -Infinity;
      for (let index = 0; index < 5_000; index++) {
        const end = endMicrosAt(t, index);
        expect(end % MICROS_PER_SECOND).toBe(0);
        expect(end).toBeGreaterThanOrEqual(previous);
        previous = end;
      }
    }
  });

  it('finds the same index ranges as a brute-force count', () => {
    for (const t of [timeline(300, 1), timeline(200_000, 1)]) {
      const ends = Array.from({ length: 3_000 }, (_, index) => endMicrosAt(t, index));
      const first = ends[0] as number;
      const last = ends[ends.length - 1] as number;
      const probes = [first - 10 * MICROS_PER_SECOND, first, first + 1, last - 1];
      for (let k = 0; k < 60; k++) probes.push(first + Math.floor(((last - first) * k) / 60) + k);
      for (const at of probes) {
        const expected = ends.findIndex((end) => end >= at);
        expect(firstIndexEndingAtOrAfter(t, at)).toBe(expected);
      }
      for (let k = 0; k < 40; k++) {
        const lower = first + Math.floor(((last - first) * k) / 80);
        const upper = lower + (k + 1) * 977_000;
        const range = indexRangeEndingWithin(t, lower, upper);
        const brute = ends.filter((end) => end >= lower && end <= upper).length;
        expect(range.to - range.from).toBe(brute);
        expect(endMicrosAt(t, range.from)).toBeGreaterThanOrEqual(lower);
      }
    }
  });

  it('stays exact for indices whose slot arithmetic exceeds 2^53', () => {
    const t = timeline(100_000_000, 365);
    const index = 2 ** 33;
    expect(endSecondsAt(t, index + 1)).toBeGreaterThanOrEqual(endSecondsAt(t, index));
    expect(firstIndexEndingAtOrAfter(t, endMicrosAt(t, index))).toBeLessThanOrEqual(index);
    expect(firstIndexEndingAtOrAfter(t, endMicrosAt(t, index) + 1)).toBeGreaterThan(index);
  });

  it('has no calls at all when calls is 0', () => {
    const t = timeline(0, 90);
    expect(indexRangeEndingWithin(t, ANCHOR - MICROS_PER_DAY, ANCHOR)).toEqual({ from: 0, to: 0 });
  });
});

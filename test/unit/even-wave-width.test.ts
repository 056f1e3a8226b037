import { describe, expect, it } from 'vitest';
import { evenWaveWidth } from '../../src/util/even-wave-width.js';

describe('evenWaveWidth', () => {
  it('splits runs into waves of equal width instead of full waves and a small last one', () => {
    expect(evenWaveWidth(50, 20)).toBe(17); // 17, 17, 16 — not 20, 20, 10
    expect(evenWaveWidth(50, 26)).toBe(25); // two waves of 25, not 26 and 24
    expect(evenWaveWidth(21, 20)).toBe(11); // 11 and 10 — not 20 and 1
    expect(evenWaveWidth(100, 64)).toBe(50);
  });

  it('keeps the limit when the waves are even already, and never goes above it', () => {
    expect(evenWaveWidth(40, 20)).toBe(20);
    expect(evenWaveWidth(60, 20)).toBe(20);
    for (let count = 1; count <= 200; count++) {
      for (let limit = 1; limit <= 64; limit++) {
        const width = evenWaveWidth(count, limit);
        expect(width).toBeLessThanOrEqual(Math.min(count, limit));
        // The same number of waves as `limit` at once would take.
        expect(Math.ceil(count / width)).toBe(Math.ceil(count / limit));
      }
    }
  });

  it('runs everything at once when it fits, and at least one', () => {
    expect(evenWaveWidth(10, 20)).toBe(10);
    expect(evenWaveWidth(1, 4)).toBe(1);
    expect(evenWaveWidth(0, 4)).toBe(1);
    expect(evenWaveWidth(5, 0)).toBe(1);
  });
});

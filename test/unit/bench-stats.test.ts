import { describe, expect, it } from 'vitest';
import { median, medianBy } from '../../bench/support/stats.js';

describe('medianBy', () => {
  const runs = [{ rate: 24_714 }, { rate: 21_207 }, { rate: 22_928 }];

  it('picks the run whose figure is the median, whatever the order', () => {
    expect(medianBy(runs, (run) => run.rate)).toBe(runs[2]);
    expect(medianBy([...runs].reverse(), (run) => run.rate)).toBe(runs[2]);
    expect(medianBy(runs, (run) => run.rate)?.rate).toBe(median(runs.map((run) => run.rate)));
  });

  it('takes the lower middle of an even count, and nothing of none', () => {
    expect(
      medianBy([{ rate: 3 }, { rate: 1 }, { rate: 4 }, { rate: 2 }], (run) => run.rate),
    ).toEqual({
      rate: 2,
    });
    expect(medianBy([], (run: { rate: number }) => run.rate)).toBeUndefined();
  });
});

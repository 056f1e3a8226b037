import { describe, expect, it } from 'vitest';
import { adjacentStretches } from '../../src/cli/backfill-command.js';

describe('adjacentStretches (a queued backfill job per account and stretch)', () => {
  it('merges windows that follow each other, and keeps a gap as two stretches', () => {
    const day = 86_400_000_000;
    const windows = [0, 1, 2, 4, 5].map((index) => ({
      start: index * day,
      end: (index + 1) * day,
    }));
    expect(adjacentStretches(windows)).toEqual([
      { start: 0, end: 3 * day },
      { start: 4 * day, end: 6 * day },
    ]);
    expect(adjacentStretches([])).toEqual([]);
  });
});

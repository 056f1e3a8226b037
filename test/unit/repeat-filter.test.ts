import { describe, expect, it } from 'vitest';
import { heldBackNote, RepeatFilter } from '../../src/util/repeat-filter.js';

describe('RepeatFilter', () => {
  it('lets the first of a burst through, holds the rest, and counts them on the next one said', () => {
    let now = 1_000;
    const filter = new RepeatFilter(10_000, () => now);
    expect(filter.pass('Connection terminated')).toBe(0);
    now += 10;
    expect(filter.pass('Connection terminated')).toBeUndefined();
    expect(filter.pass('Connection terminated')).toBeUndefined();
    // Another message is its own.
    expect(filter.pass('timeout')).toBe(0);
    now += 9_989;
    expect(filter.pass('Connection terminated')).toBeUndefined();
    now += 1;
    expect(filter.pass('Connection terminated')).toBe(3);
    now += 20_000;
    expect(filter.pass('Connection terminated')).toBe(0);
  });

  it('notes what was held back, and nothing when nothing was', () => {
    expect(heldBackNote(0)).toBe('');
    expect(heldBackNote(4)).toBe(' (4 more like it since)');
  });
});

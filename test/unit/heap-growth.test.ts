import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, heapGrowthFlag } from '../../src/cli/heap-growth.js';

describe('heapGrowthFlag', () => {
  it('limits the growth of the old generation when node was started without a choice', () => {
    expect(heapGrowthFlag([])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(heapGrowthFlag(['--enable-source-maps', '--max-old-space-size=512'])).toBe(
      `--heap-growing-percent=${HEAP_GROWING_PERCENT}`,
    );
  });

  it('keeps the choice of whoever started node, in either spelling', () => {
    expect(heapGrowthFlag(['--heap-growing-percent=200'])).toBeUndefined();
    expect(heapGrowthFlag(['--heap_growing_percent=10'])).toBeUndefined();
  });
});

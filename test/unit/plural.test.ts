import { describe, expect, it } from 'vitest';
import { plural } from '../../src/cli/plural.js';

describe('plural', () => {
  it.each([
    [0, 'request', '0 requests'],
    [1, 'request', '1 request'],
    [2, 'account', '2 accounts'],
    [1_200, 'window', '1,200 windows'],
  ])('%d %s: %s', (count, noun, text) => {
    expect(plural(count, noun)).toBe(text);
  });

  it('takes an irregular plural', () => {
    expect(plural(3, 'entry', 'entries')).toBe('3 entries');
  });
});

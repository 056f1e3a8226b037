import { describe, expect, it } from 'vitest';
import { parsePgInt8Text, parsePgTimestampText } from '../../src/db/type-parsers.js';

describe('parsePgTimestampText', () => {
  it.each([
    ['2022-03-29 05:40:29.456727+00', '2022-03-29T05:40:29.456727Z'],
    ['2022-03-29 05:40:29+00', '2022-03-29T05:40:29Z'],
    ['2022-03-29 05:40:29.1+00', '2022-03-29T05:40:29.1Z'],
    ['2022-03-29 11:10:29.456727+05:30', '2022-03-29T11:10:29.456727+05:30'],
    ['2022-03-29 01:10:29-04', '2022-03-29T01:10:29-04:00'],
    ['1890-01-01 00:00:00+00:19:32', '1890-01-01T00:00:00+00:19:32'],
    ['2022-03-29 05:40:29.456727', '2022-03-29T05:40:29.456727'],
    ['infinity', 'infinity'],
    ['-infinity', '-infinity'],
    ['0044-03-15 12:00:00+00 BC', '0044-03-15 12:00:00+00 BC'],
  ])('%s → %s', (input, expected) => {
    expect(parsePgTimestampText(input)).toBe(expected);
  });
});

describe('parsePgInt8Text', () => {
  it('reads counts as numbers', () => {
    expect(parsePgInt8Text('0')).toBe(0);
    expect(parsePgInt8Text('-42')).toBe(-42);
    expect(parsePgInt8Text('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
  });
  it('refuses values a JS number cannot hold exactly', () => {
    expect(() => parsePgInt8Text('9007199254740993')).toThrow(/does not fit/);
  });
});

import { describe, expect, it } from 'vitest';
import { CopyBinary } from '../../src/db/copy-binary.js';
import { binaryRows } from '../support/copy-data.js';

/** A numeric's binary value as [digit count, weight, sign, scale, ...digits]. */
function numericWords(text: string): number[] {
  const copy = new CopyBinary(['numeric']);
  copy.append([text]);
  const bytes = binaryRows(copy)[0]![0]!;
  const words: number[] = [];
  for (let at = 0; at < bytes.length; at += 2) words.push(bytes.readInt16BE(at));
  return words;
}

describe('CopyBinary', () => {
  it('writes a numeric as base-10000 digits around the point, keeping the text’s scale', () => {
    expect(numericWords('0.00850')).toEqual([1, -1, 0, 5, 85]);
    expect(numericWords('-12345.6789')).toEqual([3, 1, 0x4000, 4, 1, 2345, 6789]);
    expect(numericWords('10000')).toEqual([1, 1, 0, 0, 1]);
    expect(numericWords('-0.00')).toEqual([0, 0, 0, 2]);
    expect(() => numericWords('1e5')).toThrow(RangeError);
    expect(() => numericWords('1.')).toThrow(RangeError);
    expect(() => numericWords('1.2.3')).toThrow(RangeError);
  });

  it('writes text as UTF-8, null as length -1, integers and timestamps big-endian', () => {
    const copy = new CopyBinary(['text', 'text', 'text', 'integer', 'timestamptz', 'timestamptz']);
    copy.append(['é☎🙂', 'x'.repeat(70) + 'é', null, -2, '2000-01-01T00:00:01.5Z', 0]);
    const [short, long, absent, integer, time, epoch] = binaryRows(copy)[0]!;
    expect(short!.toString('utf8')).toBe('é☎🙂');
    expect(long!.toString('utf8')).toBe('x'.repeat(70) + 'é');
    expect(absent).toBeNull();
    expect(integer!.readInt32BE()).toBe(-2);
    expect(time!.readBigInt64BE()).toBe(1_500_000n);
    // A timestamp given as epoch microseconds: 1970 is 946,684,800 s before PostgreSQL's epoch.
    expect(epoch!.readBigInt64BE()).toBe(-946_684_800_000_000n);
    expect(() => copy.append(['', '', '', 2 ** 31, 0, 0])).toThrow(RangeError);
    expect(() => copy.append(['', '', '', 0, '2026-02-30T00:00:00Z', 0])).toThrow(RangeError);
  });

  it('picks rows by index and stamps the first timestamp of every row', () => {
    const copy = new CopyBinary(['timestamptz', 'text']);
    for (const label of ['a', 'b', 'c']) copy.append([0, label]);
    const picked = copy.pick([2, 0]);
    picked.overwriteFirstTimestamps(Date.parse('2000-01-01T00:00:00Z') * 1000 + 7);
    expect(
      binaryRows(picked).map(([time, label]) => [time!.readBigInt64BE(), label!.toString()]),
    ).toEqual([
      [7n, 'c'],
      [7n, 'a'],
    ]);
    expect(() => copy.pick([3])).toThrow(RangeError);
  });
});

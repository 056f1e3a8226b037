import { describe, expect, it } from 'vitest';
import { CopyBinary, isoMicros } from '../../src/db/copy-binary.js';

/** The fields of the one row of `copy`, each as its bytes (null for SQL null). */
function onlyRow(copy: CopyBinary): (Buffer | null)[] {
  const data = Buffer.concat(copy.chunks());
  let at = 19 + 2;
  const fields: (Buffer | null)[] = [];
  for (let index = 0; index < data.readInt16BE(19); index++) {
    const length = data.readInt32BE(at);
    at += 4;
    fields.push(length === -1 ? null : data.subarray(at, at + length));
    if (length > 0) at += length;
  }
  expect(data.readInt16BE(at)).toBe(-1);
  return fields;
}

/** A numeric's binary value as [digit count, weight, sign, scale, ...digits]. */
function numericWords(text: string): number[] {
  const copy = new CopyBinary(['numeric']);
  copy.append([text]);
  const bytes = onlyRow(copy)[0]!;
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
  });

  it('writes text as UTF-8, null as length -1, integers and timestamps big-endian', () => {
    const copy = new CopyBinary(['text', 'text', 'text', 'integer', 'timestamptz']);
    copy.append(['é☎🙂', 'x'.repeat(70) + 'é', null, -2, '2000-01-01T00:00:01.5Z']);
    const [short, long, absent, integer, time] = onlyRow(copy);
    expect(short!.toString('utf8')).toBe('é☎🙂');
    expect(long!.toString('utf8')).toBe('x'.repeat(70) + 'é');
    expect(absent).toBeNull();
    expect(integer!.readInt32BE()).toBe(-2);
    expect(time!.readBigInt64BE()).toBe(1_500_000n);
    expect(() => copy.append(['', '', '', 2 ** 31, '2000-01-01T00:00:00Z'])).toThrow(RangeError);
  });

  it('picks rows by index and stamps the first timestamp of every row', () => {
    const copy = new CopyBinary(['timestamptz', 'text']);
    for (const label of ['a', 'b', 'c']) copy.append(['1970-01-01T00:00:00Z', label]);
    const picked = copy.pick([2, 0]);
    picked.overwriteFirstTimestamps(Date.parse('2000-01-01T00:00:00Z') * 1000 + 7);
    const data = Buffer.concat(picked.chunks());
    // Two rows of two fields: 2 + (4 + 8) + (4 + 1) bytes each.
    const rows = [0, 1].map((index) => data.subarray(19 + index * 19, 19 + (index + 1) * 19));
    expect(rows.map((row) => row.readBigInt64BE(6))).toEqual([7n, 7n]);
    expect(rows.map((row) => row.subarray(18).toString())).toEqual(['c', 'a']);
    expect(data.readInt16BE(data.length - 2)).toBe(-1);
  });
});

describe('isoMicros', () => {
  it('reads the loader’s UTC form and any other date-time text to epoch microseconds', () => {
    for (const iso of [
      '2026-08-31T23:59:16Z',
      '1999-12-31T23:59:59.999Z',
      '2024-02-29T00:00:00.1Z',
    ]) {
      expect(isoMicros(iso)).toBe(Date.parse(iso) * 1000);
    }
    expect(isoMicros('2026-08-31T23:59:16.000001Z')).toBe(
      Date.parse('2026-08-31T23:59:16Z') * 1000 + 1,
    );
    expect(isoMicros('2022-03-29 11:10:29.456727+05:30')).toBe(
      Date.parse('2022-03-29T05:40:29.456Z') * 1000 + 727,
    );
    expect(() => isoMicros('2026-02-30T00:00:00Z')).toThrow(RangeError);
    expect(() => isoMicros('yesterday')).toThrow(RangeError);
  });
});

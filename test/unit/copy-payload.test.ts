import { describe, expect, it } from 'vitest';
import { CopyPayload, CopyText, encodeCopyValue } from '../../src/db/copy-payload.js';

describe('encodeCopyValue', () => {
  it.each([
    [null, '\\N'],
    [undefined, '\\N'],
    ['plain', 'plain'],
    ['', ''],
    ['a\tb', 'a\\tb'],
    ['a\nb\r', 'a\\nb\\r'],
    ['back\\slash', 'back\\\\slash'],
    ['\\N', '\\\\N'],
    [42, '42'],
    [true, 't'],
    [false, 'f'],
    [{ a: 'x\ty' }, '{"a":"x\\\\ty"}'],
  ])('%j → %j', (value, expected) => {
    expect(encodeCopyValue(value)).toBe(expected);
  });
});

describe('CopyPayload', () => {
  it('reads from the source it is given, in the format its options name', () => {
    const text = new CopyPayload('"s"."t"', ['"a"'], '1\n');
    expect(text.statement('STDIN')).toBe('COPY "s"."t" ("a") FROM STDIN');
    const binary = new CopyPayload('"s"."t"', ['"a"'], '', [], [], 'FORMAT binary');
    expect(binary.statement("'/dev/blob'")).toBe(
      `COPY "s"."t" ("a") FROM '/dev/blob' WITH (FORMAT binary)`,
    );
  });
});

describe('CopyText', () => {
  /** Lines of many lengths and scripts, some longer than a chunk. */
  function sampleLines(count: number): string[] {
    const lines: string[] = [];
    for (let index = 0; index < count; index++) {
      const width = index % 97 === 0 ? 300_000 + index : (index * 7919) % 3_000;
      const text = index % 3 === 0 ? 'é€😀'.repeat(Math.ceil(width / 4)) : 'x'.repeat(width);
      lines.push(`${index}\t${text}\t\\N`);
    }
    return lines;
  }

  it('holds the rows as UTF-8 lines, across chunk boundaries and rows longer than a chunk', () => {
    const lines = sampleLines(600);
    const text = new CopyText();
    for (const line of lines) text.append(line);
    const expected = `${lines.join('\n')}\n`;
    expect(text.toString().split('\n')).toHaveLength(601);
    expect(text.chunks().length).toBeGreaterThan(2);
    expect(Buffer.concat(text.chunks()).equals(Buffer.from(expected, 'utf8'))).toBe(true);
    expect(text.toString()).toBe(expected);
  });

  it('picks rows by index, in the order asked, whichever chunk they are in', () => {
    const lines = sampleLines(400);
    const text = new CopyText();
    for (const line of lines) text.append(line);
    const indexes = [399, 0, 97, 98, 1, 250, 399];
    const picked = text.pick(indexes);
    expect(picked.toString().split('\n')).toHaveLength(indexes.length + 1);
    expect(picked.toString()).toBe(`${indexes.map((index) => lines[index]).join('\n')}\n`);
    expect(() => text.pick([400])).toThrow(RangeError);
  });

  it('writes a row from its fields exactly as the joined line, the long last field included', () => {
    const rows = sampleLines(500).map((line, index) => [
      ...line.split('\t'),
      index % 5 === 0 ? '' : `{"raw":"${'ü'.repeat(index * 13)}"}`,
    ]);
    const fromFields = new CopyText();
    const fromLines = new CopyText();
    for (const fields of rows) {
      const before = [...fields];
      fromFields.appendFields(fields);
      // The caller's array is its own again afterwards: it is reused for the next row.
      expect(fields).toEqual(before);
      fromLines.append(fields.join('\t'));
    }
    expect(fromFields.chunks().length).toBeGreaterThan(2);
    expect(Buffer.concat(fromFields.chunks()).equals(Buffer.concat(fromLines.chunks()))).toBe(true);
    const single = new CopyText();
    single.appendFields(['only']);
    single.appendFields([]);
    expect(single.toString()).toBe('only\n\n');
  });

  it('overwrites the start of every row, in every chunk, and nothing else', () => {
    const placeholder = '0000';
    const lines = sampleLines(600).map((line) => `${placeholder}\t${line}`);
    const text = new CopyText();
    for (const line of lines) text.append(line);
    text.overwriteRowStarts(Buffer.from('WXYZ', 'latin1'));
    expect(text.chunks().length).toBeGreaterThan(2);
    expect(text.toString()).toBe(`${lines.map((line) => `WXYZ${line.slice(4)}`).join('\n')}\n`);
  });

  it('is empty until a row is added', () => {
    const text = new CopyText();
    expect(text.chunks()).toEqual([]);
    expect(text.toString()).toBe('');
    text.append('');
    expect(text.toString()).toBe('\n');
  });

  it('gives a payload the same bytes as the text it was built from', () => {
    const text = new CopyText();
    text.append('1\ta');
    text.append('2\tö');
    const fromText = new CopyPayload('"s"."t"', ['"a"', '"b"'], text).chunks();
    const fromString = new CopyPayload('"s"."t"', ['"a"', '"b"'], '1\ta\n2\tö\n').chunks();
    expect(Buffer.concat(fromText).equals(Buffer.concat(fromString))).toBe(true);
  });
});

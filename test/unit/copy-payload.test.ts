import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  compileCopy,
  CopyPayload,
  copyPayloadOf,
  encodeCopyValue,
} from '../../src/db/copy-payload.js';

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

describe('copyPayloadOf', () => {
  it('recognises only queries built by compileCopy', () => {
    const payload = new CopyPayload('"s"."t"', ['"a"'], '1\n');
    expect(copyPayloadOf(compileCopy(payload))).toBe(payload);
    expect(copyPayloadOf(CompiledQuery.raw('select $1', ['1\n']))).toBeUndefined();
    expect(compileCopy(payload).sql).toBe('COPY "s"."t" ("a") FROM STDIN');
  });
});

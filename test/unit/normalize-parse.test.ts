import { describe, expect, it } from 'vitest';
import {
  DECIMAL_MAX_LENGTH,
  IDENTIFIER_MAX_LENGTH,
  TEXT_MAX_LENGTH,
  describeValue,
  findUnstorableText,
  orNull,
  parseBoolean,
  parseDecimal,
  parseIdentifier,
  parseInteger,
  parseText,
  parseTimestamp,
  sameJson,
  toStorableText,
  ParseFailure,
  type Parsed,
} from '../../src/normalize/parse.js';
import { formatIsoMicros, formatServiceTime, parseEpochMicros } from '../../src/util/micros.js';

function valueOf<T>(parsed: Parsed<T>): T {
  if (parsed instanceof ParseFailure) {
    throw new Error(`expected a value, got the rejection: ${parsed.reason}`);
  }
  return parsed;
}

function reasonOf(parsed: Parsed<unknown>): string {
  if (!(parsed instanceof ParseFailure)) {
    throw new Error(`expected a rejection, got ${JSON.stringify(parsed)}`);
  }
  return parsed.reason;
}

describe('parseBoolean', () => {
  it.each([
    [true, true],
    [false, false],
    ['true', true],
    ['false', false],
  ])('reads %j as %j', (input, expected) => {
    expect(valueOf(parseBoolean(input))).toBe(expected);
  });

  it.each([['TRUE'], ['False'], ['1'], ['0'], [1], [0], [''], [null], [undefined], [{}], [[]]])(
    'refuses %j',
    (input) => {
      expect(reasonOf(parseBoolean(input))).toMatch(
        /^must be true or false \(a JSON boolean or the text "true" or "false"\); got /,
      );
    },
  );
});

describe('parseDecimal', () => {
  it.each([
    '0',
    '-1',
    '0.00850',
    '0.00850000000001',
    '12.3400000',
    '-0.0',
    '007',
    '123456789012345678901234567890.123456789012345678901234567890',
    '9'.repeat(DECIMAL_MAX_LENGTH),
  ])('keeps %s digit for digit', (input) => {
    expect(valueOf(parseDecimal(input))).toBe(input);
  });

  it.each([
    'abc',
    '1e309',
    '1E5',
    '1e-7',
    'NaN',
    'Infinity',
    '-Infinity',
    '',
    ' 1',
    '1 ',
    '1.',
    '.5',
    '+1',
    '-',
    '--1',
    '1,5',
    '1.2.3',
    '0x10',
    '١٢',
    '1_000',
  ])('refuses the text %j', (input) => {
    expect(reasonOf(parseDecimal(input))).toBe(
      `must be decimal text such as "0.00850" (an optional "-", digits, and optionally "." and digits); got ${describeValue(input)}`,
    );
  });

  it('refuses amounts given as JSON numbers, whose digits may be lost', () => {
    expect(reasonOf(parseDecimal(0.0085))).toBe(
      'must be decimal text such as "0.00850" (an optional "-", digits, and optionally "." and digits), not a JSON number, whose digits may already be lost; got the JSON number 0.0085',
    );
    expect(reasonOf(parseDecimal(1))).toMatch(/not a JSON number/);
    expect(reasonOf(parseDecimal(JSON.parse('1e309')))).toMatch(
      /a JSON number too large to represent$/,
    );
  });

  it.each([[null], [true], [{}], [['1']]])('refuses %j', (input) => {
    expect(reasonOf(parseDecimal(input))).toMatch(/^must be decimal text/);
  });

  it(`refuses decimal text longer than ${DECIMAL_MAX_LENGTH} characters`, () => {
    expect(reasonOf(parseDecimal('9'.repeat(DECIMAL_MAX_LENGTH + 1)))).toMatch(
      /of at most 100 characters; got a text of 101 characters$/,
    );
  });
});

describe('parseInteger', () => {
  it.each([0, 21, -1, 4000, 2_147_483_647, -2_147_483_648])('reads %d', (input) => {
    expect(valueOf(parseInteger(input))).toBe(input);
  });

  it('reads the JSON text 21.0 as 21, the same number', () => {
    expect(valueOf(parseInteger(JSON.parse('21.0')))).toBe(21);
  });

  it.each([
    ['21'],
    [''],
    [1.5],
    [2_147_483_648],
    [-2_147_483_649],
    [Number.MAX_SAFE_INTEGER + 2],
    [JSON.parse('1e309') as number],
    [null],
    [true],
    [{}],
  ])('refuses %j', (input) => {
    expect(reasonOf(parseInteger(input))).toBe(
      `must be a whole JSON number from -2147483648 to 2147483647; got ${describeValue(input)}`,
    );
  });
});

describe('parseText', () => {
  it.each(['', 'abc', 'Normal Hangup', '☎️ emoji pairs 😀', 'x'.repeat(TEXT_MAX_LENGTH)])(
    'keeps %j as it is',
    (input) => {
      expect(valueOf(parseText(input))).toBe(input);
    },
  );

  it.each([[42], [true], [null], [{}], [[]]])('refuses %j', (input) => {
    expect(reasonOf(parseText(input))).toBe(`must be text; got ${describeValue(input)}`);
  });

  it('refuses U+0000, which Postgres text cannot hold', () => {
    expect(reasonOf(parseText('a\u0000b'))).toBe(
      'holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
    );
  });

  it('refuses an unpaired surrogate, which Postgres cannot hold either', () => {
    expect(reasonOf(parseText('a\ud800b'))).toMatch(/^holds an unpaired UTF-16 surrogate/);
    expect(reasonOf(parseText('\udc00'))).toMatch(/unpaired UTF-16 surrogate/);
  });

  it(`refuses text longer than ${TEXT_MAX_LENGTH} characters, such as a 5 MB field`, () => {
    expect(reasonOf(parseText('x'.repeat(TEXT_MAX_LENGTH + 1)))).toBe(
      'must be text of at most 65536 characters; got a text of 65537 characters',
    );
    expect(reasonOf(parseText('x'.repeat(5_000_000)))).toMatch(/got a text of 5000000 characters/);
  });
});

describe('parseIdentifier', () => {
  it('keeps non-empty text', () => {
    expect(valueOf(parseIdentifier('5f3a3c1e-8a7b-4d2e-9f10-2b3c4d5e6f70'))).toBe(
      '5f3a3c1e-8a7b-4d2e-9f10-2b3c4d5e6f70',
    );
    expect(valueOf(parseIdentifier('x'.repeat(IDENTIFIER_MAX_LENGTH)))).toHaveLength(256);
  });

  it.each([[''], [null], [42], [{}]])('refuses %j', (input) => {
    expect(reasonOf(parseIdentifier(input))).toBe(
      `must be non-empty text identifying the record; got ${describeValue(input)}`,
    );
  });

  it('refuses identifiers too long for a primary-key index, and NUL', () => {
    expect(reasonOf(parseIdentifier('x'.repeat(IDENTIFIER_MAX_LENGTH + 1)))).toMatch(
      /at most 256 characters; got a text of 257 characters/,
    );
    expect(reasonOf(parseIdentifier('a\u0000'))).toMatch(/U\+0000/);
  });
});

describe('parseTimestamp', () => {
  it.each([
    // YYYY-MM-DD HH:MM:SS.ffffff+HH:MM (message_time, stream created_at)
    ['2022-03-29 11:10:29.456727+05:30', '2022-03-29T05:40:29.456727Z', 1_648_532_429_456_727],
    // YYYY-MM-DD HH:MM:SS+HH:MM (trunk calls, stream times)
    ['2022-03-29 11:10:29+05:30', '2022-03-29T05:40:29Z', 1_648_532_429_000_000],
    ['2022-03-29 11:10:29+00:00', '2022-03-29T11:10:29Z', 1_648_552_229_000_000],
    ['2022-03-29 11:10:29-00:00', '2022-03-29T11:10:29Z', 1_648_552_229_000_000],
    ['2022-03-29 11:10:29+05:45', '2022-03-29T05:25:29Z', 1_648_531_529_000_000],
    ['2022-03-29 11:10:29-04:00', '2022-03-29T15:10:29Z', 1_648_566_629_000_000],
    ['2022-03-29 11:10:29-09:30', '2022-03-29T20:40:29Z', 1_648_586_429_000_000],
    ['2022-03-29 11:10:29+12:45', '2022-03-28T22:25:29Z', 1_648_506_329_000_000],
    ['2022-03-29 11:10:29-03:30', '2022-03-29T14:40:29Z', 1_648_564_829_000_000],
    ['2022-03-29 11:10:29+15:59', '2022-03-28T19:11:29Z', 1_648_494_689_000_000],
    // +14:00 crosses back over a month end (2022 is not a leap year), and in 2024 onto Feb 29th
    ['2022-03-01 01:00:00+14:00', '2022-02-28T11:00:00Z', 1_646_046_000_000_000],
    ['2024-03-01 01:00:00+14:00', '2024-02-29T11:00:00Z', 1_709_204_400_000_000],
    // -12:00 crosses forward over a year end
    ['2022-12-31 20:00:00-12:00', '2023-01-01T08:00:00Z', 1_672_560_000_000_000],
    ['2024-02-29 23:59:59.999999-00:30', '2024-03-01T00:29:59.999999Z', 1_709_252_999_999_999],
    // ISO 8601 with Z (caller IDs, sender packs)
    ['2022-03-29T05:40:29.456727Z', '2022-03-29T05:40:29.456727Z', 1_648_532_429_456_727],
    ['2022-03-29T05:40:29Z', '2022-03-29T05:40:29Z', 1_648_532_429_000_000],
    ['2022-03-29T11:10:29.456727+05:30', '2022-03-29T05:40:29.456727Z', 1_648_532_429_456_727],
    ['2022-03-29 05:40:29.456727Z', '2022-03-29T05:40:29.456727Z', 1_648_532_429_456_727],
    // a fraction of 1 to 6 digits is that many leading digits of the microseconds
    ['2022-03-29 11:10:29.4+05:30', '2022-03-29T05:40:29.400000Z', 1_648_532_429_400_000],
    ['2022-03-29 11:10:29.45+05:30', '2022-03-29T05:40:29.450000Z', 1_648_532_429_450_000],
    ['2022-03-29 11:10:29.456+05:30', '2022-03-29T05:40:29.456000Z', 1_648_532_429_456_000],
    ['2022-03-29 11:10:29.4567+05:30', '2022-03-29T05:40:29.456700Z', 1_648_532_429_456_700],
    ['2022-03-29 11:10:29.45672+05:30', '2022-03-29T05:40:29.456720Z', 1_648_532_429_456_720],
    ['2022-03-29 11:10:29.000001+05:30', '2022-03-29T05:40:29.000001Z', 1_648_532_429_000_001],
    ['2022-03-29 11:10:29.000000+05:30', '2022-03-29T05:40:29Z', 1_648_532_429_000_000],
    ['2022-03-29 11:10:29.999999+05:30', '2022-03-29T05:40:29.999999Z', 1_648_532_429_999_999],
    // 7 to 9 digits (the service's nanoseconds, A24): the microseconds are kept, the rest dropped
    // (never rounded into the next microsecond); raw keeps every digit
    ['2024-02-09T03:52:22.8800978Z', '2024-02-09T03:52:22.880097Z', 1_707_450_742_880_097],
    ['2024-02-09T03:52:22.88009781Z', '2024-02-09T03:52:22.880097Z', 1_707_450_742_880_097],
    ['2024-02-09T03:52:22.880097813Z', '2024-02-09T03:52:22.880097Z', 1_707_450_742_880_097],
    ['2024-02-09T03:52:22.999999999Z', '2024-02-09T03:52:22.999999Z', 1_707_450_742_999_999],
    ['2024-02-09 09:22:22.000000999+05:30', '2024-02-09T03:52:22Z', 1_707_450_742_000_000],
    // before the epoch, and the edges of the accepted years
    ['1969-12-31 23:59:59.999999+00:00', '1969-12-31T23:59:59.999999Z', -1],
    ['1900-01-01 00:00:00+00:00', '1900-01-01T00:00:00Z', -2_208_988_800_000_000],
    ['2199-12-31 23:59:59.999999+00:00', '2199-12-31T23:59:59.999999Z', 7_258_118_399_999_999],
    // leap days that exist
    ['2000-02-29 12:00:00+00:00', '2000-02-29T12:00:00Z', 951_825_600_000_000],
    ['2024-02-29 00:00:00+01:00', '2024-02-28T23:00:00Z', 1_709_161_200_000_000],
  ])('%s is the instant %s', (input, iso, micros) => {
    const parsed = valueOf(parseTimestamp(input));
    expect(parsed).toBe(micros);
    expect(formatIsoMicros(parsed)).toBe(iso);
  });

  it('reads a time without an offset as UTC only when asked (sip_expires, A18)', () => {
    expect(valueOf(parseTimestamp('2022-03-29 11:40:29', { withoutOffset: 'utc' }))).toBe(
      1_648_554_029_000_000,
    );
    expect(valueOf(parseTimestamp('2022-03-29T11:40:29.5', { withoutOffset: 'utc' }))).toBe(
      1_648_554_029_500_000,
    );
    expect(valueOf(parseTimestamp('2022-03-29 17:10:29+05:30', { withoutOffset: 'utc' }))).toBe(
      1_648_554_029_000_000,
    );
    expect(reasonOf(parseTimestamp('2022-03-29 11:40:29'))).toMatch(
      /\(the UTC offset is missing\)$/,
    );
    expect(reasonOf(parseTimestamp('2022-03-29 11:40:29', { withoutOffset: 'reject' }))).toMatch(
      /the UTC offset is missing/,
    );
  });

  it.each([
    ['2022-02-30 10:00:00+00:00', 'day 30 does not exist in 2022-02'],
    ['2022-02-29 10:00:00+00:00', 'day 29 does not exist in 2022-02'],
    ['1900-02-29 10:00:00+00:00', 'day 29 does not exist in 1900-02'],
    ['2100-02-29 10:00:00+00:00', 'day 29 does not exist in 2100-02'],
    ['2022-04-31 10:00:00+00:00', 'day 31 does not exist in 2022-04'],
    ['2022-03-00 10:00:00+00:00', 'day 0 does not exist in 2022-03'],
    ['2022-13-01 10:00:00+00:00', 'month 13 does not exist'],
    ['2022-00-01 10:00:00+00:00', 'month 0 does not exist'],
    ['2022-03-29 24:00:00+00:00', 'hour 24 is beyond 23'],
    ['2022-03-29 11:60:00+00:00', 'minute 60 is beyond 59'],
    ['2022-03-29 11:10:60+00:00', 'second 60 is beyond 59'],
    ['2022-03-29 11:10:29+25:00', 'UTC offset +25:00 is beyond ±15:59'],
    ['2022-03-29 11:10:29+16:00', 'UTC offset +16:00 is beyond ±15:59'],
    ['2022-03-29 11:10:29+05:60', 'UTC offset +05:60 is beyond ±15:59'],
    [
      '2022-03-29 11:10:29.1234567891+05:30',
      '10 fractional digits, more than the 9 of nanoseconds',
    ],
    ['2022-03-29 11:10:29.+05:30', 'no digits after the decimal point'],
    ['1899-12-31 23:59:59+00:00', 'year 1899 is outside 1900–2199'],
    ['2200-01-01 00:00:00+00:00', 'year 2200 is outside 1900–2199'],
    ['0001-01-01 00:00:00+00:00', 'year 1 is outside 1900–2199'],
  ])('refuses %s (%s)', (input, detail) => {
    expect(reasonOf(parseTimestamp(input))).toBe(
      `must be a timestamp of the form "YYYY-MM-DD HH:MM:SS[.ffffff]+HH:MM" or "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"; got the text "${input}" (${detail})`,
    );
  });

  it.each([
    '2022/03/29 11:10:29+05:30',
    '2022-03-29_11:10:29+05:30',
    '2022-03-29t11:10:29+05:30',
    '2022-03-29 11.10.29+05:30',
    '2022-03-29 11:10:29+0530',
    '2022-03-29 11:10:29+05',
    '2022-03-29 11:10:29 +05:30',
    '2022-03-29 11:10:29+05:30 ',
    ' 2022-03-29 11:10:29+05:30',
    '2022-03-29 11:10:29z',
    '2022-03-29 11:10:29UTC',
    '2022-03-29 11:10:29Z+05:30',
    '2022-03-29 11:10+05:30',
    '2022-3-29 11:10:29+05:30',
    '22-03-29 11:10:29+05:30',
    '2022-03-29',
    '11:10:29',
    '',
    'yesterday',
    '2022-03-29 11:10:29+05:30\u0000',
    '２０22-03-29 11:10:29+05:30',
  ])('refuses the wrong form %j', (input) => {
    expect(reasonOf(parseTimestamp(input))).toBe(
      `must be a timestamp of the form "YYYY-MM-DD HH:MM:SS[.ffffff]+HH:MM" or "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"; got ${describeValue(input)}`,
    );
  });

  it.each([[1_648_532_429], [null], [true], [{}], [['2022-03-29 11:10:29+05:30']]])(
    'refuses %j, which is not text',
    (input) => {
      expect(reasonOf(parseTimestamp(input))).toMatch(/^must be a timestamp of the form .*; got /);
    },
  );

  it('agrees with the Date-based reader of src/util/micros on 5,000 instants in every offset', () => {
    // A small deterministic generator (mulberry32), so a failure is reproducible.
    let seed = 20220329;
    const random = (): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const lowest = parseEpochMicros('1900-01-02T00:00:00Z')!;
    const highest = parseEpochMicros('2199-12-30T00:00:00Z')!;
    for (let i = 0; i < 5000; i++) {
      const micros = lowest + Math.floor(random() * (highest - lowest));
      // Quarter hours from -12:00 to +14:00, which holds every offset in use (+05:45, -09:30 …).
      const offsetMinutes = (Math.floor(random() * 105) - 48) * 15;
      const text = formatServiceTime(micros, offsetMinutes, i % 2 === 0);
      const expected = i % 2 === 0 ? micros : micros - (((micros % 1e6) + 1e6) % 1e6);
      const parsed = valueOf(parseTimestamp(text));
      expect(parsed, text).toBe(expected);
      expect(parseEpochMicros(text), text).toBe(expected);
      // The ISO text names the same instant again, microseconds and all.
      const iso = formatIsoMicros(parsed);
      expect(valueOf(parseTimestamp(iso)), iso).toBe(expected);
    }
  });
});

describe('orNull', () => {
  it('accepts null and hands anything else to the parser', () => {
    const parseDecimalOrNull = orNull(parseDecimal);
    expect(valueOf(parseDecimalOrNull(null))).toBeNull();
    expect(valueOf(parseDecimalOrNull('1.50'))).toBe('1.50');
    expect(parseDecimalOrNull(undefined)).toBeInstanceOf(ParseFailure);
    expect(parseDecimalOrNull('x')).toBeInstanceOf(ParseFailure);
  });
});

describe('findUnstorableText', () => {
  it('finds nothing in a record of ordinary text', () => {
    expect(
      findUnstorableText({ a: 'x', b: [1, 'y', { c: 'z', d: null }], e: { f: ['g'] }, h: 2 }),
    ).toBeUndefined();
  });

  it('finds U+0000 in a value, a nested value, a key and a nested key', () => {
    expect(findUnstorableText({ a: 'ok', b: 'x\u0000' })).toStrictEqual({
      field: 'b',
      reason: 'b holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
    });
    expect(findUnstorableText({ b: { c: [{ d: ['ok', 'x\u0000'] }] } })).toStrictEqual({
      field: 'b',
      reason:
        'b has a nested text that holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
    });
    expect(findUnstorableText({ 'k\u0000': 1 })).toStrictEqual({
      field: '"k\\u0000"',
      reason:
        'the key "k\\u0000" holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
    });
    expect(findUnstorableText({ b: [{ 'n\u0000': 1 }] })?.reason).toBe(
      'b has a nested key "n\\u0000" that holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
    );
  });

  it('finds an unpaired surrogate at any depth', () => {
    expect(findUnstorableText({ a: [[['\ud83d']]] })?.field).toBe('a');
    expect(findUnstorableText({ a: '😀' })).toBeUndefined();
  });

  it('walks a deeply nested record without overflowing the stack', () => {
    let nested: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) nested = [nested];
    expect(findUnstorableText({ deep: nested })?.field).toBe('deep');
  });
});

describe('sameJson', () => {
  it('compares parsed JSON deeply, ignoring key order', () => {
    expect(sameJson({ a: [1, { b: 'c' }], d: null }, { d: null, a: [1, { b: 'c' }] })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJson({ a: 1, b: undefined }, { a: 1, c: undefined })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson('1', 1)).toBe(false);
    expect(sameJson(null, {})).toBe(false);
  });
});

describe('describeValue and toStorableText', () => {
  it('quotes received text escaped and shortened, so a reason is always storable', () => {
    expect(describeValue('a\u0000b')).toBe('the text "a\\u0000b"');
    expect(describeValue('x'.repeat(5_000_000))).toBe(
      `the text "${'x'.repeat(60)}"… (5000000 characters)`,
    );
    expect(describeValue('')).toBe('an empty text');
    expect(describeValue([1, 2])).toBe('an array of 2 elements');
    expect(toStorableText('Unexpected token \u0000 in JSON')).toBe(
      'Unexpected token \\u0000 in JSON',
    );
    expect(toStorableText('y'.repeat(600))).toBe(`${'y'.repeat(500)}…`);
    expect(toStorableText('plain')).toBe('plain');
  });
});

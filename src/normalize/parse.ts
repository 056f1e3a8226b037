import { daysFromCivil, daysInMonth, type EpochMicros } from '../util/micros.js';

/**
 * Field parsers: one received JSON value in, the value to store or the reason it cannot be stored
 * out. Pure, and they never throw for bad input. A reason is the end of a sentence whose subject is
 * the field ("must be decimal text …; got …"): the normaliser puts the field's name in front.
 *
 * Every text a reason quotes goes through JSON.stringify and is shortened, so a reason never holds
 * U+0000, an unpaired surrogate or megabytes of input: it is always storable and readable.
 */

/**
 * The outcome of parsing one value: the value itself, or a ParseFailure. A success is not wrapped:
 * the record reader calls every parser through one call site, where V8 cannot drop a wrapper, and
 * a backfill parses some twenty fields a record (docs/performance.md, "A parsed value is not
 * wrapped"). Told apart by `instanceof ParseFailure`, which holds while no parser stores a
 * ParseFailure as a value: every T here is a text, number, boolean, null or plain structure.
 */
export type Parsed<T> = T | ParseFailure;

/** A value that cannot be stored, and why. */
export class ParseFailure {
  constructor(readonly reason: string) {}
}

/**
 * A parser of one field's value. Its reason follows the field's name: "must be …", or, for a part
 * of a structured value, a path that continues the name: "[0].country_iso must be …".
 */
export type FieldParser<T> = (value: unknown) => Parsed<T>;

/**
 * Longest text a field may hold, in UTF-16 code units (what String#length counts). Real fields are
 * a few hundred characters at most; a field longer than this is a broken record, not data (A25).
 */
export const TEXT_MAX_LENGTH = 65_536;

/**
 * Longest identifier (call_uuid, endpoint_id, …), in UTF-16 code units. Identifiers are primary-key
 * columns, and a btree entry must stay under about 2,700 bytes: 256 units are at most 768 bytes.
 */
export const IDENTIFIER_MAX_LENGTH = 256;

/** Longest decimal text, in characters. Amounts are a few digits; `numeric` holds far more. */
export const DECIMAL_MAX_LENGTH = 100;

/** Integers are stored in Postgres `integer` columns. */
export const INTEGER_MIN = -2_147_483_648;
export const INTEGER_MAX = 2_147_483_647;

/**
 * Years a timestamp may name. Epoch microseconds are exact in a JS number only from 1685 to 2255;
 * the service's records are recent, so a year outside this range is a broken value.
 */
export const TIMESTAMP_YEAR_MIN = 1900;
export const TIMESTAMP_YEAR_MAX = 2199;

/** Largest UTC offset accepted, in hours (Postgres accepts up to ±15:59; real zones stay in ±14). */
export const OFFSET_MAX_HOURS = 15;

/** How many characters of a received text a reason quotes. */
const QUOTE_MAX_LENGTH = 60;

// Node 20 has String#isWellFormed; the ES2023 lib that tsconfig targets does not declare it yet.
const isWellFormedString = (
  String.prototype as unknown as { isWellFormed: (this: string) => boolean }
).isWellFormed;

/** Whether Postgres can store the text (in `text` and in `jsonb`): no U+0000, no lone surrogate. */
function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && isWellFormedString.call(text);
}

/** Why Postgres cannot store the text, or undefined when it can. */
function unstorableTextReason(text: string): string | undefined {
  if (text.includes('\u0000')) {
    return 'holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb';
  }
  if (!isWellFormedString.call(text)) {
    return 'holds an unpaired UTF-16 surrogate (a \\uD800–\\uDFFF escape without its pair), which PostgreSQL cannot store';
  }
  return undefined;
}

/** A received text quoted for a reason: JSON-escaped and shortened. */
export function quoteText(text: string): string {
  return text.length > QUOTE_MAX_LENGTH
    ? `${JSON.stringify(text.slice(0, QUOTE_MAX_LENGTH))}… (${text.length} characters)`
    : JSON.stringify(text);
}

/** A received value described for a reason: `the text "abc"`, `the JSON number 3`, `an object`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return value === '' ? 'an empty text' : `the text ${quoteText(value)}`;
    case 'number':
      return Number.isFinite(value)
        ? `the JSON number ${String(value)}`
        : 'a JSON number too large to represent';
    case 'boolean':
      return `the JSON boolean ${String(value)}`;
    case 'object':
      return Array.isArray(value) ? `an array of ${value.length} elements` : 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/**
 * Text as received (empty text stays empty, assumption A20). Rejects anything that is not a JSON
 * string, text longer than TEXT_MAX_LENGTH, and text Postgres cannot store.
 */
export function parseText(value: unknown): Parsed<string> {
  const parsed = parseCheckedText(value);
  if (parsed instanceof ParseFailure) return parsed;
  const unstorable = unstorableTextReason(parsed);
  return unstorable === undefined ? parsed : new ParseFailure(unstorable);
}

/**
 * parseText for a field of a record `openRecord` has checked whole (RecordReader's fields): every
 * text in it is storable already, so only the type and the length are left to check.
 */
export function parseCheckedText(value: unknown): Parsed<string> {
  if (typeof value !== 'string')
    return new ParseFailure(`must be text; got ${describeValue(value)}`);
  if (value.length > TEXT_MAX_LENGTH) {
    return new ParseFailure(
      `must be text of at most ${TEXT_MAX_LENGTH} characters; got a text of ${value.length} characters`,
    );
  }
  return value;
}

/** Text that names a record (a primary-key column): non-empty, at most IDENTIFIER_MAX_LENGTH. */
export function parseIdentifier(value: unknown): Parsed<string> {
  const parsed = parseCheckedIdentifier(value);
  if (parsed instanceof ParseFailure) return parsed;
  const unstorable = unstorableTextReason(parsed);
  return unstorable === undefined ? parsed : new ParseFailure(unstorable);
}

/** parseIdentifier for a field of a record `openRecord` has checked whole (see parseCheckedText). */
export function parseCheckedIdentifier(value: unknown): Parsed<string> {
  if (typeof value !== 'string' || value === '') {
    return new ParseFailure(
      `must be non-empty text identifying the record; got ${describeValue(value)}`,
    );
  }
  if (value.length > IDENTIFIER_MAX_LENGTH) {
    return new ParseFailure(
      `must be an identifier of at most ${IDENTIFIER_MAX_LENGTH} characters; got a text of ${value.length} characters`,
    );
  }
  return value;
}

/** `true`/`false` as JSON booleans or as the texts "true"/"false". Nothing else. */
export function parseBoolean(value: unknown): Parsed<boolean> {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  return new ParseFailure(
    `must be true or false (a JSON boolean or the text "true" or "false"); got ${describeValue(value)}`,
  );
}

const DECIMAL_FORM = /^-?[0-9]+(?:\.[0-9]+)?$/;
const DECIMAL_EXPECTED =
  'must be decimal text such as "0.00850" (an optional "-", digits, and optionally "." and digits)';

/**
 * Decimal text, returned exactly as received: digits and trailing zeros are kept, nothing goes
 * through a JS number. Amounts must be JSON strings (spec): a JSON number may already have lost
 * digits in transit, so it is refused rather than guessed at.
 */
export function parseDecimal(value: unknown): Parsed<string> {
  if (typeof value !== 'string') {
    return new ParseFailure(
      typeof value === 'number'
        ? `${DECIMAL_EXPECTED}, not a JSON number, whose digits may already be lost; got ${describeValue(value)}`
        : `${DECIMAL_EXPECTED}; got ${describeValue(value)}`,
    );
  }
  if (value.length > DECIMAL_MAX_LENGTH) {
    return new ParseFailure(
      `${DECIMAL_EXPECTED} of at most ${DECIMAL_MAX_LENGTH} characters; got a text of ${value.length} characters`,
    );
  }
  return DECIMAL_FORM.test(value)
    ? value
    : new ParseFailure(`${DECIMAL_EXPECTED}; got ${describeValue(value)}`);
}

/** A JSON integer that fits a Postgres `integer`. Text such as "21" is refused. */
export function parseInteger(value: unknown): Parsed<number> {
  if (
    typeof value === 'number' &&
    Number.isInteger(value) &&
    value >= INTEGER_MIN &&
    value <= INTEGER_MAX
  ) {
    return value;
  }
  return new ParseFailure(
    `must be a whole JSON number from ${INTEGER_MIN} to ${INTEGER_MAX}; got ${describeValue(value)}`,
  );
}

/** What to do with a timestamp that carries no UTC offset. */
export interface TimestampOptions {
  /** 'reject' (the default): an offset is required. 'utc': read a text without one as UTC. */
  readonly withoutOffset?: 'reject' | 'utc';
}

const TIMESTAMP_EXPECTED =
  'must be a timestamp of the form "YYYY-MM-DD HH:MM:SS[.ffffff]+HH:MM" or "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"';
const TIMESTAMP_EXPECTED_UTC =
  'must be a timestamp of the form "YYYY-MM-DD HH:MM:SS" (read as UTC), or one with a UTC offset or Z';

const CHAR_0 = 48;
const CHAR_9 = 57;
const CHAR_T = 84;
const CHAR_Z = 90;
const CHAR_SPACE = 32;
const CHAR_DASH = 45;
const CHAR_PLUS = 43;
const CHAR_COLON = 58;
const CHAR_DOT = 46;

/** Position of the first character after seconds in `YYYY-MM-DD HH:MM:SS`. */
const SECONDS_END = 19;
/** Digits of a fraction accepted: nanoseconds (the service sends up to 9 on caller IDs, A24). */
const FRACTION_MAX_DIGITS = 9;
/** Digits kept: microseconds, what timestamptz holds. Further digits are dropped, not rounded. */
const FRACTION_KEPT_DIGITS = 6;
const FRACTION_SCALE = [1, 100_000, 10_000, 1_000, 100, 10, 1] as const;

/** The two-digit number at `at`, or -1 when either character is not a digit. */
function twoDigits(text: string, at: number): number {
  const a = text.charCodeAt(at) - CHAR_0;
  const b = text.charCodeAt(at + 1) - CHAR_0;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

function timestampFailure(expected: string, text: string, detail?: string): ParseFailure {
  return new ParseFailure(
    `${expected}; got ${describeValue(text)}${detail === undefined ? '' : ` (${detail})`}`,
  );
}

/**
 * A timestamp in any form the spec uses, to the instant it names, in epoch microseconds:
 * - `YYYY-MM-DD HH:MM:SS+HH:MM` (trunk calls, streams, conversation expiry),
 * - `YYYY-MM-DD HH:MM:SS.ffffff+HH:MM` (message_time, stream created_at),
 * - `YYYY-MM-DDTHH:MM:SS.ffffffZ` (ISO 8601 UTC: caller IDs, sender packs),
 * - `YYYY-MM-DD HH:MM:SS` with no offset, only with `{ withoutOffset: 'utc' }` (sip_expires, A18;
 *   trunk call times, which the real service sends without an offset, A38).
 *
 * Either `T` or a space separates date and time; the fraction has 1 to 9 digits or is absent; the
 * offset is `Z` or `±HH:MM` up to ±15:59 (assumption A24). Dates and times must exist: no February
 * 30th, no hour 24, no minute or second 60. Years TIMESTAMP_YEAR_MIN–TIMESTAMP_YEAR_MAX.
 * No Date is involved in reading: every microsecond is kept. Digits beyond the sixth (the service
 * sends nanoseconds on some records) are dropped, not rounded, so the instant never moves into the
 * next microsecond; the row's `raw` keeps them.
 */
export function parseTimestamp(value: unknown, options?: TimestampOptions): Parsed<EpochMicros> {
  const utcWithoutOffset = options?.withoutOffset === 'utc';
  const expected = utcWithoutOffset ? TIMESTAMP_EXPECTED_UTC : TIMESTAMP_EXPECTED;
  if (typeof value !== 'string')
    return new ParseFailure(`${expected}; got ${describeValue(value)}`);
  const text = value;
  if (text.length < SECONDS_END) return timestampFailure(expected, text);
  const century = twoDigits(text, 0);
  const yearOfCentury = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  const separator = text.charCodeAt(10);
  if (
    century < 0 ||
    yearOfCentury < 0 ||
    month < 0 ||
    day < 0 ||
    hour < 0 ||
    minute < 0 ||
    second < 0 ||
    text.charCodeAt(4) !== CHAR_DASH ||
    text.charCodeAt(7) !== CHAR_DASH ||
    (separator !== CHAR_SPACE && separator !== CHAR_T) ||
    text.charCodeAt(13) !== CHAR_COLON ||
    text.charCodeAt(16) !== CHAR_COLON
  ) {
    return timestampFailure(expected, text);
  }

  let at = SECONDS_END;
  let fraction = 0;
  if (text.charCodeAt(at) === CHAR_DOT) {
    const start = ++at;
    while (at < text.length) {
      const code = text.charCodeAt(at);
      if (code < CHAR_0 || code > CHAR_9) break;
      if (at - start < FRACTION_KEPT_DIGITS) fraction = fraction * 10 + (code - CHAR_0);
      at++;
    }
    const digits = at - start;
    if (digits === 0) return timestampFailure(expected, text, 'no digits after the decimal point');
    if (digits > FRACTION_MAX_DIGITS) {
      return timestampFailure(
        expected,
        text,
        `${digits} fractional digits, more than the 9 of nanoseconds`,
      );
    }
    fraction *= FRACTION_SCALE[Math.min(digits, FRACTION_KEPT_DIGITS)]!;
  }

  let offsetMinutes = 0;
  const offsetSign = text.charCodeAt(at);
  if (at === text.length) {
    if (!utcWithoutOffset) return timestampFailure(expected, text, 'the UTC offset is missing');
  } else if (offsetSign === CHAR_Z && at + 1 === text.length) {
    offsetMinutes = 0;
  } else if (
    (offsetSign === CHAR_PLUS || offsetSign === CHAR_DASH) &&
    at + 6 === text.length &&
    text.charCodeAt(at + 3) === CHAR_COLON
  ) {
    const offsetHours = twoDigits(text, at + 1);
    const offsetMins = twoDigits(text, at + 4);
    if (offsetHours < 0 || offsetMins < 0) return timestampFailure(expected, text);
    if (offsetHours > OFFSET_MAX_HOURS || offsetMins > 59) {
      return timestampFailure(
        expected,
        text,
        `UTC offset ${text.slice(at)} is beyond ±${OFFSET_MAX_HOURS}:59`,
      );
    }
    offsetMinutes = (offsetSign === CHAR_DASH ? -1 : 1) * (offsetHours * 60 + offsetMins);
  } else {
    return timestampFailure(expected, text);
  }

  const year = century * 100 + yearOfCentury;
  if (year < TIMESTAMP_YEAR_MIN || year > TIMESTAMP_YEAR_MAX) {
    return timestampFailure(
      expected,
      text,
      `year ${year} is outside ${TIMESTAMP_YEAR_MIN}–${TIMESTAMP_YEAR_MAX}`,
    );
  }
  if (month < 1 || month > 12)
    return timestampFailure(expected, text, `month ${month} does not exist`);
  const monthDays = daysInMonth(year, month);
  if (day < 1 || day > monthDays) {
    return timestampFailure(expected, text, `day ${day} does not exist in ${text.slice(0, 7)}`);
  }
  if (hour > 23) return timestampFailure(expected, text, `hour ${hour} is beyond 23`);
  if (minute > 59) return timestampFailure(expected, text, `minute ${minute} is beyond 59`);
  if (second > 59) return timestampFailure(expected, text, `second ${second} is beyond 59`);

  const seconds =
    daysFromCivil(year, month, day) * 86_400 +
    hour * 3_600 +
    minute * 60 +
    second -
    offsetMinutes * 60;
  return seconds * 1_000_000 + fraction;
}

/** Wraps a parser so that JSON null is accepted as null. */
export function orNull<T>(parse: FieldParser<T>): FieldParser<T | null> {
  return (value) => (value === null ? null : parse(value));
}

/** A problem found by findUnstorableText: the top-level key it was under, and why. */
export interface UnstorableText {
  readonly field: string;
  readonly reason: string;
}

/**
 * Finds the first key or text anywhere in a record that Postgres cannot store (U+0000 or an
 * unpaired surrogate): `raw` is jsonb, so one such character in any field, known or not, at any
 * depth, would make the whole batch's insert fail (A26). Walks the parsed value without copying it.
 */
export function findUnstorableText(
  record: Readonly<Record<string, unknown>>,
): UnstorableText | undefined {
  for (const key in record) {
    const keyProblem = unstorableTextReason(key);
    if (keyProblem !== undefined) {
      return { field: quoteText(key), reason: `the key ${quoteText(key)} ${keyProblem}` };
    }
    const value = record[key];
    if (typeof value === 'string') {
      const problem = unstorableTextReason(value);
      if (problem !== undefined) return { field: key, reason: `${key} ${problem}` };
    } else if (typeof value === 'object' && value !== null) {
      const problem = findUnstorableNested(value);
      if (problem !== undefined) {
        return { field: key, reason: `${key} ${problem.where} ${problem.reason}` };
      }
    }
  }
  return undefined;
}

function findUnstorableNested(root: object): { where: string; reason: string } | undefined {
  // An explicit stack: a deeply nested record must not overflow the call stack.
  const pending: object[] = [root];
  let node: object | undefined;
  while ((node = pending.pop()) !== undefined) {
    if (Array.isArray(node)) {
      for (const item of node as unknown[]) {
        if (typeof item === 'string') {
          const reason = unstorableTextReason(item);
          if (reason !== undefined) return { where: 'has a nested text that', reason };
        } else if (typeof item === 'object' && item !== null) pending.push(item);
      }
      continue;
    }
    const members = node as Record<string, unknown>;
    for (const key in members) {
      const keyReason = unstorableTextReason(key);
      if (keyReason !== undefined) {
        return { where: `has a nested key ${quoteText(key)} that`, reason: keyReason };
      }
      const item = members[key];
      if (typeof item === 'string') {
        const reason = unstorableTextReason(item);
        if (reason !== undefined) return { where: 'has a nested text that', reason };
      } else if (typeof item === 'object' && item !== null) pending.push(item);
    }
  }
  return undefined;
}

/** Deep equality of two parsed JSON values (object key order does not matter). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(right, key) || !sameJson(left[key], right[key])) return false;
  }
  return true;
}

/**
 * Makes any text storable and short, for reasons built from text the normaliser did not write
 * (a JSON.parse message may quote the raw input, NUL included).
 */
export function toStorableText(text: string, maxLength = 500): string {
  const short = text.length > maxLength ? `${text.slice(0, maxLength)}…` : text;
  if (isStorableText(short)) return short;
  // JSON.stringify escapes U+0000 and lone surrogates; drop its surrounding quotes.
  return JSON.stringify(short).slice(1, -1);
}

const WHOLE_NUMBER_TEXT = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * A text field the service may also send as a whole JSON number (a sender pack's
 * `application_id`, A43): a number is stored as its text exactly as written, which `numberText`
 * gives (the record's own digits; JSON.parse would round those past 2^53). Anything but text or a
 * whole number is refused.
 */
export function textOrWholeNumberParser(numberText: () => string | undefined): FieldParser<string> {
  return (value) => {
    if (typeof value !== 'number') return parseText(value);
    const written = numberText() ?? (Number.isSafeInteger(value) ? String(value) : undefined);
    if (written !== undefined && WHOLE_NUMBER_TEXT.test(written)) return written;
    return new ParseFailure(`must be text or a whole JSON number; got ${describeValue(value)}`);
  };
}

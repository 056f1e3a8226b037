import { parseEpochMicros } from '../util/micros.js';
import { RecordJson } from '../util/record-json.js';
import { ByteChunks, type CopyBytes } from './copy-payload.js';

/**
 * Column types a row can be written in for COPY's binary format. The server reads each value by a
 * length and its bytes instead of splitting lines and parsing text: for trunk_calls a sixth less
 * of the loading backend's CPU (docs/performance.md, "`trunk_calls` rows go in by COPY's binary
 * format").
 */
export type BinaryCopyType = 'text' | 'integer' | 'numeric' | 'timestamptz' | 'json';

/** Rows of a batch in COPY binary, as CopyText holds them in text: byte chunks, row by row. */
export class CopyBinary implements CopyBytes {
  readonly #out = new ByteChunks();
  /** Each row's chunk (its index among the filled chunks) and where in it the row starts and ends. */
  readonly #rowChunk: number[] = [];
  readonly #rowStart: number[] = [];
  readonly #rowEnd: number[] = [];

  constructor(
    /** The type of each field of a row, in order. */
    readonly types: readonly BinaryCopyType[],
  ) {}

  /** Adds one row: `values[i]` of `types[i]`; null or undefined is SQL null. */
  append(values: readonly unknown[]): void {
    const types = this.types;
    let room = 2;
    for (let index = 0; index < types.length; index++) {
      room += 4 + maxEncodedBytes(types[index]!, values[index]);
    }
    const out = this.#out;
    const chunk = out.roomFor(room);
    const start = out.used;
    let at = chunk.writeInt16BE(types.length, start);
    for (let index = 0; index < types.length; index++) {
      at = writeField(chunk, at, types[index]!, values[index]);
    }
    this.#rowChunk.push(out.fullCount);
    this.#rowStart.push(start);
    this.#rowEnd.push(at);
    out.used = at;
  }

  get length(): number {
    return this.#rowStart.length;
  }

  /** The rows at `indexes`, in that order, as a CopyBinary of their own. */
  pick(indexes: readonly number[]): CopyBinary {
    const filled = this.#out.filled();
    const picked = new CopyBinary(this.types);
    for (const index of indexes) {
      const chunk = filled[this.#rowChunk[index] ?? -1];
      if (chunk === undefined) throw new RangeError(`no row ${index} in ${this.length}`);
      const start = this.#rowStart[index]!;
      const end = this.#rowEnd[index]!;
      const out = picked.#out;
      const target = out.roomFor(end - start);
      chunk.copy(target, out.used, start, end);
      picked.#rowChunk.push(out.fullCount);
      picked.#rowStart.push(out.used);
      out.used += end - start;
      picked.#rowEnd.push(out.used);
    }
    return picked;
  }

  /**
   * Writes `micros` (epoch microseconds) as the value of every row's first field, which must be a
   * timestamptz written when the row was added (a placeholder): the transaction's stamp, known
   * only when the rows are sent, goes in without copying the rows again.
   */
  overwriteFirstTimestamps(micros: number): void {
    if (this.types[0] !== 'timestamptz') throw new Error('the first field is not a timestamptz');
    const filled = this.#out.filled();
    for (let index = 0; index < this.#rowStart.length; index++) {
      const chunk = filled[this.#rowChunk[index]!]!;
      // The field count (2 bytes) and the first field's length (4) come before its value.
      writeTimestampValue(chunk, this.#rowStart[index]! + 6, micros);
    }
  }

  /** The header, every filled chunk in order, and the trailer. */
  chunks(): Buffer[] {
    return [HEADER, ...this.#out.filled(), TRAILER];
  }
}

/** The signature, no flags, no header extension. */
const HEADER = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);
/** A field count of -1 ends the data. */
const TRAILER = Buffer.from([0xff, 0xff]);

/** The most bytes `value` of `type` takes, its length word not included. */
function maxEncodedBytes(type: BinaryCopyType, value: unknown): number {
  if (value === null || value === undefined) return 0;
  switch (type) {
    case 'integer':
      return 4;
    case 'timestamptz':
      return 8;
    case 'numeric':
      // Eight bytes of header, then at most one base-10000 digit per decimal digit.
      return 8 + 2 * textLength(value);
    case 'text':
      // A UTF-16 code unit is at most three bytes of UTF-8.
      return 3 * textLength(value);
    case 'json':
      if (value instanceof RecordJson) return value.bytes.length;
      return 3 * jsonText(value).length;
  }
}

/** Writes one field, its length word first, at `at`; returns where the next field starts. */
function writeField(chunk: Buffer, at: number, type: BinaryCopyType, value: unknown): number {
  if (value === null || value === undefined) return putInt32(chunk, at, -1);
  const start = at + 4;
  let end: number;
  switch (type) {
    case 'text':
      end = writeUtf8(chunk, start, scalarText(value));
      break;
    case 'integer':
      if (
        !Number.isInteger(value) ||
        (value as number) < INT32_MIN ||
        (value as number) > INT32_MAX
      )
        throw new RangeError(`not a 32-bit integer: ${scalarText(value)}`);
      end = putInt32(chunk, start, value as number);
      break;
    case 'timestamptz':
      end = writeTimestampValue(chunk, start, timestampMicros(value));
      break;
    case 'numeric':
      end = writeNumericValue(chunk, start, scalarText(value));
      break;
    case 'json':
      // json's binary form is its text; the record's bytes as received need no escape here.
      if (value instanceof RecordJson) {
        chunk.set(value.bytes, start);
        end = start + value.bytes.length;
      } else {
        end = writeUtf8(chunk, start, jsonText(value));
      }
      break;
  }
  putInt32(chunk, at, end - start);
  return end;
}

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/** Writes a signed 32-bit integer big-endian; returns the index past it. */
function putInt32(chunk: Buffer, at: number, value: number): number {
  chunk[at] = value >>> 24;
  chunk[at + 1] = (value >>> 16) & 0xff;
  chunk[at + 2] = (value >>> 8) & 0xff;
  chunk[at + 3] = value & 0xff;
  return at + 4;
}

/**
 * Writes `text` as UTF-8; returns the index past it. Most values are short ASCII (identifiers,
 * numbers, names), copied code unit by code unit: cheaper than a call into the encoder per field.
 */
function writeUtf8(chunk: Buffer, at: number, text: string): number {
  const length = text.length;
  if (length <= SHORT_TEXT) {
    for (let i = 0; i < length; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0x80) return at + chunk.write(text, at, 'utf8');
      chunk[at + i] = unit;
    }
    return at + length;
  }
  return at + chunk.write(text, at, 'utf8');
}

/** Longest text copied by hand (writeUtf8); a longer one goes to the encoder in one call. */
const SHORT_TEXT = 64;

function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : scalarText(value).length;
}

/** A row's value as text: a string as it is, a number, bigint or boolean as its digits or word. */
function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  throw new TypeError(`a ${typeof value} cannot be written as a COPY value`);
}

function jsonText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A row's timestamp as epoch microseconds: given so, or as date-time text (a normaliser's ISO 8601
 * in UTC). Text that is no date-time is a programming error, not a record's fault: the normaliser
 * checked the record's text and wrote this one.
 */
function timestampMicros(value: unknown): number {
  if (typeof value === 'number') return value;
  const text = scalarText(value);
  const micros = parseEpochMicros(text);
  if (micros === undefined) throw new RangeError(`not a date-time: ${text}`);
  return micros;
}

/** Microseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z). */
const POSTGRES_EPOCH_MICROS = 946_684_800_000_000;
const TWO_TO_32 = 4_294_967_296;

/** A timestamptz's value: microseconds since PostgreSQL's epoch, a signed 64-bit integer. */
function writeTimestampValue(chunk: Buffer, at: number, epochMicros: number): number {
  if (!Number.isSafeInteger(epochMicros)) {
    throw new RangeError(`a timestamp of ${epochMicros} µs from the epoch cannot be written`);
  }
  const value = epochMicros - POSTGRES_EPOCH_MICROS;
  const high = Math.floor(value / TWO_TO_32);
  putInt32(chunk, at, high);
  return putInt32(chunk, at + 4, value - high * TWO_TO_32);
}

const NUMERIC_NEGATIVE = 0x4000;
const DIGIT_0 = 0x30;

/**
 * A numeric's value from decimal text (`-?digits(.digits)?`, as parseDecimal accepts it): base-10000
 * digits around the point, the weight of the first, its sign, and the display scale, which keeps
 * the text's fraction digits (`0.00850` stays `0.00850`). Leading and trailing zero digits are
 * left out, as the server leaves them out.
 */
function writeNumericValue(chunk: Buffer, at: number, text: string): number {
  const negative = text.charCodeAt(0) === 0x2d;
  const first = negative ? 1 : 0;
  const point = text.indexOf('.');
  const integerEnd = point === -1 ? text.length : point;
  const fractionStart = point === -1 ? text.length : point + 1;
  const scale = text.length - fractionStart;
  if (integerEnd === first || (point !== -1 && scale === 0)) {
    throw new RangeError(`not decimal text: ${text}`);
  }
  // Digit groups of four, aligned on the point: the integer part's first group may be short, the
  // fraction's last one is padded with zeros on the right.
  const integerDigits = integerEnd - first;
  const integerGroups = Math.ceil(integerDigits / 4);
  const groups = integerGroups + Math.ceil(scale / 4);
  const digits: number[] = new Array<number>(groups);
  let group = 0;
  let value = 0;
  let inGroup = 4 - (integerDigits - (integerGroups - 1) * 4);
  for (let i = first; i < text.length; i++) {
    if (i === point) continue;
    value = value * 10 + digitAt(text, i);
    if (++inGroup === 4) {
      digits[group++] = value;
      value = 0;
      inGroup = 0;
    }
  }
  if (inGroup > 0) {
    while (inGroup++ < 4) value *= 10;
    digits[group++] = value;
  }
  let from = 0;
  let to = groups;
  while (from < to && digits[from] === 0) from++;
  while (to > from && digits[to - 1] === 0) to--;
  const count = to - from;
  const weight = count === 0 ? 0 : integerGroups - 1 - from;
  let end = chunk.writeInt16BE(count, at);
  end = chunk.writeInt16BE(weight, end);
  end = chunk.writeUInt16BE(negative && count > 0 ? NUMERIC_NEGATIVE : 0, end);
  end = chunk.writeInt16BE(scale, end);
  for (let index = from; index < to; index++) end = chunk.writeInt16BE(digits[index]!, end);
  return end;
}

function digitAt(text: string, index: number): number {
  const digit = text.charCodeAt(index) - DIGIT_0;
  if (digit < 0 || digit > 9) throw new RangeError(`not decimal text: ${text}`);
  return digit;
}

import { ApiError } from './api-errors.js';
import type { ListMetaWire } from './wire-types.js';

/**
 * Reading response bodies so that every record keeps its exact bytes.
 *
 * JSON.parse alone loses three things telesync needs: the bytes of one record exactly as received
 * (a rejected record is quarantined byte for byte), keys given twice (the message record carries
 * `is_domestic` twice; JSON.parse silently keeps the last), and isolation (one record with invalid
 * UTF-8 or broken JSON must not sink the other nineteen on its page). So a body is first split into
 * records by a single pass over its bytes, then each record is decoded and parsed on its own.
 */

/** One record of a response, as received. */
export interface ReceivedRecord {
  /** The record's bytes exactly as they arrived. */
  readonly bytes: Uint8Array;
  /** The parsed record; undefined when `problem` is set. */
  readonly value: unknown;
  /**
   * The record's text (its bytes decoded as UTF-8); undefined when they are not valid UTF-8.
   * Stored as the row's `raw` jsonb, so numbers keep every digit JSON.parse would round.
   */
  readonly text?: string;
  /** Why the bytes could not be read as JSON (invalid UTF-8, invalid JSON). */
  readonly problem?: string;
  /** Keys given more than once at the top level of the record, with each value in order. */
  readonly duplicateKeys?: Readonly<Record<string, readonly unknown[]>>;
  /**
   * True when the record's bytes hold a `\u` escape PostgreSQL cannot store in jsonb: `\u0000`,
   * or a `\uD800`–`\uDFFF` escape without its pair. Found while the bytes were walked, in every
   * value, a key given twice included (JSON.parse keeps only its last value).
   */
  readonly unstorableEscape?: boolean;
  /**
   * True when the record's bytes hold no backslash and no control character (whitespace between
   * tokens other than spaces): text formats that escape those (COPY) can take the bytes as they are.
   */
  readonly plainBytes?: boolean;
}

/** A list response: the envelope and its records. */
export interface ReceivedList {
  readonly apiId: string | undefined;
  readonly meta: ListMetaWire;
  readonly records: readonly ReceivedRecord[];
}

/**
 * Makes the error a reader throws when a body as a whole is not what a response must be (truncated,
 * not JSON, no `objects` array): an ApiError of kind 'malformed'. The transport hands its readers
 * one that names the request (BodyReader).
 */
export type MalformedBody = (message: string) => ApiError;

/**
 * MalformedBody for a body read outside a request. Usually the connection broke mid-body, so the
 * request is worth retrying.
 */
export const malformedBody: MalformedBody = (message) =>
  new ApiError({
    kind: 'malformed',
    method: '',
    path: '',
    retryable: true,
    serviceMessage: message,
  });

/**
 * Deepest nesting a record may have, the record itself being level 1. Real records nest three
 * levels (a pack's number_priority[].priority). PostgreSQL's jsonb refuses values nested a few
 * thousand levels deep, and a refused value fails its whole batch on every run; so a deeper record
 * is quarantined here, like any unreadable record, and the rest of its page lands.
 */
export const RECORD_MAX_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const LETTER_U = 0x75;
const SPACE = 0x20;

/** The UTF-16 unit of the four hex digits at `at`, or -1 when they are not four hex digits. */
function hexUnit(bytes: Uint8Array, at: number): number {
  let unit = 0;
  for (let i = at; i < at + 4; i++) {
    const byte = bytes[i];
    if (byte === undefined) return -1;
    const digit =
      byte >= 0x30 && byte <= 0x39
        ? byte - 0x30
        : byte >= 0x61 && byte <= 0x66
          ? byte - 0x57
          : byte >= 0x41 && byte <= 0x46
            ? byte - 0x37
            : -1;
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Walks the bytes of one JSON text. The walker checks structure only as far as splitting needs:
 * strings, nesting and separators. Each piece it isolates is then validated by JSON.parse.
 */
class ByteWalker {
  /** Where the last `\u` escape PostgreSQL cannot store begins; -1 while none was walked. */
  lastUnstorableEscape = -1;
  /** Where the last backslash or control character outside a string is; -1 while none was walked. */
  lastEscapeOrControl = -1;

  constructor(
    readonly bytes: Uint8Array,
    readonly malformed: MalformedBody = malformedBody,
  ) {}

  get length(): number {
    return this.bytes.length;
  }

  skipWhitespace(at: number): number {
    let i = at;
    while (i < this.bytes.length && isWhitespace(this.bytes[i]!)) i++;
    return i;
  }

  byteAt(at: number): number | undefined {
    return this.bytes[at];
  }

  /** The index just past the string that opens at `at`. */
  endOfString(at: number): number {
    const bytes = this.bytes;
    let i = at + 1;
    while (i < bytes.length) {
      const byte = bytes[i]!;
      if (byte === BACKSLASH) {
        this.lastEscapeOrControl = i;
        i += bytes[i + 1] === LETTER_U ? this.#unicodeEscape(i) : 2;
      } else if (byte === QUOTE) return i + 1;
      else i++;
    }
    throw this.malformed('the body ends inside a string (truncated?)');
  }

  /**
   * The length of the `\u` escape at `at`, with a surrogate pair's second half: notes it in
   * `lastUnstorableEscape` when it is U+0000 or a surrogate without its pair. Escapes are ASCII,
   * and strict UTF-8 holds no surrogate, so an unpaired one can only come from an escape.
   */
  #unicodeEscape(at: number): number {
    const unit = hexUnit(this.bytes, at + 2);
    if (unit < 0) return 2;
    if (unit === 0 || (unit >= 0xdc00 && unit <= 0xdfff)) {
      this.lastUnstorableEscape = at;
      return 6;
    }
    if (unit < 0xd800 || unit > 0xdbff) return 6;
    const low =
      this.bytes[at + 6] === BACKSLASH && this.bytes[at + 7] === LETTER_U
        ? hexUnit(this.bytes, at + 8)
        : -1;
    if (low >= 0xdc00 && low <= 0xdfff) return 12;
    this.lastUnstorableEscape = at;
    return 6;
  }

  /**
   * The index just past the value that starts at `at`, for an object the number of keys at its
   * top level (colons at depth one, outside strings), and how deeply the value nests (0 for a
   * scalar, 1 for a flat object or array).
   */
  endOfValue(at: number): { end: number; topLevelKeys: number; depth: number } {
    const bytes = this.bytes;
    const first = bytes[at];
    if (first === QUOTE) return { end: this.endOfString(at), topLevelKeys: 0, depth: 0 };
    if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
      let i = at;
      while (i < bytes.length) {
        const byte = bytes[i]!;
        if (byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || isWhitespace(byte))
          break;
        i++;
      }
      if (i === at) throw this.malformed(`a value is missing at byte ${at}`);
      return { end: i, topLevelKeys: 0, depth: 0 };
    }
    let depth = 0;
    let maxDepth = 0;
    let keys = 0;
    let i = at;
    while (i < bytes.length) {
      const byte = bytes[i]!;
      if (byte === QUOTE) {
        i = this.endOfString(i);
        continue;
      }
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        if (++depth > maxDepth) maxDepth = depth;
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) {
          return {
            end: i + 1,
            topLevelKeys: first === OPEN_BRACE ? keys : 0,
            depth: maxDepth,
          };
        }
      } else if (byte === COLON) {
        if (depth === 1) keys++;
      } else if (byte < SPACE) this.lastEscapeOrControl = i;
      i++;
    }
    throw this.malformed('the body ends inside an object or array (truncated?)');
  }

  /**
   * Calls `visit` with the key of every member of the object at `at` and where its value starts.
   * A visitor that walks the value itself returns where it ends, so it is not walked twice;
   * otherwise the walker finds the end. Returns the index just past the object.
   */
  members(at: number, visit: (key: string, start: number) => number | undefined): number {
    if (this.bytes[at] !== OPEN_BRACE) throw this.malformed(`expected an object at byte ${at}`);
    let i = this.skipWhitespace(at + 1);
    if (this.bytes[i] === CLOSE_BRACE) return i + 1;
    for (;;) {
      if (this.bytes[i] !== QUOTE) throw this.malformed(`expected a key at byte ${i}`);
      const keyEnd = this.endOfString(i);
      const key = JSON.parse(decodeStrict(this.bytes.subarray(i, keyEnd))) as string;
      i = this.skipWhitespace(keyEnd);
      if (this.bytes[i] !== COLON) throw this.malformed(`expected ':' at byte ${i}`);
      const valueStart = this.skipWhitespace(i + 1);
      const end = visit(key, valueStart) ?? this.endOfValue(valueStart).end;
      i = this.skipWhitespace(end);
      const next = this.bytes[i];
      if (next === COMMA) i = this.skipWhitespace(i + 1);
      else if (next === CLOSE_BRACE) return i + 1;
      else throw this.malformed(`expected ',' or '}' at byte ${i} (truncated?)`);
    }
  }

  slice(start: number, end: number): Uint8Array {
    return this.bytes.subarray(start, end);
  }
}

function decodeStrict(bytes: Uint8Array): string {
  return strictUtf8.decode(bytes);
}

/** Decodes and parses one record's bytes, finding keys given twice. Never throws. */
function readRecord(walker: ByteWalker, span: RecordSpan): ReceivedRecord {
  // A view, not a copy: most records are dropped once normalised. One kept for quarantine holds
  // its page's body until it is stored (rejected-records-repository copies the bytes then).
  const bytes = walker.slice(span.start, span.end);
  if (span.depth > RECORD_MAX_DEPTH) {
    return { bytes, value: undefined, problem: depthProblem(span.depth) };
  }
  let text: string;
  try {
    text = decodeStrict(bytes);
  } catch {
    return { bytes, value: undefined, problem: 'the record is not valid UTF-8' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      bytes,
      text,
      value: undefined,
      problem: `the record is not valid JSON: ${(error as Error).message}`,
    };
  }
  return parsedRecord(bytes, text, value, span);
}

/**
 * A record whose text parsed to `value`, with its repeated top-level keys when it has some: fewer
 * distinct keys than the `span.keys` the walk counted means a key was given twice, and only then
 * is it worth walking the record again to collect every value of the repeated keys.
 */
function parsedRecord(
  bytes: Uint8Array,
  text: string,
  value: unknown,
  span: RecordSpan,
): ReceivedRecord {
  const record: { -readonly [K in keyof ReceivedRecord]: ReceivedRecord[K] } = {
    bytes,
    text,
    value,
  };
  if (span.unstorableEscape) record.unstorableEscape = true;
  if (span.plainBytes) record.plainBytes = true;
  if (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    ownKeyCount(value) < span.keys
  ) {
    record.duplicateKeys = collectDuplicates(new ByteWalker(bytes));
  }
  return record;
}

/**
 * The keys of a parsed object, counted without making the array Object.keys returns: once per
 * record received, that array was a thirtieth of what a backfill allocated. (JSON.parse makes
 * plain objects, whose enumerable keys are all their own.)
 */
function ownKeyCount(value: object): number {
  let count = 0;
  for (const _key in value) count++;
  return count;
}

function depthProblem(depth: number): string {
  return `the record nests ${depth} levels deep; at most ${RECORD_MAX_DEPTH} are accepted (PostgreSQL's jsonb cannot store much deeper values)`;
}

function collectDuplicates(walker: ByteWalker): Record<string, unknown[]> {
  const valuesByKey = new Map<string, unknown[]>();
  walker.members(walker.skipWhitespace(0), (key, start) => {
    const { end } = walker.endOfValue(start);
    const value = JSON.parse(decodeStrict(walker.slice(start, end))) as unknown;
    const values = valuesByKey.get(key);
    if (values === undefined) valuesByKey.set(key, [value]);
    else values.push(value);
    return end;
  });
  // fromEntries defines own properties, so even a repeated "__proto__" key is kept.
  return Object.fromEntries([...valuesByKey].filter(([, values]) => values.length > 1));
}

/**
 * The JSON number given for the top-level `key` of a record, as its text exactly as written (so
 * `33660394121755210` keeps the digits JSON.parse rounds); undefined when the key is absent, its
 * value is not a number, or the record is not a readable object. Reads the first occurrence of
 * the key, walking the record's bytes as the page was walked.
 */
export function topLevelNumberText(record: ReceivedRecord, key: string): string | undefined {
  if (record.problem !== undefined) return undefined;
  const walker = new ByteWalker(record.bytes);
  const start = walker.skipWhitespace(0);
  if (walker.byteAt(start) !== OPEN_BRACE) return undefined;
  let found: [number, number] | undefined;
  try {
    walker.members(start, (name, valueStart) => {
      if (found !== undefined || name !== key) return undefined;
      const { end } = walker.endOfValue(valueStart);
      found = [valueStart, end];
      return end;
    });
  } catch {
    return undefined;
  }
  if (found === undefined) return undefined;
  const first = walker.byteAt(found[0]);
  if (first === undefined || !(first === MINUS || (first >= DIGIT_0 && first <= DIGIT_9))) {
    return undefined;
  }
  return decodeStrict(walker.slice(found[0], found[1]));
}
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

/** Reads a single-resource body (a message, a sender pack): the whole body is the record. */
export function parseRecordBody(
  body: Uint8Array,
  malformed: MalformedBody = malformedBody,
): ReceivedRecord {
  const walker = new ByteWalker(body, malformed);
  const start = walker.skipWhitespace(0);
  if (start >= walker.length) throw malformed('the body is empty');
  const span = recordSpan(walker, start);
  if (walker.skipWhitespace(span.end) !== walker.length) {
    throw malformed(`unexpected bytes after the record at byte ${span.end}`);
  }
  return readRecord(walker, span);
}

/** Reads a list response: `api_id`, `meta` and each element of `objects` as its own record. */
export function parseListBody(
  body: Uint8Array,
  malformed: MalformedBody = malformedBody,
): ReceivedList {
  const walker = new ByteWalker(body, malformed);
  const start = walker.skipWhitespace(0);
  let apiIdSpan: [number, number] | undefined;
  let metaSpan: [number, number] | undefined;
  let spans: RecordSpan[] | undefined;

  const end = walker.members(start, (key, valueStart) => {
    if (key === 'objects') {
      const objects = recordSpans(walker, valueStart);
      spans = objects.spans;
      return objects.end;
    }
    if (key !== 'meta' && key !== 'api_id') return undefined;
    const valueEnd = walker.endOfValue(valueStart).end;
    if (key === 'meta') metaSpan = [valueStart, valueEnd];
    else apiIdSpan = [valueStart, valueEnd];
    return valueEnd;
  });
  if (walker.skipWhitespace(end) !== walker.length) {
    throw malformed(`unexpected bytes after the response at byte ${end}`);
  }
  if (spans === undefined) throw malformed('the response has no "objects" array');
  if (metaSpan === undefined) throw malformed('the response has no "meta" block');
  const meta = parseMeta(parseSlice(walker, metaSpan[0], metaSpan[1]), malformed);
  const apiIdValue =
    apiIdSpan === undefined ? undefined : parseSlice(walker, apiIdSpan[0], apiIdSpan[1]);
  const apiId = typeof apiIdValue === 'string' ? apiIdValue : undefined;
  return new ListBody(apiId, meta, walker, spans);
}

/**
 * A list response whose envelope is read and whose structure is checked (a truncated body is
 * retried by the transport), but whose records are decoded and parsed only when first asked for.
 * A page may wait behind a loader with no room longer than V8's young generation keeps objects;
 * parsed records would be copied to the old generation to die there, so the body's bytes wait
 * instead, outside the JavaScript heap (docs/performance.md, "Pages not held through the loader's
 * wait").
 */
class ListBody implements ReceivedList {
  #records: readonly ReceivedRecord[] | undefined;
  #walker: ByteWalker | undefined;
  #spans: readonly RecordSpan[] | undefined;

  constructor(
    readonly apiId: string | undefined,
    readonly meta: ListMetaWire,
    walker: ByteWalker,
    spans: readonly RecordSpan[],
  ) {
    this.#walker = walker;
    this.#spans = spans;
  }

  get records(): readonly ReceivedRecord[] {
    if (this.#records === undefined) {
      const walker = this.#walker;
      const spans = this.#spans;
      if (walker === undefined || spans === undefined) throw new Error(TAKEN);
      this.#records =
        wholeBodyRecords(walker.bytes, spans) ?? spans.map((span) => readRecord(walker, span));
      this.#walker = undefined;
      this.#spans = undefined;
    }
    return this.#records;
  }

  /** The records, after which this list holds none of them (see takeRecords). */
  take(): readonly ReceivedRecord[] {
    const records = this.records;
    this.#records = undefined;
    return records;
  }
}

const TAKEN = "a page's records were asked for after takeRecords took them";

/**
 * The records of a list, leaving the list without them when it read them lazily (parseListBody):
 * for a reader that lets go of a page's records while the page itself is still referenced (by
 * the pager that yielded it, suspended until the next page is asked for).
 */
export function takeRecords(list: ReceivedList): readonly ReceivedRecord[] {
  return list instanceof ListBody ? list.take() : list.records;
}

/** Where one element of `objects` lies, and how many keys its top level writes. */
interface RecordSpan {
  start: number;
  end: number;
  keys: number;
  depth: number;
  /** The record holds a `\u` escape PostgreSQL cannot store (ReceivedRecord.unstorableEscape). */
  unstorableEscape: boolean;
  /** ReceivedRecord.plainBytes. */
  plainBytes: boolean;
}

/** Walks the record that starts at `at`. */
function recordSpan(walker: ByteWalker, at: number): RecordSpan {
  const { end, topLevelKeys, depth } = walker.endOfValue(at);
  return {
    start: at,
    end,
    keys: topLevelKeys,
    depth,
    unstorableEscape: walker.lastUnstorableEscape >= at,
    plainBytes: walker.lastEscapeOrControl < at,
  };
}

/**
 * The fast path: the body decoded and parsed once, each record's text a slice of it. Only for the
 * common case (valid UTF-8, all ASCII so byte and character offsets agree, and valid JSON as a
 * whole); anything else returns undefined and each record is read on its own.
 */
function wholeBodyRecords(
  body: Uint8Array,
  spans: readonly RecordSpan[],
): ReceivedRecord[] | undefined {
  let text: string;
  let objects: unknown;
  try {
    text = decodeStrict(body);
    if (text.length !== body.length) return undefined;
    objects = (JSON.parse(text) as { objects?: unknown }).objects;
  } catch {
    return undefined;
  }
  if (!Array.isArray(objects) || objects.length !== spans.length) return undefined;
  const records: ReceivedRecord[] = new Array<ReceivedRecord>(spans.length);
  for (let index = 0; index < spans.length; index++) {
    const span = spans[index]!;
    const value: unknown = objects[index];
    const bytes = body.subarray(span.start, span.end);
    if (span.depth > RECORD_MAX_DEPTH) {
      records[index] = { bytes, value: undefined, problem: depthProblem(span.depth) };
      continue;
    }
    records[index] = parsedRecord(bytes, text.slice(span.start, span.end), value, span);
  }
  return records;
}

function parseSlice(walker: ByteWalker, start: number, end: number): unknown {
  try {
    return JSON.parse(decodeStrict(walker.slice(start, end)));
  } catch (error) {
    throw walker.malformed(`invalid JSON in the response envelope: ${(error as Error).message}`);
  }
}

/** The span of every element of the `objects` array at `at`, and the index just past the array. */
function recordSpans(walker: ByteWalker, at: number): { spans: RecordSpan[]; end: number } {
  if (walker.byteAt(at) !== OPEN_BRACKET) throw walker.malformed('"objects" is not an array');
  const spans: RecordSpan[] = [];
  let i = walker.skipWhitespace(at + 1);
  if (walker.byteAt(i) === CLOSE_BRACKET) return { spans, end: i + 1 };
  for (;;) {
    const span = recordSpan(walker, i);
    spans.push(span);
    i = walker.skipWhitespace(span.end);
    const next = walker.byteAt(i);
    if (next === COMMA) i = walker.skipWhitespace(i + 1);
    else if (next === CLOSE_BRACKET) return { spans, end: i + 1 };
    else throw walker.malformed(`expected ',' or ']' in "objects" at byte ${i} (truncated?)`);
  }
}

function parseMeta(value: unknown, malformed: MalformedBody): ListMetaWire {
  if (value === null || typeof value !== 'object') throw malformed('"meta" is not an object');
  const meta = value as Record<string, unknown>;
  const integer = (key: string): number => {
    const n = meta[key];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      throw malformed(`meta.${key} is not a whole number`);
    }
    return n;
  };
  // The real service writes "no page" as null, as "" (A45), or leaves the key out.
  const reference = (key: string): string | null => {
    const ref = meta[key];
    if (ref === null || ref === undefined || ref === '') return null;
    if (typeof ref !== 'string') throw malformed(`meta.${key} is not text or null`);
    return ref;
  };
  return {
    limit: integer('limit'),
    offset: integer('offset'),
    // The stream list of the real service counts with `count` instead (A45).
    total_count:
      meta.total_count === undefined && meta.count !== undefined
        ? integer('count')
        : integer('total_count'),
    next: reference('next'),
    previous: reference('previous'),
  };
}

/**
 * Reads an answer that is either a list envelope or the one record itself: the real service
 * answers `GET …/VerifiedCallerId/{phone_number}` with the caller ID as a single object (A9),
 * where the spec shows a list. A single record becomes a list of one (offset 0, no next page), so
 * callers handle both alike; an empty body or a non-object is malformed.
 */
export function parseListOrRecordBody(
  body: Uint8Array,
  malformed: MalformedBody = malformedBody,
): ReceivedList {
  const walker = new ByteWalker(body, malformed);
  const start = walker.skipWhitespace(0);
  if (start >= walker.length) throw malformed('the body is empty');
  if (walker.byteAt(start) !== OPEN_BRACE) {
    throw malformed('the response is not a JSON object');
  }
  let isList = false;
  walker.members(start, (key) => {
    if (key === 'objects' || key === 'meta') isList = true;
    return undefined;
  });
  if (isList) return parseListBody(body, malformed);
  const record = parseRecordBody(body, malformed);
  const apiId =
    record.value !== null &&
    typeof record.value === 'object' &&
    typeof (record.value as { api_id?: unknown }).api_id === 'string'
      ? (record.value as { api_id: string }).api_id
      : undefined;
  return {
    apiId,
    meta: { limit: 1, offset: 0, total_count: 1, next: null, previous: null },
    records: [record],
  };
}

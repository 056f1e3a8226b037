import { createHash } from 'node:crypto';
import { formatIsoMicros, parseEpochMicros, type EpochMicros } from '../util/micros.js';

/**
 * The status callback of an audio stream (spec section 6; the service's fields are not shown
 * there, these are the real service's, see docs/assumptions.md): form fields of a POST body or
 * query parameters of a GET.
 *
 * | field       | meaning                                                            |
 * | ----------- | ------------------------------------------------------------------ |
 * | `Event`     | StartStream, StopStream, DroppedStream (and PlayedStream, …)       |
 * | `StreamID`  | the stream (stream_id of the stream record)                        |
 * | `CallUUID`  | the call carrying it                                               |
 * | `Timestamp` | when the event happened: `YYYY-MM-DD HH:MM:SS[.ffffff][±HH:MM]`    |
 * | `Error`     | why a stream failed or was dropped; absent or empty otherwise      |
 *
 * Any other field is kept in `fields` (stored as raw) and otherwise ignored.
 */

/** The events the service documents. Another well-formed name is accepted too (`known: false`). */
export const STREAM_CALLBACK_EVENTS = [
  'StartStream',
  'StopStream',
  'DroppedStream',
  'PlayedStream',
  'ClearedAudio',
] as const;
export type StreamCallbackEventName = (typeof STREAM_CALLBACK_EVENTS)[number];

export const STREAM_CALLBACK_FIELDS = {
  event: 'Event',
  streamId: 'StreamID',
  callUuid: 'CallUUID',
  timestamp: 'Timestamp',
  error: 'Error',
} as const;

/** Longest identifier accepted (stream and call ids are UUIDs, 36 characters). */
export const CALLBACK_ID_MAX_LENGTH = 256;
/** Longest field value accepted; a longer one is not a callback of the service. */
export const CALLBACK_VALUE_MAX_LENGTH = 4096;

/** A callback as received: every field once (a field given twice is refused). */
export type StreamCallbackFields = Readonly<Record<string, string>>;

export interface StreamCallbackEvent {
  /** The Event field as sent. */
  readonly event: string;
  /** Whether `event` is one the service documents. */
  readonly known: boolean;
  readonly streamId: string;
  readonly callUuid: string;
  /** The event's time, UTC, ISO 8601 with the microseconds kept: `2026-01-05T10:00:00.123456Z`. */
  readonly eventTime: string;
  readonly eventTimeMicros: EpochMicros;
  /** The Error field; null when absent or empty. */
  readonly error: string | null;
  /**
   * Every field received, for `raw` (an object without a prototype: any name is a plain key). A
   * U+0000, which PostgreSQL cannot store in text, is written as the six characters `\u0000`.
   */
  readonly fields: StreamCallbackFields;
  /** Whether a field name or value carried U+0000 and was stored escaped (see `fields`). */
  readonly nulEscaped: boolean;
  /**
   * Identifies the delivery: the same callback sent again (a retry) has the same key, so it is
   * stored once. A digest of every field, names and values, sorted.
   */
  readonly deliveryKey: string;
}

export interface StreamCallbackProblem {
  /** The wire field at fault, or `*` for the callback as a whole. */
  readonly field: string;
  readonly reason: string;
}

export type StreamCallbackParse =
  | { readonly ok: true; readonly event: StreamCallbackEvent }
  | {
      readonly ok: false;
      readonly problems: readonly StreamCallbackProblem[];
      /** Every problem in one line, for a response body or a log. */
      readonly message: string;
    };

const EVENT_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
// Printable ASCII without spaces: what a UUID or any service identifier is made of.
const IDENTIFIER = /^[\x21-\x7e]+$/;
const EPOCH_DIGITS = /^\d{10}(\d{3})?(\d{3})?$/;

/** The fields of a callback as received, grouped by name (a name given twice has two values). */
export type ReceivedCallbackFields =
  | URLSearchParams
  | ReadonlyMap<string, readonly string[]>
  | Readonly<Record<string, string | readonly string[]>>;

// A surrogate without its pair: only a JSON body's \u escapes can carry one, and jsonb refuses it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Reads a status callback from its fields (URLSearchParams of the query or of the form body, a map
 * of names to values, or a plain record). Reports every problem, each with its field, rather than
 * the first only. Any name is a field, `__proto__` and `constructor` too. Pure.
 */
export function parseStreamCallback(input: ReceivedCallbackFields): StreamCallbackParse {
  const problems: StreamCallbackProblem[] = [];
  const received = Object.create(null) as Record<string, string>;
  const fields = Object.create(null) as Record<string, string>;
  let nulEscaped = false;
  for (const [name, values] of fieldEntries(input)) {
    if (values.length > 1) {
      problems.push({ field: name, reason: `${name} is given ${values.length} times` });
      continue;
    }
    const value = values[0] ?? '';
    if (value.length > CALLBACK_VALUE_MAX_LENGTH) {
      problems.push({
        field: name,
        reason: `${name} is ${value.length} characters long, more than ${CALLBACK_VALUE_MAX_LENGTH}`,
      });
      continue;
    }
    if (LONE_SURROGATE.test(name) || LONE_SURROGATE.test(value)) {
      problems.push({
        field: name,
        reason: `${quote(name)} carries a lone surrogate (not Unicode text)`,
      });
      continue;
    }
    received[name] = value;
    if (name.includes('\0') || value.includes('\0')) {
      nulEscaped = true;
      fields[escapeNul(name)] = escapeNul(value);
    } else fields[name] = value;
  }

  // Read as received: an identifier or a time with U+0000 in it is refused, not escaped.
  const required = (field: string): string | undefined => {
    const value = received[field];
    if (value === undefined || value === '') {
      if (!problems.some((problem) => problem.field === field))
        problems.push({ field, reason: `${field} is missing` });
      return undefined;
    }
    return value;
  };

  const event = required(STREAM_CALLBACK_FIELDS.event);
  if (event !== undefined && !EVENT_NAME.test(event))
    problems.push({
      field: STREAM_CALLBACK_FIELDS.event,
      reason: `Event must be a name such as StartStream, StopStream or DroppedStream, not ${quote(event)}`,
    });

  const identifier = (field: string): string | undefined => {
    const value = required(field);
    if (value === undefined) return undefined;
    if (value.length > CALLBACK_ID_MAX_LENGTH || !IDENTIFIER.test(value)) {
      problems.push({
        field,
        reason: `${field} must be an identifier of at most ${CALLBACK_ID_MAX_LENGTH} printable characters without spaces, not ${quote(value)}`,
      });
      return undefined;
    }
    return value;
  };
  const streamId = identifier(STREAM_CALLBACK_FIELDS.streamId);
  const callUuid = identifier(STREAM_CALLBACK_FIELDS.callUuid);

  const timestampText = required(STREAM_CALLBACK_FIELDS.timestamp);
  const eventTimeMicros =
    timestampText === undefined ? undefined : parseCallbackTimestamp(timestampText);
  if (timestampText !== undefined && eventTimeMicros === undefined)
    problems.push({
      field: STREAM_CALLBACK_FIELDS.timestamp,
      reason: `Timestamp must be a date-time such as "2026-01-05 10:00:00.123456" (UTC unless an offset follows) or epoch seconds or milliseconds, not ${quote(timestampText)}`,
    });

  const errorText = fields[STREAM_CALLBACK_FIELDS.error];
  if (
    problems.length > 0 ||
    event === undefined ||
    streamId === undefined ||
    callUuid === undefined ||
    eventTimeMicros === undefined
  )
    return {
      ok: false,
      problems,
      message: `the stream callback was refused: ${problems.map((problem) => problem.reason).join('; ')}`,
    };
  return {
    ok: true,
    event: {
      event,
      known: (STREAM_CALLBACK_EVENTS as readonly string[]).includes(event),
      streamId,
      callUuid,
      eventTime: formatIsoMicros(eventTimeMicros),
      eventTimeMicros,
      error: errorText === undefined || errorText === '' ? null : errorText,
      fields,
      nulEscaped,
      // The fields as received: a retry of a callback with U+0000 has the same key.
      deliveryKey: streamCallbackDeliveryKey(received),
    },
  };
}

/**
 * The digest that identifies a delivery: SHA-256 (hex) of the fields, sorted by name, as JSON
 * pairs. Pure.
 */
export function streamCallbackDeliveryKey(fields: StreamCallbackFields): string {
  const pairs = Object.keys(fields)
    .sort()
    .map((name) => [name, fields[name]]);
  return createHash('sha256').update(JSON.stringify(pairs), 'utf8').digest('hex');
}

/**
 * A callback's Timestamp to epoch microseconds: a date-time (`T` or space, optional fraction of up
 * to 6 digits, optional `Z` or offset; none means UTC), or epoch seconds / milliseconds /
 * microseconds as 10, 13 or 16 digits. Undefined when it is neither.
 */
export function parseCallbackTimestamp(text: string): EpochMicros | undefined {
  if (EPOCH_DIGITS.test(text)) {
    const digits = Number(text);
    return text.length === 10 ? digits * 1_000_000 : text.length === 13 ? digits * 1000 : digits;
  }
  return parseEpochMicros(text);
}

/** U+0000 as the six characters `\u0000`: PostgreSQL stores neither text nor jsonb with it. */
function escapeNul(text: string): string {
  return text.replaceAll('\0', '\\u0000');
}

function fieldEntries(input: ReceivedCallbackFields): [string, readonly string[]][] {
  if (input instanceof Map) return [...(input as ReadonlyMap<string, readonly string[]>)];
  if (input instanceof URLSearchParams) {
    const grouped = new Map<string, string[]>();
    for (const [name, value] of input) {
      const values = grouped.get(name);
      if (values === undefined) grouped.set(name, [value]);
      else values.push(value);
    }
    return [...grouped];
  }
  const record = input as Readonly<Record<string, string | readonly string[]>>;
  return Object.entries(record).map(([name, value]) => [
    name,
    typeof value === 'string' ? [value] : value,
  ]);
}

function quote(value: string): string {
  const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
  return JSON.stringify(shown);
}

import { topLevelNumberText, type ReceivedRecord } from '../api/received-json.js';
import { formatIsoMicros, type EpochMicros } from '../util/micros.js';
import { RecordJson } from '../util/record-json.js';
import type { NormalizedStream, Rejected, Rejection } from './normalize-result.js';
import {
  describeValue,
  findUnstorableText,
  orNull,
  ParseFailure,
  parseBoolean,
  parseCheckedIdentifier,
  parseCheckedText,
  parseDecimal,
  parseIdentifier,
  parseInteger,
  parseTimestamp,
  quoteText,
  sameJson,
  textOrWholeNumberParser,
  toStorableText,
  type FieldParser,
  type TimestampOptions,
} from './parse.js';

/**
 * Largest record accepted, in bytes as received. Real records are one or two kilobytes; a record
 * this large is broken, and is quarantined rather than stored (a 5 MB field never reaches a row).
 */
export const RECORD_MAX_BYTES = 1_048_576;

/** One kind of record: its stream, how reasons name it, and its identifier field. */
export interface RecordKind {
  readonly stream: NormalizedStream;
  /** How a reason names the record, with its spec section: `trunk call record (spec 2.6)`. */
  readonly label: string;
  /** The wire field that identifies a record: its key column. */
  readonly keyField: string;
}

/** Returned for a timestamp that could not be read; never reaches a row (the record is rejected). */
export const INVALID_MICROS: EpochMicros = Number.NaN;

/** A timestamp as the text stored: ISO 8601 in UTC (formatIsoMicros); '' for INVALID_MICROS. */
function isoText(micros: EpochMicros): string {
  return Number.isNaN(micros) ? '' : formatIsoMicros(micros);
}

/**
 * Reads the fields of one record. Each read returns the parsed value; the first field that does not
 * fit is remembered as the rejection and later reads return their fallback, so a normaliser can
 * build its row in one expression and ask `finish()` whether the record fits.
 */
export class RecordReader {
  #rejection: Rejection | undefined;
  /** Repeated keys already checked by a field read; created only for records that repeat keys. */
  #checkedRepeats: Set<string> | undefined;

  constructor(
    private readonly kind: RecordKind,
    private readonly fields: Readonly<Record<string, unknown>>,
    private readonly duplicates: Readonly<Record<string, readonly unknown[]>> | undefined,
    private readonly recordKey: string | undefined,
    /** The record as received, for values JSON.parse cannot keep exactly. */
    private readonly record?: ReceivedRecord,
  ) {}

  /** A field the record must carry, read by `parse`. */
  field<T>(key: string, parse: FieldParser<T>, fallback: T): T {
    if (this.#rejection !== undefined) return fallback;
    const value = this.fields[key];
    if (value === undefined) {
      this.reject(key, `${key} is missing: every ${this.kind.label} carries it`);
      return fallback;
    }
    return this.read(key, value, parse, fallback);
  }

  /** A field the record may leave out: absent is null, anything present is read by `parse`. */
  optionalField<T>(key: string, parse: FieldParser<T>, fallback: T): T | null {
    if (this.#rejection !== undefined) return fallback;
    const value = this.fields[key];
    return value === undefined ? null : this.read(key, value, parse, fallback);
  }

  // Text fields skip the storable check: openRecord made it for every text of the record.
  text(key: string): string {
    return this.field(key, parseCheckedText, '');
  }

  identifier(key: string): string {
    return this.field(key, parseCheckedIdentifier, '');
  }

  boolean(key: string): boolean {
    return this.field(key, parseBoolean, false);
  }

  integer(key: string): number {
    return this.field(key, parseInteger, 0);
  }

  decimal(key: string): string {
    return this.field(key, parseDecimal, '');
  }

  /** A timestamp with a UTC offset (or Z), as ISO text in UTC. */
  timestamp(key: string): string {
    return isoText(this.field(key, parseTimestamp, INVALID_MICROS));
  }

  /**
   * A text the service may also send as a whole JSON number, stored as its digits exactly as
   * written; null when given as null or left out.
   */
  optionalTextOrWholeNumber(key: string): string | null {
    const record = this.record;
    const parse = orNull(
      textOrWholeNumberParser(() =>
        record === undefined ? undefined : topLevelNumberText(record, key),
      ),
    );
    return this.optionalField(key, parse, null);
  }

  /** A text the record must carry that may be JSON null (kept apart from an empty text). */
  nullableText(key: string): string | null {
    return this.field(key, parseTextOrNull, null);
  }

  /** A text the record may leave out or give as null: both are stored as null. */
  optionalText(key: string): string | null {
    return this.optionalField(key, parseTextOrNull, null);
  }

  optionalBoolean(key: string): boolean | null {
    return this.optionalField(key, parseBooleanOrNull, null);
  }

  optionalInteger(key: string): number | null {
    return this.optionalField(key, parseIntegerOrNull, null);
  }

  optionalDecimal(key: string): string | null {
    return this.optionalField(key, parseDecimalOrNull, null);
  }

  /** A timestamp the record may leave out or give as null, as ISO text in UTC or null. */
  optionalTimestamp(key: string, options?: TimestampOptions): string | null {
    const parse = options === undefined ? parseTimestampOrNull : orNull(timestampParser(options));
    const micros = this.optionalField(key, parse, INVALID_MICROS);
    return micros === null ? null : isoText(micros);
  }

  /**
   * The rejection, if any field did not fit or a key repeated without its field being read holds
   * values that differ; undefined when the record fits.
   */
  finish(): Rejection | undefined {
    if (this.#rejection === undefined && this.duplicates !== undefined) {
      for (const key of Object.keys(this.duplicates)) {
        if (this.#checkedRepeats?.has(key) === true) continue;
        const values = this.duplicates[key]!;
        if (!values.every((value) => sameJson(value, values[0]))) {
          this.reject(fieldName(key), repeatedReason(key, values));
          break;
        }
      }
    }
    return this.#rejection;
  }

  private read<T>(key: string, value: unknown, parse: FieldParser<T>, fallback: T): T {
    const repeated = this.duplicates?.[key];
    if (repeated !== undefined && Object.hasOwn(this.duplicates!, key)) {
      return this.readRepeated(key, repeated, parse, fallback);
    }
    const parsed = parse(value);
    if (!(parsed instanceof ParseFailure)) return parsed;
    this.reject(key, fieldReason(key, parsed.reason));
    return fallback;
  }

  /**
   * A key given more than once (`is_domestic` as "false" and as false): every value must read to
   * the same stored value (assumption A27), otherwise the record is ambiguous.
   */
  private readRepeated<T>(
    key: string,
    values: readonly unknown[],
    parse: FieldParser<T>,
    fallback: T,
  ): T {
    (this.#checkedRepeats ??= new Set()).add(key);
    let first: T = fallback;
    for (let i = 0; i < values.length; i++) {
      const parsed = parse(values[i]);
      if (parsed instanceof ParseFailure) {
        this.reject(
          key,
          `${fieldReason(key, parsed.reason)} (in one of the ${values.length} times it is given)`,
        );
        return fallback;
      }
      if (i === 0) first = parsed;
      else if (!sameJson(parsed, first)) {
        this.reject(key, repeatedReason(key, values));
        return fallback;
      }
    }
    return first;
  }

  private reject(field: string, reason: string): void {
    this.#rejection ??= rejection(this.kind, reason, field, this.recordKey);
  }
}

const parseTextOrNull = orNull(parseCheckedText);
const parseBooleanOrNull = orNull(parseBoolean);
const parseIntegerOrNull = orNull(parseInteger);
const parseDecimalOrNull = orNull(parseDecimal);
const parseTimestampOrNull = orNull(parseTimestamp);

/** parseTimestamp with options, as a FieldParser. */
export function timestampParser(options: TimestampOptions): FieldParser<EpochMicros> {
  return (value) => parseTimestamp(value, options);
}

/** The field's name and the parser's reason; a reason starting with `[` continues its path. */
function fieldReason(key: string, reason: string): string {
  return reason.startsWith('[') ? `${key}${reason}` : `${key} ${reason}`;
}

function repeatedReason(key: string, values: readonly unknown[]): string {
  return `the key ${quoteText(key)} appears ${values.length} times with different values (${values
    .map(describeValue)
    .join(', ')}); the record is ambiguous`;
}

/** A key as a Rejection.field: as it is when short, else quoted and shortened. */
function fieldName(key: string): string {
  return key.length <= 100 ? key : quoteText(key);
}

function rejection(
  kind: RecordKind,
  reason: string,
  field?: string,
  recordKey?: string,
): Rejection {
  const result: { -readonly [K in keyof Rejection]: Rejection[K] } = {
    stream: kind.stream,
    reason,
  };
  if (field !== undefined) result.field = field;
  if (recordKey !== undefined) result.recordKey = recordKey;
  return result;
}

/** A record opened for reading, or the reason it cannot be read at all. */
export type OpenedRecord =
  | {
      readonly ok: true;
      readonly reader: RecordReader;
      readonly value: Record<string, unknown>;
      /**
       * What the row's `raw` jsonb stores: the record's text as received, so numbers keep every
       * digit (JSON.parse would round them); the parsed object when no text came with it.
       */
      readonly raw: RecordJson | Record<string, unknown>;
    }
  | Rejected;

/**
 * The checks every record goes through before its fields are read: it was readable JSON (no
 * `problem`), it is an object, it is not oversized, and nothing in it, at any depth, is text
 * Postgres cannot store. Reads the record's identifier first so that rejections carry it.
 */
export function openRecord(record: ReceivedRecord, kind: RecordKind): OpenedRecord {
  if (record.problem !== undefined) {
    return { ok: false, rejection: rejection(kind, toStorableText(record.problem)) };
  }
  const value = record.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      rejection: rejection(
        kind,
        `a ${kind.label} must be a JSON object; got ${describeValue(value)}`,
      ),
    };
  }
  const fields = value as Record<string, unknown>;
  const key = parseIdentifier(fields[kind.keyField]);
  const recordKey = key instanceof ParseFailure ? undefined : key;
  if (record.bytes.length > RECORD_MAX_BYTES) {
    return {
      ok: false,
      rejection: rejection(
        kind,
        `the record is ${record.bytes.length} bytes long; a ${kind.label} may be at most ${RECORD_MAX_BYTES} bytes`,
        undefined,
        recordKey,
      ),
    };
  }
  const unstorable = findUnstorableRecordText(record, fields);
  if (unstorable !== undefined) {
    return {
      ok: false,
      rejection: rejection(kind, unstorable.reason, unstorable.field, recordKey),
    };
  }
  return {
    ok: true,
    reader: new RecordReader(kind, fields, record.duplicateKeys, recordKey, record),
    value: fields,
    raw:
      record.text === undefined
        ? fields
        : new RecordJson(record.bytes, record.text, record.plainBytes === true),
  };
}

/**
 * The first text of a record PostgreSQL cannot store. Such a text comes only from a `\u` escape,
 * which the api layer notes while it walks the record's bytes (`unstorableEscape`); the parsed
 * value is searched only for a record that holds one, or that came without its text.
 */
function findUnstorableRecordText(
  record: ReceivedRecord,
  fields: Readonly<Record<string, unknown>>,
): { readonly field?: string; readonly reason: string } | undefined {
  if (record.text === undefined) return findUnstorableText(fields);
  if (record.unstorableEscape !== true) return undefined;
  return (
    findUnstorableText(fields) ?? {
      reason:
        'the record holds U+0000 or an unpaired UTF-16 surrogate (as a \\u escape) in a value JSON.parse does not keep (a key given twice); PostgreSQL cannot store it in jsonb',
    }
  );
}

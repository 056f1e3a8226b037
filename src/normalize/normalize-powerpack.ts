import type { ReceivedRecord } from '../api/received-json.js';
import type { NumberPriorityWire } from '../api/wire-types.js';
import type { PowerpacksTable } from '../db/schema.js';
import type { NormalizedRow } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult } from './normalize-result.js';
import {
  describeValue,
  orNull,
  ParseFailure,
  parseBoolean,
  parseText,
  type FieldParser,
  type Parsed,
} from './parse.js';
import { openRecord, type RecordKind } from './record-reader.js';

/** A powerpacks row as the normaliser builds it. */
export type PowerpacksInsertRow = NormalizedRow<PowerpacksTable>;

const POWERPACK: RecordKind = {
  stream: 'powerpacks',
  label: 'sender pack (spec 2.4)',
  keyField: 'uuid',
};

const PRIORITY_KEYS = ['priority1', 'priority2', 'priority3'] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const EXPECTED_ENTRY =
  'an object with text country_iso and service_type and a priority object of texts priority1, priority2 and priority3';

/**
 * number_priority (spec 2.4): an array of entries, each with text `country_iso`, `service_type`
 * and a `priority` object whose `priority1`–`priority3` are text. The number types themselves are
 * not checked (a new type must not stop a sync, as with every enumeration, A11), and keys beyond
 * these are kept. The array is returned as received: it is stored as jsonb.
 */
export const parseNumberPriority: FieldParser<NumberPriorityWire[]> = (value) => {
  if (!Array.isArray(value)) {
    return new ParseFailure(
      `must be an array of entries, each ${EXPECTED_ENTRY}; got ${describeValue(value)}`,
    );
  }
  const entries = value as unknown[];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    const at = `[${i}]`;
    if (!isPlainObject(entry)) {
      return new ParseFailure(`${at} must be ${EXPECTED_ENTRY}; got ${describeValue(entry)}`);
    }
    const problem =
      textProblem(entry, 'country_iso', at) ??
      textProblem(entry, 'service_type', at) ??
      priorityProblem(entry.priority, at);
    if (problem !== undefined) return new ParseFailure(problem);
  }
  return value as NumberPriorityWire[];
};

function textProblem(object: Record<string, unknown>, key: string, at: string): string | undefined {
  const parsed: Parsed<string> = parseText(object[key]);
  return parsed instanceof ParseFailure ? `${at}.${key} ${parsed.reason}` : undefined;
}

function priorityProblem(priority: unknown, at: string): string | undefined {
  if (!isPlainObject(priority)) {
    return `${at}.priority must be an object of texts priority1, priority2 and priority3; got ${describeValue(priority)}`;
  }
  for (const key of PRIORITY_KEYS) {
    const problem = textProblem(priority, key, `${at}.priority`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

const parseTextOrNull = orNull(parseText);
const parseNumberPriorityOrNull = orNull(parseNumberPriority);

/**
 * A sender pack (spec 2.4) to its powerpacks row. `number_priority` is stored as the array
 * received; `api_id` (the request's, 4.4) may be absent, and is then null (A28).
 *
 * The real service sends `application_id` as text or as a JSON number (`123912833468`); a number
 * is stored as its digits exactly as written (A43). Its documented samples leave out
 * `sticky_sender` and `number_priority`, and give application fields as empty text: those two may
 * be absent or null and are stored as null (never as `[]`, which means "no priorities"), and
 * `application_id`/`application_type` may be null (A44).
 */
export function normalizePowerpack(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<PowerpacksInsertRow> {
  const opened = openRecord(record, POWERPACK);
  if (!opened.ok) return opened;
  const r = opened.reader;
  const row: PowerpacksInsertRow = {
    account_id: context.accountId,
    uuid: r.identifier('uuid'),
    name: r.text('name'),
    application_id: r.optionalTextOrWholeNumber('application_id'),
    application_type: r.optionalText('application_type'),
    created_on: r.timestamp('created_on'),
    local_connect: r.field('local_connect', parseBoolean, false),
    sticky_sender: r.optionalBoolean('sticky_sender'),
    number_pool: r.text('number_pool'),
    number_priority: r.optionalField('number_priority', parseNumberPriorityOrNull, []),
    api_id: r.optionalField('api_id', parseTextOrNull, null),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.uuid };
}

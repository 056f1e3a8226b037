import type { ReceivedRecord } from '../api/received-json.js';
import type { TrunkCallsTable } from '../db/schema.js';
import type { EpochMicros } from '../util/micros.js';
import type { NormalizeContext, NormalizeResult, NormalizedRow } from './normalize-result.js';
import {
  orNull,
  parseText,
  parseTimestamp,
  PARSED_NULL,
  type FieldParser,
  type Instant,
} from './parse.js';
import { INVALID_INSTANT, openRecord, type RecordKind } from './record-reader.js';

/** A trunk_calls row as the normaliser builds it. */
export type TrunkCallsInsertRow = NormalizedRow<TrunkCallsTable>;

const TRUNK_CALL: RecordKind = {
  stream: 'trunk_calls',
  label: 'trunk call record (spec 2.6)',
  keyField: 'call_uuid',
};

const parseTextOrNull = orNull(parseText);

/** answer_time of a call never answered may be empty, null or absent (assumptions A21, A28). */
const parseAnswerTime: FieldParser<Instant | null> = (value) =>
  value === '' || value === null ? PARSED_NULL : parseTimestamp(value);

/**
 * A trunk call record (spec 2.6) to its trunk_calls row. Also returns `endTimeMicros`, the record's
 * end_time as epoch microseconds, by which the extractor places the call in its window.
 */
export function normalizeTrunkCall(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<TrunkCallsInsertRow, { readonly endTimeMicros: EpochMicros }> {
  const opened = openRecord(record, TRUNK_CALL);
  if (!opened.ok) return opened;
  const r = opened.reader;
  // Fields are read in the spec's order, so a rejection names the first field at fault.
  let endTime: Instant = INVALID_INSTANT;
  const row: TrunkCallsInsertRow = {
    account_id: context.accountId,
    call_uuid: r.identifier('call_uuid'),
    parent_call_uuid: r.field('parent_call_uuid', parseTextOrNull, null),
    conference_uuid: r.field('conference_uuid', parseTextOrNull, null),
    api_id: r.text('api_id'),
    resource_uri: r.text('resource_uri'),
    call_direction: r.text('call_direction'),
    call_state: r.text('call_state'),
    from_number: r.text('from_number'),
    to_number: r.text('to_number'),
    initiation_time: r.timestamp('initiation_time'),
    answer_time: r.optionalField('answer_time', parseAnswerTime, null)?.iso ?? null,
    end_time: (endTime = r.field('end_time', parseTimestamp, INVALID_INSTANT)).iso,
    call_duration: r.integer('call_duration'),
    bill_duration: r.integer('bill_duration'),
    billed_duration: r.integer('billed_duration'),
    total_rate: r.decimal('total_rate'),
    total_amount: r.decimal('total_amount'),
    hangup_cause_code: r.integer('hangup_cause_code'),
    hangup_cause_name: r.text('hangup_cause_name'),
    hangup_source: r.text('hangup_source'),
    stir_verification: r.text('stir_verification'),
    stir_attestation: r.text('Stir_attestation'),
    voice_network_group: r.text('voice_network_group'),
    source_ip: r.text('source_ip'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.call_uuid, endTimeMicros: endTime.micros };
}

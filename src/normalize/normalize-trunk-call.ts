import type { ReceivedRecord } from '../api/received-json.js';
import type { TrunkCallsTable } from '../db/schema.js';
import type { EpochMicros } from '../util/micros.js';
import type { NormalizedRow } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult } from './normalize-result.js';
import type { FieldParser } from './parse.js';
import { INVALID_MICROS, openRecord, timestampParser, type RecordKind } from './record-reader.js';

/**
 * A trunk_calls row as the normaliser builds it. Its times are epoch microseconds, not text: the
 * rows go in by COPY's binary format, which takes them so, and a text would be formatted here only
 * to be read again by the encoder.
 */
export type TrunkCallsInsertRow = Omit<NormalizedRow<TrunkCallsTable>, CallTimeColumn> & {
  initiation_time: EpochMicros;
  answer_time: EpochMicros | null;
  end_time: EpochMicros;
};

type CallTimeColumn = 'initiation_time' | 'answer_time' | 'end_time';

const TRUNK_CALL: RecordKind = {
  stream: 'trunk_calls',
  label: 'trunk call record (spec 2.6)',
  keyField: 'call_uuid',
};

/**
 * Trunk call times are UTC (spec 4.6 rule 4); the real service writes them without an offset
 * (`2024-01-15 14:32:00`), the spec's samples with one. Both are read (assumption A38).
 */
const UTC_WITHOUT_OFFSET = { withoutOffset: 'utc' } as const;
const parseCallTime = timestampParser(UTC_WITHOUT_OFFSET);

/** answer_time of a call never answered may be empty, null or absent (assumptions A21, A28). */
const parseAnswerTime: FieldParser<EpochMicros | null> = (value) =>
  value === '' || value === null ? null : parseCallTime(value);

/**
 * A trunk call record (spec 2.6) to its trunk_calls row; the stream places the call in its window
 * by the row's end_time.
 *
 * The fields the real service's records are documented without (A39: parent and conference
 * identifiers, api_id, resource_uri, call_state, billed_duration, Stir_attestation,
 * voice_network_group, source_ip) may be left out or null, and are then stored as null. A record
 * must still carry the call's identity, times, durations, amounts and hangup details.
 */
export function normalizeTrunkCall(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<TrunkCallsInsertRow> {
  const opened = openRecord(record, TRUNK_CALL);
  if (!opened.ok) return opened;
  const r = opened.reader;
  // Fields are read in the spec's order, so a rejection names the first field at fault.
  const row: TrunkCallsInsertRow = {
    account_id: context.accountId,
    call_uuid: r.identifier('call_uuid'),
    parent_call_uuid: r.optionalText('parent_call_uuid'),
    conference_uuid: r.optionalText('conference_uuid'),
    api_id: r.optionalText('api_id'),
    resource_uri: r.optionalText('resource_uri'),
    call_direction: r.text('call_direction'),
    call_state: r.optionalText('call_state'),
    from_number: r.text('from_number'),
    to_number: r.text('to_number'),
    initiation_time: r.field('initiation_time', parseCallTime, INVALID_MICROS),
    answer_time: r.optionalField('answer_time', parseAnswerTime, null),
    end_time: r.field('end_time', parseCallTime, INVALID_MICROS),
    call_duration: r.integer('call_duration'),
    bill_duration: r.integer('bill_duration'),
    billed_duration: r.optionalInteger('billed_duration'),
    total_rate: r.decimal('total_rate'),
    total_amount: r.decimal('total_amount'),
    hangup_cause_code: r.integer('hangup_cause_code'),
    hangup_cause_name: r.text('hangup_cause_name'),
    // Stored as received: records say Caller, Callee or Error, or customer, carrier or trunk (A29).
    hangup_source: r.text('hangup_source'),
    stir_verification: r.text('stir_verification'),
    stir_attestation: r.optionalText('Stir_attestation'),
    voice_network_group: r.optionalText('voice_network_group'),
    source_ip: r.optionalText('source_ip'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.call_uuid };
}

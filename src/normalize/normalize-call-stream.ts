import type { ReceivedRecord } from '../api/received-json.js';
import type { CallStreamsTable } from '../db/schema.js';
import type { NormalizedRow } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult } from './normalize-result.js';
import { openRecord, type RecordKind } from './record-reader.js';

/** A call_streams row as the normaliser builds it. */
export type CallStreamsInsertRow = NormalizedRow<CallStreamsTable>;

const CALL_STREAM: RecordKind = {
  stream: 'call_streams',
  label: 'stream record (spec 2.5)',
  keyField: 'stream_id',
};

/**
 * A stream record (spec 2.5) to its call_streams row, keyed by stream_id.
 *
 * The real service also lists streams in a shorter shape (A42): `stream_id`, `call_uuid`,
 * `service_url`, a `status`, `status_callback_url`, and `start_time`/`end_time` null until the
 * stream starts and ends. So only the identity and `service_url` are required; every other field
 * may be absent or null and is then stored as null. Fields with no column (`status`) stay in raw.
 * The service's own full shape names the account `plivo_auth_id`, the field the spec calls
 * `service_auth_id`: it fills service_auth_id when that is absent or null.
 */
export function normalizeCallStream(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<CallStreamsInsertRow> {
  const opened = openRecord(record, CALL_STREAM);
  if (!opened.ok) return opened;
  const r = opened.reader;
  const serviceAuthId = r.optionalText('service_auth_id');
  const row: CallStreamsInsertRow = {
    account_id: context.accountId,
    stream_id: r.identifier('stream_id'),
    call_uuid: r.identifier('call_uuid'),
    service_auth_id: serviceAuthId ?? r.optionalText('plivo_auth_id'),
    resource_uri: r.optionalText('resource_uri'),
    service_url: r.text('service_url'),
    audio_track: r.optionalText('audio_track'),
    bidirectional: r.optionalBoolean('bidirectional'),
    created_at: r.optionalTimestamp('created_at'),
    start_time: r.optionalTimestamp('start_time'),
    // null while the stream is still running (assumption A23).
    end_time: r.optionalTimestamp('end_time'),
    bill_duration: r.optionalInteger('bill_duration'),
    rounded_bill_duration: r.optionalInteger('rounded_bill_duration'),
    billed_amount: r.optionalDecimal('billed_amount'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.stream_id };
}

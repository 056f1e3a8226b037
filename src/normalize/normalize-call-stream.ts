import type { ReceivedRecord } from '../api/received-json.js';
import type { CallStreamsTable } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult, NormalizedRow } from './normalize-result.js';
import { orNull, parseTimestamp } from './parse.js';
import { INVALID_INSTANT, openRecord, type RecordKind } from './record-reader.js';

/** A call_streams row as the normaliser builds it. */
export type CallStreamsInsertRow = NormalizedRow<CallStreamsTable>;

const CALL_STREAM: RecordKind = {
  stream: 'call_streams',
  label: 'stream record (spec 2.5)',
  keyField: 'stream_id',
};

/** end_time is null while the stream is still running (assumption A23). */
const parseEndTime = orNull(parseTimestamp);

/** A stream record (spec 2.5) to its call_streams row, keyed by stream_id. */
export function normalizeCallStream(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<CallStreamsInsertRow> {
  const opened = openRecord(record, CALL_STREAM);
  if (!opened.ok) return opened;
  const r = opened.reader;
  const row: CallStreamsInsertRow = {
    account_id: context.accountId,
    stream_id: r.identifier('stream_id'),
    call_uuid: r.identifier('call_uuid'),
    service_auth_id: r.text('service_auth_id'),
    resource_uri: r.text('resource_uri'),
    service_url: r.text('service_url'),
    audio_track: r.text('audio_track'),
    bidirectional: r.boolean('bidirectional'),
    created_at: r.timestamp('created_at'),
    start_time: r.timestamp('start_time'),
    end_time: r.field('end_time', parseEndTime, INVALID_INSTANT)?.iso ?? null,
    bill_duration: r.integer('bill_duration'),
    rounded_bill_duration: r.integer('rounded_bill_duration'),
    billed_amount: r.decimal('billed_amount'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.stream_id };
}

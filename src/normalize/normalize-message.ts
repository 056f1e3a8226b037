import type { ReceivedRecord } from '../api/received-json.js';
import type { MessagesTable } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult, NormalizedRow } from './normalize-result.js';
import { openRecord, type RecordKind } from './record-reader.js';

/** A messages row as the normaliser builds it. */
export type MessagesInsertRow = NormalizedRow<MessagesTable>;

const MESSAGE: RecordKind = {
  stream: 'messages',
  label: 'message detail record (spec 2.3)',
  keyField: 'message_uuid',
};

/**
 * A message detail record (spec 2.3) to its messages row. `is_domestic` arrives twice, as "false"
 * and as false: the values must agree and become one boolean. Enumerations are stored as received
 * (assumption A11).
 */
export function normalizeMessage(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<MessagesInsertRow> {
  const opened = openRecord(record, MESSAGE);
  if (!opened.ok) return opened;
  const r = opened.reader;
  const row: MessagesInsertRow = {
    account_id: context.accountId,
    message_uuid: r.identifier('message_uuid'),
    resource_uri: r.text('resource_uri'),
    message_direction: r.text('message_direction'),
    message_state: r.text('message_state'),
    message_type: r.text('message_type'),
    message_time: r.timestamp('message_time'),
    from_number: r.text('from_number'),
    to_number: r.text('to_number'),
    replaced_sender: r.text('replaced_sender'),
    destination_country_iso2: r.text('destination_country_iso2'),
    destination_network: r.text('destination_network'),
    mcc: r.text('mcc'),
    mnc: r.text('mnc'),
    units: r.integer('units'),
    total_rate: r.decimal('total_rate'),
    total_amount: r.decimal('total_amount'),
    carrier_fees_rate: r.decimal('carrier_fees_rate'),
    carrier_fees: r.decimal('carrier_fees'),
    error_code: r.text('error_code'),
    is_domestic: r.boolean('is_domestic'),
    powerpack_id: r.text('powerpack_id'),
    tendlc_campaign_id: r.text('tendlc_campaign_id'),
    tendlc_registration_status: r.text('tendlc_registration_status'),
    dlt_entity_id: r.text('dlt_entity_id'),
    dlt_template_id: r.text('dlt_template_id'),
    dlt_template_category: r.text('dlt_template_category'),
    requester_ip: r.text('requester_ip'),
    conversation_id: r.text('conversation_id'),
    conversation_origin: r.text('conversation_origin'),
    conversation_expiration_timestamp: r.timestamp('conversation_expiration_timestamp'),
    log: r.text('log'),
    api_id: r.text('api_id'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.message_uuid };
}

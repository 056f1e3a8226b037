import type { ReceivedRecord } from '../api/received-json.js';
import type { MessagesTable } from '../db/schema.js';
import type { NormalizedRow } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult } from './normalize-result.js';
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
 *
 * The real service sends `error_code` as null on a message not yet delivered or failed, and leaves
 * out or nulls the fields of features a message did not use (DLT, 10DLC, WhatsApp conversations,
 * carrier fees, sender packs) and those older records predate (A40). So only the fields every
 * documented record carries are required; `error_code` must be present but may be null; the rest
 * may be absent or null and are then stored as null. An empty text stays empty (A20).
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
    replaced_sender: r.optionalText('replaced_sender'),
    destination_country_iso2: r.optionalText('destination_country_iso2'),
    destination_network: r.optionalText('destination_network'),
    mcc: r.optionalText('mcc'),
    mnc: r.optionalText('mnc'),
    units: r.integer('units'),
    total_rate: r.decimal('total_rate'),
    total_amount: r.decimal('total_amount'),
    carrier_fees_rate: r.optionalDecimal('carrier_fees_rate'),
    carrier_fees: r.optionalDecimal('carrier_fees'),
    error_code: r.nullableText('error_code'),
    is_domestic: r.optionalBoolean('is_domestic'),
    powerpack_id: r.optionalText('powerpack_id'),
    tendlc_campaign_id: r.optionalText('tendlc_campaign_id'),
    tendlc_registration_status: r.optionalText('tendlc_registration_status'),
    dlt_entity_id: r.optionalText('dlt_entity_id'),
    dlt_template_id: r.optionalText('dlt_template_id'),
    dlt_template_category: r.optionalText('dlt_template_category'),
    requester_ip: r.optionalText('requester_ip'),
    conversation_id: r.optionalText('conversation_id'),
    conversation_origin: r.optionalText('conversation_origin'),
    conversation_expiration_timestamp: r.optionalTimestamp('conversation_expiration_timestamp'),
    log: r.optionalText('log'),
    api_id: r.optionalText('api_id'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.message_uuid };
}

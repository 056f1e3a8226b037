import type { ReceivedRecord } from '../api/received-json.js';
import type { SipEndpointsTable } from '../db/schema.js';
import type { NormalizedRow } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult } from './normalize-result.js';
import { describeValue, orNull, ParseFailure, parseText, type FieldParser } from './parse.js';
import { openRecord, type RecordKind } from './record-reader.js';

/** A sip_endpoints row as the normaliser builds it. */
export type SipEndpointsInsertRow = NormalizedRow<SipEndpointsTable>;

const SIP_ENDPOINT: RecordKind = {
  stream: 'endpoints',
  label: 'SIP endpoint (spec 2.1)',
  keyField: 'endpoint_id',
};

const parseTextOrNull = orNull(parseText);

/** sip_expires has no offset and is read as UTC (assumption A18); one with an offset is kept too. */
const SIP_EXPIRES = { withoutOffset: 'utc' } as const;

/** sub_account is text or null; any other value has an unknown meaning (assumption A10). */
const parseSubAccount: FieldParser<string | null> = (value) => {
  if (value === null) return null;
  if (typeof value === 'string') return parseText(value);
  return new ParseFailure(
    `must be text or null (assumption A10: any other value has an unknown meaning); got ${describeValue(value)}`,
  );
};

/**
 * A SIP endpoint (spec 2.1) to its sip_endpoints row. sip_contact, sip_expires and sip_user_agent
 * are left out for an unregistered endpoint: absent (or null) is stored as null (A28).
 */
export function normalizeSipEndpoint(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<SipEndpointsInsertRow> {
  const opened = openRecord(record, SIP_ENDPOINT);
  if (!opened.ok) return opened;
  const r = opened.reader;
  const row: SipEndpointsInsertRow = {
    account_id: context.accountId,
    endpoint_id: r.identifier('endpoint_id'),
    username: r.text('username'),
    alias: r.text('alias'),
    application: r.text('application'),
    resource_uri: r.text('resource_uri'),
    sip_uri: r.text('sip_uri'),
    sip_registered: r.boolean('sip_registered'),
    sip_contact: r.optionalField('sip_contact', parseTextOrNull, null),
    sip_expires: r.optionalTimestamp('sip_expires', SIP_EXPIRES),
    sip_user_agent: r.optionalField('sip_user_agent', parseTextOrNull, null),
    sub_account: r.field('sub_account', parseSubAccount, null),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.endpoint_id };
}

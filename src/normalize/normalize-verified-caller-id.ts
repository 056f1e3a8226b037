import type { ReceivedRecord } from '../api/received-json.js';
import type { VerifiedCallerIdsTable } from '../db/schema.js';
import type { NormalizedRow } from '../db/schema.js';
import type { NormalizeContext, NormalizeResult } from './normalize-result.js';
import { openRecord, type RecordKind } from './record-reader.js';

/** A verified_caller_ids row as the normaliser builds it. */
export type VerifiedCallerIdsInsertRow = NormalizedRow<VerifiedCallerIdsTable>;

const VERIFIED_CALLER_ID: RecordKind = {
  stream: 'caller_ids',
  label: 'verified caller ID (spec 2.2)',
  keyField: 'phone_number',
};

/**
 * A verified caller ID (spec 2.2) to its verified_caller_ids row, keyed by phone_number.
 *
 * The real service's single-number answer (`GET …/VerifiedCallerId/{phone_number}`) carries no
 * `resource_uri`, and its documented samples leave out `modified_at` and `subaccount` (A41): these
 * three may be absent or null and are then stored as null. Times may carry up to nine fraction
 * digits (A24).
 */
export function normalizeVerifiedCallerId(
  record: ReceivedRecord,
  context: NormalizeContext,
): NormalizeResult<VerifiedCallerIdsInsertRow> {
  const opened = openRecord(record, VERIFIED_CALLER_ID);
  if (!opened.ok) return opened;
  const r = opened.reader;
  const row: VerifiedCallerIdsInsertRow = {
    account_id: context.accountId,
    phone_number: r.identifier('phone_number'),
    alias: r.text('alias'),
    country: r.text('country'),
    created_at: r.timestamp('created_at'),
    modified_at: r.optionalTimestamp('modified_at'),
    resource_uri: r.optionalText('resource_uri'),
    subaccount: r.optionalText('subaccount'),
    verification_uuid: r.text('verification_uuid'),
    raw: opened.raw,
  };
  const rejection = r.finish();
  if (rejection !== undefined) return { ok: false, rejection };
  return { ok: true, row, key: row.phone_number };
}

import type { ReceivedRecord } from '../api/received-json.js';
import { payloadDigest } from '../util/payload-digest.js';
import type { NormalizeContext, NormalizeResult, RejectedRecord } from './normalize-result.js';

/** A resource's normaliser: one received record to its row, or to a rejection. */
export type Normalizer<Row> = (
  record: ReceivedRecord,
  context: NormalizeContext,
) => NormalizeResult<Row>;

/** Records normalised: the rows that fit, and the records that did not, for the quarantine. */
export interface NormalizedRecords<Row> {
  readonly rows: Row[];
  readonly rejects: RejectedRecord[];
}

/**
 * The one record → row-or-reject step of every stream: normalises each of `records` with
 * `normalize`; a record that does not fit becomes a RejectedRecord with its reason and exact bytes,
 * and the others go on. When `identities` is given, each record's identity is added to it (its key;
 * for a rejected record its key when readable, else `sha256:` and the digest of its bytes), so a
 * caller can count distinct records read against the service's total.
 */
export function normalizeRecords<Row>(
  records: readonly ReceivedRecord[],
  normalize: Normalizer<Row>,
  context: NormalizeContext,
  identities?: Set<string>,
): NormalizedRecords<Row> {
  const rows: Row[] = [];
  const rejects: RejectedRecord[] = [];
  for (const record of records) {
    const result = normalize(record, context);
    if (result.ok) {
      identities?.add(result.key);
      rows.push(result.row);
      continue;
    }
    const { rejection } = result;
    identities?.add(rejection.recordKey ?? `sha256:${payloadDigest(record.bytes)}`);
    rejects.push({
      accountId: context.accountId,
      stream: rejection.stream,
      reason: rejection.reason,
      recordKey: rejection.recordKey,
      bytes: record.bytes,
    });
  }
  return { rows, rejects };
}

import { sql, type Kysely } from 'kysely';
import type { RejectedRecord } from '../../domain/rejected-record.js';
import { payloadDigest } from '../../util/payload-digest.js';
import type { Tables } from '../schema.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Largest payload whose bytes the quarantine stores (the normaliser's RECORD_MAX_BYTES). A larger
 * record is kept as its digest, with its size in the reason, never its bytes: one 300 MB record
 * must not become 600 MB of rows (raw_payload and raw_bytes).
 */
export const QUARANTINE_PAYLOAD_MAX_BYTES = 1_048_576;

/**
 * The text of a payload when Postgres `text` can hold it exactly: valid UTF-8 without NUL.
 * Otherwise undefined, and only raw_bytes keeps it.
 */
export function storableText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Stores rejected records in the caller's transaction, keyed by the digest of their bytes. A record
 * already quarantined (same account, stream and bytes) is counted again rather than stored twice,
 * so a bad record inside the lookback does not pile up a row per run.
 */
export async function quarantineRecords(
  trx: Kysely<Tables>,
  schema: string,
  records: readonly RejectedRecord[],
  runId: number,
): Promise<void> {
  if (records.length === 0) return;
  const byDigest = new Map<string, RejectedRecord & { digest: string }>();
  for (const record of records) {
    const digest = payloadDigest(record.bytes);
    byDigest.set(`${record.accountId}\u0001${record.stream}\u0001${digest}`, { ...record, digest });
  }
  const rows = [...byDigest.values()].map((record) => {
    const kept = record.bytes.byteLength <= QUARANTINE_PAYLOAD_MAX_BYTES;
    return {
      account_id: record.accountId,
      stream: record.stream,
      reason: kept
        ? record.reason
        : `${record.reason} [payload of ${record.bytes.byteLength} bytes not stored; sha256 ${record.digest}]`,
      record_key: record.recordKey ?? null,
      raw_payload: kept ? (storableText(record.bytes) ?? null) : null,
      raw_bytes: kept ? Buffer.from(record.bytes) : null,
      payload_sha256: record.digest,
      run_id: runId,
    };
  });
  await trx
    .insertInto('rejected_records')
    .values(rows)
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'stream', 'payload_sha256']).doUpdateSet({
        reason: (eb) => eb.ref('excluded.reason'),
        run_id: (eb) => eb.ref('excluded.run_id'),
        last_seen_at: sql<string>`now()`,
        occurrences: sql<number>`${sql.id(schema, 'rejected_records', 'occurrences')} + 1`,
      }),
    )
    .execute();
}

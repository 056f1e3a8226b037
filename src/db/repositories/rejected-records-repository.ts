import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/** A record that could not be normalised, as the quarantine stores it. */
export interface Quarantined {
  accountId: string;
  stream: string;
  reason: string;
  /** The record's identifier when it could be read. */
  recordKey: string | undefined;
  /** The record's bytes exactly as received. */
  bytes: Uint8Array;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

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

/** The identity of a payload in the quarantine: the same bad record seen again is one row. */
export function payloadDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Stores rejected records in the caller's transaction. A record already quarantined (same account,
 * stream and bytes) is counted again rather than stored twice, so a bad record inside the lookback
 * does not pile up a row per run.
 */
export async function quarantineRecords(
  trx: Kysely<Tables>,
  schema: string,
  records: readonly Quarantined[],
  runId: number,
): Promise<void> {
  if (records.length === 0) return;
  const byDigest = new Map<string, Quarantined & { digest: string }>();
  for (const record of records) {
    const digest = payloadDigest(record.bytes);
    byDigest.set(`${record.accountId}\u0001${record.stream}\u0001${digest}`, { ...record, digest });
  }
  const rows = [...byDigest.values()].map((record) => ({
    account_id: record.accountId,
    stream: record.stream,
    reason: record.reason,
    record_key: record.recordKey ?? null,
    raw_payload: storableText(record.bytes) ?? null,
    raw_bytes: Buffer.from(record.bytes),
    payload_sha256: record.digest,
    run_id: runId,
  }));
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

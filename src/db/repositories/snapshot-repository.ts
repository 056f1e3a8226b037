import { sql, type Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/**
 * The deletion side of the snapshot tables (sip_endpoints, verified_caller_ids): after a complete
 * snapshot, the rows it did not contain are marked `deleted_at`, never deleted.
 */
export type SnapshotTable = 'sip_endpoints' | 'verified_caller_ids';

/** A snapshot table and the column that identifies a record in it (the last of its key). */
export interface SnapshotTableKey {
  readonly table: SnapshotTable;
  readonly key: readonly string[];
}

function keyColumn(spec: SnapshotTableKey): string {
  const column = spec.key[spec.key.length - 1];
  if (column === undefined) throw new Error(`${spec.table} has no key`);
  return column;
}

/** What a snapshot taken at `seenAt` did not contain, among an account's rows not yet deleted. */
export interface SnapshotMisses {
  /** Rows not seen by the snapshot (last_seen_at before it), less the keys it rejected. */
  readonly missing: number;
  /** Rows not marked deleted before the snapshot. */
  readonly active: number;
}

/**
 * Counts, in the caller's transaction, the active rows of `table` that the snapshot stamped
 * `seenAt` did not contain. A record seen but rejected (`rejectedKeys`) still exists at the
 * service, so its row is not missing.
 */
export async function countSnapshotMisses(
  trx: Kysely<Tables>,
  schema: string,
  spec: SnapshotTableKey,
  accountId: string,
  seenAt: string,
  rejectedKeys: readonly string[],
): Promise<SnapshotMisses> {
  const { table } = spec;
  const key = sql.ref(keyColumn(spec));
  const result = await sql<{ n: number; active: number }>`
    SELECT count(*) FILTER (WHERE last_seen_at < ${seenAt}::timestamptz
                              AND NOT (${key} = ANY(${rejectedKeys}::text[]))) AS n,
           count(*) AS active
      FROM ${sql.id(schema, table)}
     WHERE account_id = ${accountId} AND deleted_at IS NULL
  `.execute(trx);
  const { n = 0, active = 0 } = result.rows[0] ?? {};
  return { missing: n, active };
}

/**
 * Marks deleted, at `seenAt`, the rows countSnapshotMisses counted as missing (in the caller's
 * transaction, after it).
 */
export async function markSnapshotMissesDeleted(
  trx: Kysely<Tables>,
  schema: string,
  spec: SnapshotTableKey,
  accountId: string,
  seenAt: string,
  rejectedKeys: readonly string[],
): Promise<void> {
  const { table } = spec;
  const key = sql.ref(keyColumn(spec));
  await sql`
    UPDATE ${sql.id(schema, table)} SET deleted_at = ${seenAt}::timestamptz
     WHERE account_id = ${accountId} AND deleted_at IS NULL
       AND last_seen_at < ${seenAt}::timestamptz AND NOT (${key} = ANY(${rejectedKeys}::text[]))
  `.execute(trx);
}

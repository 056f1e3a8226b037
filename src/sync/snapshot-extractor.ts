import { sql } from 'kysely';
import type { ReceivedList, ReceivedRecord } from '../api/received-json.js';
import type { RequestOptions } from '../api/transport.js';
import { upsertDataRows, type LoadRow } from '../db/data-loader.js';
import {
  payloadDigest,
  quarantineRecords,
  type Quarantined,
} from '../db/repositories/rejected-records-repository.js';
import { advanceWatermark } from '../db/repositories/sync-state-repository.js';
import { SIP_ENDPOINTS, VERIFIED_CALLER_IDS, type DataTableSpec } from '../db/table-specs.js';
import type { NormalizeContext, NormalizeResult } from '../normalize/normalize-result.js';
import { normalizeSipEndpoint } from '../normalize/normalize-sip-endpoint.js';
import { normalizeVerifiedCallerId } from '../normalize/normalize-verified-caller-id.js';
import { formatIsoMicros } from '../util/micros.js';
import type { RunContext } from './run-context.js';

/** A stream whose every record is read each run: the service's list is the whole truth. */
interface SnapshotStream {
  readonly stream: 'endpoints' | 'caller_ids';
  readonly spec: DataTableSpec<'sip_endpoints' | 'verified_caller_ids'>;
  readonly keyColumn: 'endpoint_id' | 'phone_number';
  readonly noun: string;
  pages(context: RunContext, options: RequestOptions): AsyncGenerator<ReceivedList>;
  normalize(record: ReceivedRecord, context: NormalizeContext): NormalizeResult<LoadRow>;
}

const ENDPOINTS: SnapshotStream = {
  stream: 'endpoints',
  spec: SIP_ENDPOINTS,
  keyColumn: 'endpoint_id',
  noun: 'SIP endpoints',
  pages: (context, options) => context.client.iterateEndpoints(options),
  normalize: normalizeSipEndpoint,
};

const CALLER_IDS: SnapshotStream = {
  stream: 'caller_ids',
  spec: VERIFIED_CALLER_IDS,
  keyColumn: 'phone_number',
  noun: 'verified caller IDs',
  pages: (context, options) => context.client.iterateVerifiedCallerIds({}, options),
  normalize: normalizeVerifiedCallerId,
};

export const syncEndpoints = (context: RunContext): Promise<void> =>
  syncSnapshot(context, ENDPOINTS);
export const syncCallerIds = (context: RunContext): Promise<void> =>
  syncSnapshot(context, CALLER_IDS);

/** A snapshot would have marked too many rows deleted; nothing was marked. */
export class SuspiciousSnapshotError extends Error {
  override name = 'SuspiciousSnapshotError';
}

/**
 * Reads every page, then in one transaction: upserts every row (seen rows get last_seen_at, rows
 * that came back lose deleted_at), quarantines rejects and, when the snapshot is complete, marks
 * rows it no longer holds as deleted. An error half-way writes nothing. A snapshot that would mark
 * more than the configured share of rows deleted marks none and fails the run, loudly: an empty
 * or truncated answer must not wipe the table.
 */
async function syncSnapshot(context: RunContext, stream: SnapshotStream): Promise<void> {
  const rows: LoadRow[] = [];
  const rejects: Quarantined[] = [];
  const identities = new Set<string>();
  const rejectedKeys: string[] = [];
  let expected: number | undefined;
  // A snapshot is a few pages: a stop request lets it finish (it is the batch in hand), since a
  // snapshot cut short would be thrown away.
  const options: RequestOptions = { meter: context.meter };

  for await (const page of stream.pages(context, options)) {
    expected ??= page.meta.total_count;
    context.stats.recordsFetched += page.records.length;
    for (const record of page.records) {
      const result = stream.normalize(record, { accountId: context.accountId });
      if (result.ok) {
        identities.add(result.key);
        rows.push(result.row);
        continue;
      }
      const { rejection } = result;
      identities.add(rejection.recordKey ?? `sha256:${payloadDigest(record.bytes)}`);
      if (rejection.recordKey !== undefined) rejectedKeys.push(rejection.recordKey);
      rejects.push({
        accountId: context.accountId,
        stream: stream.stream,
        reason: rejection.reason,
        recordKey: rejection.recordKey,
        bytes: record.bytes,
      });
    }
  }

  const complete = expected !== undefined && identities.size === expected;
  const seenAt = formatIsoMicros(context.now());
  const { database, accountId } = context;
  const table = sql.id(database.schema, stream.spec.table);
  const key = sql.ref(stream.keyColumn);

  const outcome = await database.db.transaction().execute(async (trx) => {
    const upsert = await upsertDataRows(
      trx,
      database.schema,
      stream.spec,
      rows,
      seenAt,
      context.loadStrategy,
    );
    await quarantineRecords(trx, database.schema, rejects, context.runId);
    if (!complete) return { upsert, marked: 0, refused: undefined };

    // Rows this snapshot did not contain; a record seen but rejected still exists at the service.
    const missing = await sql<{ n: number; active: number }>`
      SELECT count(*) FILTER (WHERE last_seen_at < ${seenAt}::timestamptz
                                AND NOT (${key} = ANY(${rejectedKeys}::text[]))) AS n,
             count(*) AS active
        FROM ${table}
       WHERE account_id = ${accountId} AND deleted_at IS NULL
    `.execute(trx);
    const { n = 0, active = 0 } = missing.rows[0] ?? {};
    const previouslyActive = active;
    if (n > 0 && n > context.settings.snapshotDeleteGuard * previouslyActive) {
      return { upsert, marked: 0, refused: { n, active: previouslyActive } };
    }
    if (n > 0) {
      await sql`
        UPDATE ${table} SET deleted_at = ${seenAt}::timestamptz
         WHERE account_id = ${accountId} AND deleted_at IS NULL
           AND last_seen_at < ${seenAt}::timestamptz AND NOT (${key} = ANY(${rejectedKeys}::text[]))
      `.execute(trx);
    }
    // For a snapshot stream the watermark is the time of the last complete snapshot.
    await advanceWatermark(trx, accountId, stream.stream, seenAt);
    return { upsert, marked: n, refused: undefined };
  });

  context.stats.recordsUpserted += rows.length;
  context.stats.recordsChanged += outcome.upsert.written;
  context.stats.recordsRejected += rejects.length;
  context.stats.windowsPlanned = 1;
  if (!complete) {
    context.stats.failures.push(
      `the snapshot of ${stream.noun} was incomplete: the service reported ${expected ?? 0} but ${identities.size} distinct were read; ` +
        'nothing was marked deleted',
    );
    return;
  }
  if (outcome.refused !== undefined) {
    const { n, active } = outcome.refused;
    const message =
      `refused to mark ${n} of ${active} ${stream.noun} deleted: more than ${Math.round(context.settings.snapshotDeleteGuard * 100)}% ` +
      '(TELESYNC_SNAPSHOT_DELETE_GUARD) at once looks like a broken answer, not real deletions. Nothing was marked; ' +
      'if the deletions are real, run again with a higher TELESYNC_SNAPSHOT_DELETE_GUARD';
    context.log.error({ marked: 0, wouldMark: n, active }, message);
    throw new SuspiciousSnapshotError(message);
  }
  context.stats.windowsCompleted = 1;
  if (outcome.marked > 0)
    context.log.info(
      { deleted: outcome.marked },
      `${outcome.marked} ${stream.noun} are gone from the service: marked deleted`,
    );
}

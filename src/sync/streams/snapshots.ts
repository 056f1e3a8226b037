import type { ReceivedList } from '../../api/received-json.js';
import type { PagingOptions } from '../../api/telephony-client.js';
import type { LoadRow } from '../../db/data-loader.js';
import {
  countSnapshotMisses,
  markSnapshotMissesDeleted,
  type SnapshotMisses,
  type SnapshotTable,
} from '../../db/repositories/snapshot-repository.js';
import { advanceWatermark } from '../../db/repositories/sync-state-repository.js';
import { SIP_ENDPOINTS, VERIFIED_CALLER_IDS, type DataTableSpec } from '../../db/table-specs.js';
import { BatchLoader, ONE_TRANSACTION_PER_UNIT } from '../../load/batch-loader.js';
import type { Normalizer } from '../../normalize/normalize-records.js';
import { normalizeSipEndpoint } from '../../normalize/normalize-sip-endpoint.js';
import { normalizeVerifiedCallerId } from '../../normalize/normalize-verified-caller-id.js';
import { isStopped } from '../../util/stopped-error.js';
import { receiveRecords } from '../receive-records.js';
import { pagingOptions, type RunContext } from '../run-context.js';

/**
 * The snapshot streams (endpoints, caller_ids): every record is read each run, so the service's
 * list is the whole truth. Plan: the whole list, one unit → fetch every page (the client follows
 * meta.next) → normalise → load, all in one transaction whose commit hook marks the rows the
 * snapshot no longer holds as deleted and moves the watermark.
 */
interface SnapshotStream {
  readonly stream: 'endpoints' | 'caller_ids';
  readonly spec: DataTableSpec<SnapshotTable>;
  readonly noun: string;
  fetch(context: RunContext, options: PagingOptions): AsyncGenerator<ReceivedList>;
  readonly normalize: Normalizer<LoadRow>;
}

const ENDPOINTS: SnapshotStream = {
  stream: 'endpoints',
  spec: SIP_ENDPOINTS,
  noun: 'SIP endpoints',
  fetch: (context, options) => context.client.iterateEndpoints(options),
  normalize: normalizeSipEndpoint,
};

const CALLER_IDS: SnapshotStream = {
  stream: 'caller_ids',
  spec: VERIFIED_CALLER_IDS,
  noun: 'verified caller IDs',
  fetch: (context, options) => context.client.iterateVerifiedCallerIds({}, options),
  normalize: normalizeVerifiedCallerId,
};

/** Reads every SIP endpoint; marks those gone from the service deleted. */
export const syncEndpoints = (context: RunContext): Promise<void> =>
  syncSnapshot(context, ENDPOINTS);

/** Reads every verified caller ID; marks those gone from the service deleted. */
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
async function syncSnapshot(context: RunContext, snapshot: SnapshotStream): Promise<void> {
  const loader = new BatchLoader(context, snapshot.spec, ONE_TRANSACTION_PER_UNIT);
  const identities = new Set<string>();
  const rejectedKeys: string[] = [];
  let expected: number | undefined;
  // A snapshot is bounded (pages, total_count) and stops on request between pages and in every
  // wait: what was read is stored, and a snapshot cut short marks nothing deleted.
  const options = pagingOptions(context);
  let stopped = false;
  try {
    for await (const page of snapshot.fetch(context, options)) {
      expected ??= page.meta.total_count;
      const { rejects } = await receiveRecords(
        context,
        page.records,
        snapshot.normalize,
        loader,
        identities,
      );
      for (const reject of rejects)
        if (reject.recordKey !== undefined) rejectedKeys.push(reject.recordKey);
    }
  } catch (error) {
    if (!isStopped(error)) throw error;
    stopped = true;
  }
  const complete = !stopped && expected !== undefined && identities.size === expected;

  const { database, accountId } = context;
  const table = snapshot.spec.table;
  let marked = 0;
  let refused: SnapshotMisses | undefined;
  await loader.commit(async (trx, seenAt) => {
    if (!complete) return;
    // Rows this snapshot did not contain; a record seen but rejected still exists at the service.
    const misses = await countSnapshotMisses(
      trx,
      database.schema,
      table,
      accountId,
      seenAt,
      rejectedKeys,
    );
    if (refusesDeletion(misses, context.settings.snapshotDeleteGuard)) {
      refused = misses;
      return;
    }
    if (misses.missing > 0) {
      await markSnapshotMissesDeleted(trx, database.schema, table, accountId, seenAt, rejectedKeys);
      marked = misses.missing;
    }
    // For a snapshot stream the watermark is the time of the last complete snapshot.
    await advanceWatermark(trx, accountId, snapshot.stream, seenAt);
  });

  context.stats.windowsPlanned = 1;
  if (stopped) {
    context.stats.stopped = true;
    return;
  }
  if (!complete) {
    context.stats.failures.push(
      `the snapshot of ${snapshot.noun} was incomplete: the service reported ${expected ?? 0} but ${identities.size} distinct were read; ` +
        'nothing was marked deleted',
    );
    return;
  }
  if (refused !== undefined) {
    const { missing, active } = refused;
    const message =
      `refused to mark ${missing} of ${active} ${snapshot.noun} deleted: more than ${Math.round(context.settings.snapshotDeleteGuard * 100)}% ` +
      '(TELESYNC_SNAPSHOT_DELETE_GUARD) at once looks like a broken answer, not real deletions. Nothing was marked; ' +
      'if the deletions are real, run again with a higher TELESYNC_SNAPSHOT_DELETE_GUARD';
    context.log.error({ marked: 0, would_mark: missing, active }, message);
    throw new SuspiciousSnapshotError(message);
  }
  context.stats.windowsCompleted = 1;
  if (marked > 0)
    context.log.info(
      { deleted: marked },
      `${marked} ${snapshot.noun} are gone from the service: marked deleted`,
    );
}

/**
 * Whether a complete snapshot that misses `missing` of `active` rows marks too many deleted at
 * once (TELESYNC_SNAPSHOT_DELETE_GUARD, a share): exactly the guard's share is still marked,
 * more than it is refused.
 */
export function refusesDeletion(
  misses: { readonly missing: number; readonly active: number },
  guard: number,
): boolean {
  return misses.missing > 0 && misses.missing > guard * misses.active;
}

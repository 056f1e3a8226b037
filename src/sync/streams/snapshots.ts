import type { ReceivedList } from '../../api/received-json.js';
import type { PagingOptions } from '../../api/telephony-client.js';
import type { LoadRow } from '../../db/data-loader.js';
import {
  countSnapshotMisses,
  markSnapshotMissesDeleted,
  type SnapshotMisses,
  type SnapshotTable,
} from '../../db/repositories/snapshot-repository.js';
import type { DataTableSpec } from '../../db/table-specs.js';
import type { StreamName } from '../../domain/streams.js';
import { ONE_TRANSACTION_PER_UNIT, type BatchLoader } from '../../load/batch-loader.js';
import type { Normalizer } from '../../normalize/normalize-records.js';
import { receiveRecords } from '../receive-records.js';
import { pagingOptions, type RunContext } from '../run-context.js';
import { summedPreview } from '../run-preview.js';
import {
  oneRound,
  requireSyncMode,
  type StreamDefinition,
  type UnitCommit,
} from '../stream-definition.js';

/** What a snapshot stream declares; snapshotStream makes the rest of its definition. */
export interface SnapshotStreamSpec {
  readonly name: StreamName;
  readonly description: string;
  readonly table: DataTableSpec<SnapshotTable>;
  readonly defaultSchedule: string;
  /** What its records are, in messages. */
  readonly noun: string;
  /** Every page of the list (the client follows meta.next). */
  fetch(run: RunContext, options: PagingOptions): AsyncIterable<ReceivedList>;
  readonly normalize: Normalizer<LoadRow>;
}

/** The whole list: a snapshot stream's one unit per run. */
type WholeList = 'whole list';

/**
 * A snapshot stream (endpoints, caller_ids): every record is read each run, so the service's list
 * is the whole truth. Plan: the whole list, one unit → fetch every page → normalise → load, all in
 * one transaction whose commit hook marks the rows the snapshot no longer holds as deleted and
 * moves the watermark (the time of the last complete snapshot).
 */
export function snapshotStream(spec: SnapshotStreamSpec): StreamDefinition<WholeList> {
  return {
    name: spec.name,
    description: spec.description,
    table: spec.table,
    defaultSchedule: spec.defaultSchedule,
    state: { kind: 'snapshot' },
    normalize: spec.normalize,
    batching: () => ONE_TRANSACTION_PER_UNIT,
    plan: (_run, mode) => {
      requireSyncMode(spec.name, mode);
      // The watermark: the time of the last complete snapshot.
      return Promise.resolve({
        rounds: oneRound<WholeList>(['whole list']),
        watermark: { kind: 'commit-time' },
      });
    },
    readUnit: (run, _unit, loader, commit) => readSnapshot(run, spec, loader, commit),
    failsAlone: (error) => error instanceof SnapshotIncompleteError,
    // A snapshot's size is known only to the service.
    preview: (_database, accountId) =>
      Promise.resolve(
        summedPreview(
          {
            accountId,
            stream: spec.name,
            mode: 'sync',
            range: undefined,
            windows: [],
            lookupsDue: null,
          },
          1,
        ),
      ),
  };
}

/** A snapshot would have marked too many rows deleted; nothing was marked. */
export class SuspiciousSnapshotError extends Error {
  override name = 'SuspiciousSnapshotError';
}

/** A snapshot's distinct records did not match the service's count; nothing was marked deleted. */
class SnapshotIncompleteError extends Error {
  override name = 'SnapshotIncompleteError';
}

/**
 * Reads every page, then in one transaction: upserts every row (seen rows get last_seen_at, rows
 * that came back lose deleted_at), quarantines rejects and, when the snapshot is complete, marks
 * rows it no longer holds as deleted (the runner then moves the watermark in the same
 * transaction). An error half-way writes nothing. A snapshot that would mark
 * more than the configured share of rows deleted marks none and fails the run, loudly: an empty
 * or truncated answer must not wipe the table. A stop request between pages stores what was read
 * and marks nothing (the runner writes what the loader holds).
 */
async function readSnapshot(
  run: RunContext,
  snapshot: SnapshotStreamSpec,
  loader: BatchLoader,
  commit: UnitCommit,
): Promise<void> {
  const identities = new Set<string>();
  const rejectedKeys: string[] = [];
  let expected: number | undefined;
  for await (const page of snapshot.fetch(run, pagingOptions(run))) {
    expected ??= page.meta.total_count;
    const { rejects } = await receiveRecords(
      run,
      page.records,
      snapshot.normalize,
      loader,
      identities,
    );
    for (const reject of rejects)
      if (reject.recordKey !== undefined) rejectedKeys.push(reject.recordKey);
  }
  if (expected === undefined || identities.size !== expected) {
    throw new SnapshotIncompleteError(
      `the snapshot of ${snapshot.noun} was incomplete: the service reported ${expected ?? 0} but ${identities.size} distinct were read; ` +
        'nothing was marked deleted',
    );
  }

  const { database, accountId } = run;
  const table = snapshot.table;
  let marked = 0;
  let refused: SnapshotMisses | undefined;
  await commit.commit(async (trx, seenAt) => {
    // Rows this snapshot did not contain; a record seen but rejected still exists at the service.
    const misses = await countSnapshotMisses(
      trx,
      database.schema,
      table,
      accountId,
      seenAt,
      rejectedKeys,
    );
    if (refusesDeletion(misses, run.settings.snapshotDeleteGuard)) {
      refused = misses;
      return false;
    }
    if (misses.missing > 0) {
      await markSnapshotMissesDeleted(trx, database.schema, table, accountId, seenAt, rejectedKeys);
      marked = misses.missing;
    }
    return true;
  });
  if (refused !== undefined) {
    const { missing, active } = refused;
    const message =
      `refused to mark ${missing} of ${active} ${snapshot.noun} deleted: more than ${Math.round(run.settings.snapshotDeleteGuard * 100)}% ` +
      '(TELESYNC_SNAPSHOT_DELETE_GUARD) at once looks like a broken answer, not real deletions. Nothing was marked; ' +
      'if the deletions are real, run again with a higher TELESYNC_SNAPSHOT_DELETE_GUARD';
    run.log.error({ marked: 0, would_mark: missing, active }, message);
    throw new SuspiciousSnapshotError(message);
  }
  if (marked > 0)
    run.log.info(
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

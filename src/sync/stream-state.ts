import { hostname } from 'node:os';
import { LockBusyError, withAdvisoryLock } from '../db/advisory-lock.js';
import type { Database } from '../db/connect.js';
import { countLookupsByStatus } from '../db/repositories/lookup-queue-repository.js';
import {
  findLedgerSummary,
  reopenWindows,
  requeueLookups,
  resetWatermark,
  type LedgerSummary,
} from '../db/repositories/stream-state-repository.js';
import {
  ACCOUNT_BOOKKEEPING_TABLES,
  ACCOUNT_DATA_TABLES,
  countAccountRows,
  deleteAccountRows,
  type AccountTable,
} from '../db/repositories/account-forget-repository.js';
import { finishRun, insertRun } from '../db/repositories/sync-runs-repository.js';
import { findSyncState } from '../db/repositories/sync-state-repository.js';
import type { StatusSource } from '../db/repositories/status-repository.js';
import type { StreamName } from '../domain/streams.js';
import { formatIsoMicros, type EpochMicros } from '../util/micros.js';
import type { StreamDefinition, StreamStateKind } from './stream-definition.js';

/**
 * The state of each stream (what `telesync state show` prints) and its reset (`state reset`):
 * where the next run starts reading, and how to make it read again from a point.
 */

/** The lookup queue of a stream by status. */
export interface QueueSummary {
  readonly pending: number;
  readonly fetched: number;
  readonly not_found: number;
  readonly failed: number;
}

/** The state of one account × stream. */
export interface StreamState {
  readonly accountId: string;
  readonly stream: StreamName;
  /** How the stream keeps its state. */
  readonly kind: StreamStateKind['kind'];
  readonly watermark: string | null;
  /** Stream-specific state, such as an unfinished backfill. */
  readonly cursor: Readonly<Record<string, unknown>>;
  /** The window ledger (trunk_calls only). */
  readonly windows: LedgerSummary | null;
  /** The lookup queue (lookup streams only). */
  readonly lookups: QueueSummary | null;
}

/** Where `status` finds what it counts of `stream`. */
export function statusSource(stream: StreamDefinition): StatusSource {
  return {
    stream: stream.name,
    table: stream.table.table,
    snapshot: stream.table.snapshot,
    queue: stream.state.kind === 'queue' ? stream.state.queue : null,
    ledger: stream.state.kind === 'windows',
  };
}

/** Reads the state of `definition` for `accountId`; reads only. */
export async function findStreamState(
  database: Database,
  accountId: string,
  definition: StreamDefinition,
): Promise<StreamState> {
  const { name: stream, state: kind } = definition;
  const state = await findSyncState(database.db, accountId, stream);
  const windows =
    kind.kind === 'windows' ? await findLedgerSummary(database.db, { accountId, stream }) : null;
  let lookups: QueueSummary | null = null;
  if (kind.kind === 'queue') {
    const counts = await countLookupsByStatus(database.db, kind.queue, accountId);
    lookups = {
      pending: counts.pending ?? 0,
      fetched: counts.fetched ?? 0,
      not_found: counts.not_found ?? 0,
      failed: counts.failed ?? 0,
    };
  }
  return {
    accountId,
    stream,
    kind: kind.kind,
    watermark: state.watermark ?? null,
    cursor: state.cursor,
    windows,
    lookups,
  };
}

export interface StateResetRequest {
  readonly accountId: string;
  readonly stream: StreamDefinition;
  /** Re-read from here; undefined re-reads everything the stream can. */
  readonly from: EpochMicros | undefined;
}

/** What a reset changed. */
export interface StateResetOutcome {
  readonly accountId: string;
  readonly stream: StreamName;
  /** How the stream keeps its state. */
  readonly kind: StreamStateKind['kind'];
  /** The sync_runs row that records the reset. */
  readonly runId: number;
  readonly watermarkBefore: string | null;
  readonly watermarkAfter: string | null;
  readonly windowsReopened: number;
  readonly lookupsRequeued: number;
}

/**
 * Makes the next run of `stream` read again from `from` (or from the start): the watermark set
 * back to it (cleared without `from`; snapshots always clear it), the ledger windows from there on
 * reopened, the lookup queue entries put back to pending. Data rows are kept. Holds the stream's
 * lock, so no run of it is under way meanwhile, and records the reset in sync_runs (command
 * `state reset`). Throws LockBusyError, saying what to do, when a run of the stream holds it.
 */
export async function resetStreamState(
  database: Database,
  request: StateResetRequest,
): Promise<StateResetOutcome> {
  const { accountId } = request;
  const { name: stream, state: kind } = request.stream;
  const from = request.from === undefined ? null : formatIsoMicros(request.from);
  try {
    return await withAdvisoryLock(database, `${accountId}:${stream}`, { waitMs: 0 }, async () => {
      const runId = await insertRun(database.db, {
        accountId,
        stream,
        command: 'state reset',
        pid: process.pid,
        host: hostname(),
      });
      const changed = await database.db.transaction().execute(async (trx) => {
        const watermarkBefore = await resetWatermark(
          trx,
          accountId,
          stream,
          kind.kind === 'windows' ? from : null,
        );
        const windowsReopened =
          kind.kind === 'windows' ? await reopenWindows(trx, { accountId, stream }, from) : 0;
        const lookupsRequeued =
          kind.kind === 'queue' ? await requeueLookups(trx, kind.queue, accountId, from) : 0;
        const after = await findSyncState(trx, accountId, stream);
        return {
          watermarkBefore,
          watermarkAfter: after.watermark ?? null,
          windowsReopened,
          lookupsRequeued,
        };
      });
      await finishRun(database.db, runId, {
        windowsPlanned: changed.windowsReopened,
        windowsCompleted: 0,
        requests: 0,
        retries: 0,
        waitMs: 0,
        loadWaitMs: 0,
        recordsFetched: 0,
        recordsUpserted: 0,
        recordsChanged: 0,
        recordsRejected: 0,
        status: 'succeeded',
        error: null,
        windowStart: from,
        windowEnd: null,
        gapStart: null,
        gapEnd: null,
      });
      return { accountId, stream, kind: kind.kind, runId, ...changed };
    });
  } catch (error) {
    if (error instanceof LockBusyError) {
      throw new LockBusyError(
        error.lockName,
        `a telesync run of ${stream} for account ${accountId} is in progress; reset its state when it has finished`,
      );
    }
    throw error;
  }
}

export interface ForgetAccountRequest {
  readonly accountId: string;
  /** Its data rows too (trunk_calls, messages…, rejected_records); bookkeeping only otherwise. */
  readonly data: boolean;
}

/** The tables `request` empties of the account, in the order they are emptied. */
export function accountTablesToForget(request: ForgetAccountRequest): readonly AccountTable[] {
  return request.data
    ? [...ACCOUNT_DATA_TABLES, ...ACCOUNT_BOOKKEEPING_TABLES]
    : ACCOUNT_BOOKKEEPING_TABLES;
}

/** What forgetting `request` would delete, per table; reads only. */
export function previewForgetAccount(
  database: Database,
  request: ForgetAccountRequest,
): Promise<{ table: AccountTable; rows: number }[]> {
  return countAccountRows(database.db, request.accountId, accountTablesToForget(request));
}

/**
 * Deletes everything telesync keeps about an account (its state, ledger, runs and lookup queues),
 * and with `data` its rows too, in one transaction, holding the lock of each of `streams` (every
 * stream) of the account so that no run of it is under way. The rows deleted, per table. Throws LockBusyError, saying
 * what to do, when a run of the account holds one of them.
 */
export async function forgetAccount(
  database: Database,
  request: ForgetAccountRequest,
  streams: readonly StreamName[],
): Promise<{ table: AccountTable; rows: number }[]> {
  const holdingLocks = async <T>(
    streams: readonly StreamName[],
    use: () => Promise<T>,
  ): Promise<T> => {
    const [first, ...rest] = streams;
    if (first === undefined) return use();
    return withAdvisoryLock(database, `${request.accountId}:${first}`, { waitMs: 0 }, () =>
      holdingLocks(rest, use),
    );
  };
  try {
    return await holdingLocks(streams, () =>
      database.db
        .transaction()
        .execute((trx) =>
          deleteAccountRows(trx, request.accountId, accountTablesToForget(request)),
        ),
    );
  } catch (error) {
    if (error instanceof LockBusyError) {
      throw new LockBusyError(
        error.lockName,
        `a telesync run for account ${request.accountId} is in progress; forget the account when it has finished`,
      );
    }
    throw error;
  }
}

import type { Kysely } from 'kysely';
import { ApiError } from '../../api/api-errors.js';
import { PageLimitError } from '../../api/telephony-client.js';
import {
  advanceWatermarkFromLedger,
  findSyncState,
  saveCursor,
} from '../../db/repositories/sync-state-repository.js';
import {
  failWindow,
  findLedgerEntries,
  insertPlannedWindows,
  recordWindowChanges,
  restoreWindowStatus,
  type WindowChange,
  type WindowCompletion,
} from '../../db/repositories/sync-windows-repository.js';
import { TRUNK_CALLS } from '../../db/table-specs.js';
import type {
  IncrementalPass,
  LedgerEntry,
  LedgerKey,
  SlotWindow,
} from '../../domain/ledger-entry.js';
import { BatchLoader, type CommitBatch, type CommitHook } from '../../load/batch-loader.js';
import { describeError } from '../../util/coerce-error.js';
import { formatIsoMicros, parseEpochMicros, type EpochMicros } from '../../util/micros.js';
import { isStopped } from '../../util/stopped-error.js';
import type { Tables } from '../../db/schema.js';
import { requestOptions, type RunContext } from '../run-context.js';
import type { SyncSettings } from '../sync-settings.js';
import {
  findResumedBackfill,
  readPendingBackfills,
  withPendingBackfills,
  type PendingBackfill,
} from '../pending-backfills.js';
import { afterProbe, decideBackfill, decideIncremental } from '../window-actions.js';
import {
  deepRecheckRange,
  horizonStart,
  planBackfill,
  planIncremental,
  plannerSettings,
  sliceRange,
  slotStart,
  type BackfillPlan,
  type IncrementalPlan,
  type TimeWindow,
} from '../window-planner.js';
import {
  describeWindow,
  isConsistent,
  readTrunkCallWindow,
  readTrunkCallWindowFully,
  windowFilters,
  WindowIncompleteError,
} from './read-trunk-call-window.js';
import { TRUNK_HISTORY_DAYS } from '../../domain/service-rules.js';

const STREAM = 'trunk_calls';

/**
 * The trunk-call stream: plan windows (window-planner, window-actions: pure) → fetch each window's
 * pages (the client's pager) → normalise → load (BatchLoader: rows in batches; the ledger entry,
 * and for an incremental run the watermark, in the transaction of the window's last rows).
 *
 * An incremental run reads from its watermark minus the lookback to now minus the settle lag;
 * windows already complete are only counted (one request each) and re-read when the count moved.
 * Each transaction that completes windows moves the watermark to what the ledger then justifies (see
 * watermarkFromLedger), whatever order windows complete in. A backfill re-reads any part of the
 * horizon, resumably, and leaves the watermark alone.
 */
export async function syncTrunkCalls(context: RunContext): Promise<void> {
  const now = context.now();
  const settings = plannerSettings(context.settings);
  const { plan, ledger, deepRecheck, windows } = await findIncrementalWindows(
    context.database.db,
    context.accountId,
    context.settings,
    now,
  );
  context.stats.span = { start: plan.from, end: plan.to };
  if (plan.gap !== undefined) {
    context.stats.gap = plan.gap;
    context.log.warn(
      { gap_start: formatIsoMicros(plan.gap.start), gap_end: formatIsoMicros(plan.gap.end) },
      `the watermark fell behind the ${TRUNK_HISTORY_DAYS}-day horizon: calls that ended in this gap can no longer be read from the service`,
    );
  }
  const key: LedgerKey = { accountId: context.accountId, stream: STREAM };
  context.stats.windowsPlanned = windows.length;
  await insertPlannedWindows(
    context.database.db,
    key,
    windows.filter((window) => !ledger.has(window.slotStart)),
  );
  const pass: IncrementalPass = {
    from: plan.from,
    fromSlot: slotStart(plan.from, settings.sliceMicros),
    to: plan.to,
    startedAt: now,
  };
  const ledgerWrites = windowLedger(context, key, (trx) =>
    advanceWatermarkFromLedger(trx, key, pass),
  );
  const loader = createLoader(context);

  for (const window of windows) {
    if (context.signal?.aborted) {
      context.stats.stopped = true;
      break;
    }
    const entry = ledger.get(window.slotStart);
    const action = decideIncremental(window, entry, deepRecheck);
    try {
      if (action.kind === 'probe' && entry !== undefined) {
        await probeWindow(context, window, entry, loader, ledgerWrites);
      } else {
        context.log.debug(
          {
            window: describeWindow(window),
            why: action.kind === 'read' ? action.why : action.kind,
          },
          'reading window',
        );
        await readAndComplete(context, window, loader, ledgerWrites);
      }
    } catch (error) {
      if ((await settleWindowError(context, key, window, ledger, loader, error)) === 'stopped') {
        break;
      }
    }
  }
  await loader.drain();
}

/** The windows of an incremental run, with what the ledger knows of their slots. */
export interface IncrementalWindows {
  readonly plan: IncrementalPlan;
  /** The ledger entries of the slots the windows fall in, by slot start. */
  readonly ledger: ReadonlyMap<EpochMicros, LedgerEntry>;
  readonly deepRecheck: { range: TimeWindow; dayStart: EpochMicros } | undefined;
  /** Re-check days behind the lookback that are due, then the planned windows; oldest first. */
  readonly windows: readonly SlotWindow[];
}

/**
 * Plans an incremental run at `now` from the stream's watermark and ledger; reads only (the run
 * itself and `sync --dry-run` share it).
 */
export async function findIncrementalWindows(
  db: Kysely<Tables>,
  accountId: string,
  syncSettings: SyncSettings,
  now: EpochMicros,
): Promise<IncrementalWindows> {
  const settings = plannerSettings(syncSettings);
  const state = await findSyncState(db, accountId, STREAM);
  const watermark = state.watermark === undefined ? undefined : parseEpochMicros(state.watermark);
  const plan = planIncremental(now, watermark, settings);
  const key: LedgerKey = { accountId, stream: STREAM };
  const deepRange = deepRecheckRange(now, syncSettings.deepRecheckDays);
  const deepRecheck =
    deepRange === undefined ? undefined : { range: deepRange, dayStart: deepRange.end };
  // The re-check days the lookback does not reach (after 06:00 UTC, yesterday is behind it).
  const recheckOnly =
    deepRange === undefined
      ? []
      : sliceRange(
          Math.max(deepRange.start, horizonStart(now)),
          Math.min(deepRange.end, plan.from),
          settings.sliceMicros,
        ).map((window) => withSlot(window, settings.sliceMicros));
  const ledger = await findLedgerEntries(
    db,
    key,
    slotStart(recheckOnly[0]?.start ?? plan.from, settings.sliceMicros),
    plan.to,
  );
  // Of those, only the ones not yet read in full today; the others are not even counted.
  const dueRecheck = recheckOnly.filter((window) => {
    const entry = ledger.get(window.slotStart);
    return (
      entry?.status !== 'complete' ||
      entry.readAt === null ||
      entry.readAt < (deepRecheck?.dayStart ?? 0)
    );
  });
  const planned = plan.windows.map((window) => withSlot(window, settings.sliceMicros));
  return { plan, ledger, deepRecheck, windows: [...dueRecheck, ...planned] };
}

export interface BackfillRequest {
  window: TimeWindow;
}

/**
 * Re-reads every window of `request` (widened to whole slots, cut to the horizon), oldest first.
 * Running the same backfill again after a crash skips the windows it had already read: the
 * backfill's start time stays in the stream's cursor until it finishes.
 */
export async function backfillTrunkCalls(
  context: RunContext,
  request: BackfillRequest,
): Promise<BackfillPlan> {
  const now = context.now();
  const settings = plannerSettings(context.settings);
  const plan = planBackfill(now, request.window, settings);
  context.stats.span = plan.covered;
  context.stats.windowsPlanned = plan.windows.length;
  if (plan.beyondService !== undefined) {
    // The command says it to the person once, in plain words; here only for debugging.
    context.log.debug(
      {
        from: formatIsoMicros(plan.beyondService.start),
        to: formatIsoMicros(plan.beyondService.end),
      },
      `part of the backfill is older than the ${TRUNK_HISTORY_DAYS}-day horizon and cannot be read from the service`,
    );
  }
  if (plan.covered === undefined) return plan;

  const state = await findSyncState(context.database.db, context.accountId, STREAM);
  // Another range's unfinished backfill keeps its resume point; only the same range resumes.
  const pending = readPendingBackfills(state.cursor);
  const resumed = findResumedBackfill(pending, plan.covered, settings.sliceMicros);
  const startedAt = resumed?.startedAt ?? now;
  if (resumed !== undefined) {
    context.log.info(
      { started_at: formatIsoMicros(resumed.startedAt) },
      'resuming an unfinished backfill of the same range: windows it already read are skipped',
    );
  }
  const others = pending.filter((entry) => entry !== resumed);
  const own: PendingBackfill = { startedAt, range: plan.covered };
  await saveCursor(
    context.database.db,
    context.accountId,
    STREAM,
    withPendingBackfills(state.cursor, [...others, own]),
  );

  const key: LedgerKey = { accountId: context.accountId, stream: STREAM };
  const windows = plan.windows.map((window) => withSlot(window, settings.sliceMicros));
  const ledger = await findLedgerEntries(
    context.database.db,
    key,
    slotStart(plan.covered.start, settings.sliceMicros),
    plan.covered.end,
  );
  await insertPlannedWindows(
    context.database.db,
    key,
    windows.filter((window) => !ledger.has(window.slotStart)),
  );
  const ledgerWrites = windowLedger(context, key, leaveWatermark);
  const loader = createLoader(context);
  for (const window of windows) {
    if (context.signal?.aborted) {
      context.stats.stopped = true;
      break;
    }
    const entry = ledger.get(window.slotStart);
    const action = decideBackfill(window, entry, startedAt);
    if (action.kind === 'skip') {
      context.stats.windowsCompleted++;
      context.stats.windowsResumed++;
      continue;
    }
    if (entry?.status === 'complete' && entry.coveredEnd >= window.end)
      context.stats.windowsRereadComplete++;
    try {
      await readAndComplete(context, window, loader, ledgerWrites);
    } catch (error) {
      if ((await settleWindowError(context, key, window, ledger, loader, error)) === 'stopped') {
        break;
      }
    }
  }
  await loader.drain();
  if (!context.stats.stopped && context.stats.failures.length === 0) {
    // The stream's lock is held: the cursor is still the one saved above.
    await saveCursor(
      context.database.db,
      context.accountId,
      STREAM,
      withPendingBackfills(state.cursor, others),
    );
  }
  return plan;
}

/** A backfill's windows leave the watermark alone. */
const leaveWatermark: CommitHook = () => Promise.resolve();

/**
 * How long a read window's completion may wait for the next windows to share its transaction: a
 * quiet day is a few pages, and a 90-day backfill of many such accounts would otherwise be mostly
 * transactions. It waits only while the process's load connections are all busy (the loader's
 * group commit), so it matters only when the database sets the pace; then each of many accounts
 * side by side reaches the connections about once a wait, and the wait sets their transactions'
 * size (docs/scaling.md, "A longer group commit"). The rows of a window and its ledger entry still
 * commit together; a loader's buffer still goes at TELESYNC_BATCH_SIZE rows.
 */
const WINDOW_COMMIT_DELAY_MS = 3_000;

/**
 * The window ledger of one run, written through the loader: the running marks and completions of
 * the windows that share a transaction in one statement, then `advance` (the watermark, from the
 * ledger) once if any window completed.
 */
function windowLedger(
  context: RunContext,
  key: LedgerKey,
  advance: CommitHook,
): CommitBatch<WindowChange> {
  return {
    async write(trx, changes, syncedAt) {
      await recordWindowChanges(trx, context.database.schema, key, changes);
      if (changes.some((change) => change.kind === 'complete')) await advance(trx, syncedAt);
    },
  };
}

/** The stream's loader: rows in batches of TELESYNC_BATCH_SIZE, over the run's load lanes. */
function createLoader(context: RunContext): BatchLoader {
  return new BatchLoader(context, TRUNK_CALLS, {
    lanes: context.loadLanes,
    batchSize: context.settings.batchSize,
    unitDelayMs: WINDOW_COMMIT_DELAY_MS,
  });
}

/**
 * Reads every page of a window and marks it complete in the transaction of its last rows (with
 * the watermark, for an incremental run).
 *
 * The window is marked running (an attempt more) through the loader too, not by a statement and a
 * commit of its own awaited before the first page: it goes with the next transaction the loader
 * writes (the previous windows' completion, a full batch, the loader's unit delay of
 * WINDOW_COMMIT_DELAY_MS, or at the latest this window's own completion), always before this
 * window's completion. With many accounts of quiet days, a commit per window on the path of every
 * read was a good part of the database's work.
 */
async function readAndComplete(
  context: RunContext,
  window: SlotWindow,
  loader: BatchLoader,
  ledgerWrites: CommitBatch<WindowChange>,
): Promise<void> {
  loader.queueBatched(ledgerWrites, { kind: 'running', window, runId: context.runId });
  const read = await readTrunkCallWindowFully(context, window, loader);
  queueCompletion(context, window, loader, ledgerWrites, {
    totalCount: read.total,
    readAt: formatIsoMicros(context.now()),
  });
}

/**
 * Marks `window` complete in the transaction of its last batch. Queued, not awaited: the next
 * window is fetched while this one's last batch commits.
 */
function queueCompletion(
  context: RunContext,
  window: SlotWindow,
  loader: BatchLoader,
  ledgerWrites: CommitBatch<WindowChange>,
  stamp: Pick<WindowCompletion, 'totalCount' | 'readAt' | 'verifiedAt'>,
): void {
  loader.queueBatched(
    ledgerWrites,
    {
      kind: 'complete',
      completion: {
        slotStart: window.slotStart,
        start: window.start,
        end: window.end,
        runId: context.runId,
        ...stamp,
      },
    },
    () => context.stats.windowsCompleted++,
  );
}

/**
 * Counts a completed window with one request and acts on the answer: nothing changed (verified),
 * the window only grew into empty time (extended), it grew with new calls (read the new part), or
 * calls arrived late in the part already read (read it all again).
 */
async function probeWindow(
  context: RunContext,
  window: SlotWindow,
  entry: LedgerEntry,
  loader: BatchLoader,
  ledgerWrites: CommitBatch<WindowChange>,
): Promise<void> {
  const total = await context.client.countTrunkCalls(
    windowFilters(window),
    requestOptions(context),
  );
  const outcome = afterProbe(window, entry, total);
  const verifiedAt = formatIsoMicros(context.now());
  const confirm = () =>
    queueCompletion(context, window, loader, ledgerWrites, { totalCount: total, verifiedAt });
  switch (outcome.kind) {
    case 'unchanged':
    case 'extend':
      confirm();
      return;
    case 'read-new-part': {
      const read = await readTrunkCallWindow(context, outcome.part, loader);
      if (isConsistent(read) && read.total === outcome.expectedNew) {
        confirm();
        return;
      }
      context.log.info(
        { window: describeWindow(window) },
        'calls arrived late in a window already read; reading it again',
      );
      await readAndComplete(context, window, loader, ledgerWrites);
      return;
    }
    case 'read-all':
      context.log.info(
        { window: describeWindow(window), stored: entry.totalCount, service: total },
        'the service count of a window already read changed; reading it again',
      );
      await readAndComplete(context, window, loader, ledgerWrites);
      return;
  }
}

/**
 * Handles what a window's read threw. Stopped (Ctrl-C, shutdown: StoppedError):
 * the window's ledger row gets back the status it had, and the caller stops. A window that did not add up: recorded as failed, and
 * the caller goes on to the next. Anything else is recorded and thrown: a service that fails every
 * request would fail every window the same way, slowly.
 */
async function settleWindowError(
  context: RunContext,
  key: LedgerKey,
  window: SlotWindow,
  ledger: ReadonlyMap<EpochMicros, LedgerEntry>,
  loader: BatchLoader,
  error: unknown,
): Promise<'stopped' | 'failed'> {
  // The window's running mark may still wait in the loader: it goes first, so that what is
  // written below is the window's last word. A loader failure is kept by the loader: the run's
  // last drain throws it when the loop goes on; when this error is thrown instead, the run fails
  // with this one.
  await loader.drain().catch(() => undefined);
  if (isStopped(error)) {
    context.stats.stopped = true;
    await restoreWindowStatus(
      context.database.db,
      key,
      window.slotStart,
      ledger.get(window.slotStart)?.status ?? 'planned',
      context.runId,
    );
    return 'stopped';
  }
  // A window the service describes impossibly fails alone, with its numbers; the next one is read.
  const failsAlone = error instanceof WindowIncompleteError || error instanceof PageLimitError;
  await recordWindowFailure(context, key, window, error, failsAlone);
  if (!failsAlone) throw error;
  context.stats.failures.push(error.message);
  return 'failed';
}

async function recordWindowFailure(
  context: RunContext,
  key: LedgerKey,
  window: SlotWindow,
  error: unknown,
  failsAlone: boolean,
): Promise<void> {
  const message = describeError(error);
  // An error that ends the run is said by the run's own line; the window's is for debugging.
  const level = failsAlone ? 'error' : 'debug';
  context.log[level]({ window: describeWindow(window), err: error }, `window failed: ${message}`);
  try {
    await failWindow(context.database.db, key, window.slotStart, message, context.runId);
  } catch (ledgerError) {
    // The database itself may be what failed; the run's error says so already.
    context.log.warn({ err: ledgerError }, 'could not record the window failure in sync_windows');
  }
  if (error instanceof ApiError && error.status === 400) {
    context.log.error(
      'the service refused a window request; this is a bug in telesync or a change at the service',
    );
  }
}

/** A planned window with the slot of the UTC grid it belongs to (its ledger row's key). */
function withSlot(window: TimeWindow, sliceMicros: number): SlotWindow {
  return { slotStart: slotStart(window.start, sliceMicros), start: window.start, end: window.end };
}

import type { Kysely } from 'kysely';
import { ApiError } from '../api/api-errors.js';
import {
  completeWindow,
  failWindow,
  findLedgerRows,
  markWindowRunning,
  planWindows,
  restoreWindowStatus,
  type LedgerKey,
  type LedgerRow,
  type SlotWindow,
  type WindowCompletion,
} from '../db/repositories/sync-windows-repository.js';
import {
  advanceWatermark,
  findSyncState,
  saveCursor,
} from '../db/repositories/sync-state-repository.js';
import type { Tables } from '../db/schema.js';
import { TRUNK_CALLS } from '../db/table-specs.js';
import { describeError } from '../util/coerce-error.js';
import { formatIsoMicros, parseEpochMicros, type EpochMicros } from '../util/micros.js';
import { BatchLoader } from './batch-loader.js';
import type { RunContext } from './run-context.js';
import {
  describeWindow,
  isConsistent,
  readWindow,
  readWindowFully,
  RunStoppedError,
  WindowIncompleteError,
} from './trunk-window-reader.js';
import { afterProbe, decideBackfill, decideIncremental } from './window-actions.js';
import {
  deepRecheckRange,
  planBackfill,
  planIncremental,
  plannerSettings,
  horizonStart,
  sliceRange,
  slotStart,
  type BackfillPlan,
  type TimeWindow,
} from './window-planner.js';

const STREAM = 'trunk_calls';

/**
 * The trunk-call stream. An incremental run reads from its watermark minus the lookback to now
 * minus the settle lag; windows already complete are only counted (one request each) and re-read
 * when the count moved. A backfill re-reads any part of the horizon, resumably, and leaves the
 * watermark alone.
 */
export async function syncTrunkCalls(context: RunContext): Promise<void> {
  const now = context.now();
  const settings = plannerSettings(context.settings);
  const state = await findSyncState(context.database.db, context.accountId, STREAM);
  const watermark = state.watermark === undefined ? undefined : parseEpochMicros(state.watermark);
  const plan = planIncremental(now, watermark, settings);
  context.stats.span = { start: plan.from, end: plan.to };
  if (plan.gap !== undefined) {
    context.stats.gap = plan.gap;
    context.log.warn(
      { gapStart: formatIsoMicros(plan.gap.start), gapEnd: formatIsoMicros(plan.gap.end) },
      'the watermark fell behind the 90-day horizon: calls that ended in this gap can no longer be read from the service',
    );
  }

  const key: LedgerKey = { accountId: context.accountId, stream: STREAM };
  const deepRange = deepRecheckRange(now, context.settings.deepRecheckDays);
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
  const ledger = await findLedgerRows(
    context.database.db,
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
  const windows = [...dueRecheck, ...planned];
  context.stats.windowsPlanned = windows.length;
  await planWindows(
    context.database.db,
    key,
    windows.filter((window) => !ledger.has(window.slotStart)),
  );
  const loader = new BatchLoader(context, TRUNK_CALLS);
  let contiguous = true;

  for (const window of windows) {
    if (context.signal?.aborted) {
      context.stats.stopped = true;
      break;
    }
    const entry = ledger.get(window.slotStart);
    const action = decideIncremental(window, entry, deepRecheck);
    // Decided now, while every window before this one is known to be complete or queued to be:
    // its commit is queued and may run after later windows have been read.
    // A re-check day behind the lookback lies below the watermark: it neither moves it nor, if it
    // fails, holds back the windows after it.
    const recheckOnlyWindow = window.start < plan.from;
    const mayAdvance = contiguous && !recheckOnlyWindow;
    const advance = (trx: Kysely<Tables>) =>
      mayAdvance
        ? advanceWatermark(trx, context.accountId, STREAM, formatIsoMicros(window.end))
        : Promise.resolve();
    try {
      if (action.kind === 'probe' && entry !== undefined) {
        await probeWindow(context, key, window, entry, loader, advance);
      } else {
        context.log.debug(
          {
            window: describeWindow(window),
            why: action.kind === 'read' ? action.why : action.kind,
          },
          'reading window',
        );
        await readAndComplete(context, key, window, loader, advance);
      }
    } catch (error) {
      if ((await settleWindowError(context, key, window, ledger, error)) === 'stopped') break;
      if (!recheckOnlyWindow) contiguous = false;
    }
  }
  await loader.drain();
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
    context.log.warn(
      {
        from: formatIsoMicros(plan.beyondService.start),
        to: formatIsoMicros(plan.beyondService.end),
      },
      'part of the backfill is older than the 90-day horizon and cannot be read from the service',
    );
  }
  if (plan.covered === undefined) return plan;

  const state = await findSyncState(context.database.db, context.accountId, STREAM);
  const pending = state.cursor.backfill as { startedAt?: string } | undefined;
  const startedAt =
    (pending?.startedAt !== undefined ? parseEpochMicros(pending.startedAt) : undefined) ?? now;
  if (pending?.startedAt !== undefined) {
    context.log.info(
      { startedAt: pending.startedAt },
      'resuming an unfinished backfill: windows it already read are skipped',
    );
  }
  await saveCursor(context.database.db, context.accountId, STREAM, {
    ...state.cursor,
    backfill: {
      startedAt: formatIsoMicros(startedAt),
      from: formatIsoMicros(plan.covered.start),
      to: formatIsoMicros(plan.covered.end),
    },
  });

  const key: LedgerKey = { accountId: context.accountId, stream: STREAM };
  const windows = plan.windows.map((window) => withSlot(window, settings.sliceMicros));
  const ledger = await findLedgerRows(
    context.database.db,
    key,
    slotStart(plan.covered.start, settings.sliceMicros),
    plan.covered.end,
  );
  await planWindows(
    context.database.db,
    key,
    windows.filter((window) => !ledger.has(window.slotStart)),
  );
  const loader = new BatchLoader(context, TRUNK_CALLS);
  for (const window of windows) {
    if (context.signal?.aborted) {
      context.stats.stopped = true;
      break;
    }
    const action = decideBackfill(window, ledger.get(window.slotStart), startedAt);
    if (action.kind === 'skip') {
      context.stats.windowsCompleted++;
      continue;
    }
    try {
      await readAndComplete(context, key, window, loader, () => Promise.resolve());
    } catch (error) {
      if ((await settleWindowError(context, key, window, ledger, error)) === 'stopped') break;
    }
  }
  await loader.drain();
  if (!context.stats.stopped && context.stats.failures.length === 0) {
    // The stream's lock is held: the cursor is still the one saved above.
    const { backfill: _finished, ...rest } = state.cursor;
    await saveCursor(context.database.db, context.accountId, STREAM, rest);
  }
  return plan;
}

/** Reads every page of a window and marks it complete, with `advance`, in the same transaction. */
async function readAndComplete(
  context: RunContext,
  key: LedgerKey,
  window: SlotWindow,
  loader: BatchLoader,
  advance: (trx: Kysely<Tables>) => Promise<void>,
): Promise<void> {
  await markWindowRunning(context.database.db, context.database.schema, key, window, context.runId);
  const read = await readWindowFully(context, window, loader);
  queueCompletion(context, key, window, loader, advance, {
    totalCount: read.total,
    readAt: formatIsoMicros(context.now()),
  });
}

/**
 * Marks `window` complete, with `advance`, in the transaction of its last batch. Queued, not
 * awaited: the next window is fetched while this one's last batch commits.
 */
function queueCompletion(
  context: RunContext,
  key: LedgerKey,
  window: SlotWindow,
  loader: BatchLoader,
  advance: (trx: Kysely<Tables>) => Promise<void>,
  stamp: Pick<WindowCompletion, 'totalCount' | 'readAt' | 'verifiedAt'>,
): void {
  loader.queueCommit(
    async (trx) => {
      await completeWindow(trx, context.database.schema, key, {
        slotStart: window.slotStart,
        start: window.start,
        end: window.end,
        runId: context.runId,
        ...stamp,
      });
      await advance(trx);
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
  key: LedgerKey,
  window: SlotWindow,
  entry: LedgerRow,
  loader: BatchLoader,
  advance: (trx: Kysely<Tables>) => Promise<void>,
): Promise<void> {
  const total = await context.client.countTrunkCalls(
    { end_time: { gte: window.start, lt: window.end } },
    { meter: context.meter },
  );
  const outcome = afterProbe(window, entry, total);
  const verifiedAt = formatIsoMicros(context.now());
  const confirm = () =>
    queueCompletion(context, key, window, loader, advance, { totalCount: total, verifiedAt });
  switch (outcome.kind) {
    case 'unchanged':
    case 'extend':
      confirm();
      return;
    case 'read-new-part': {
      const read = await readWindow(context, outcome.part, loader);
      if (isConsistent(read) && read.total === outcome.expectedNew) {
        confirm();
        return;
      }
      context.log.info(
        { window: describeWindow(window) },
        'calls arrived late in a window already read; reading it again',
      );
      await readAndComplete(context, key, window, loader, advance);
      return;
    }
    case 'read-all':
      context.log.info(
        { window: describeWindow(window), stored: entry.totalCount, service: total },
        'the service count of a window already read changed; reading it again',
      );
      await readAndComplete(context, key, window, loader, advance);
      return;
  }
}

/**
 * Handles what a window's read threw. Stopped (Ctrl-C, shutdown): the window's ledger row gets back
 * the status it had, and the caller stops. A window that did not add up: recorded as failed, and
 * the caller goes on to the next. Anything else is recorded and thrown: a service that fails every
 * request would fail every window the same way, slowly.
 */
async function settleWindowError(
  context: RunContext,
  key: LedgerKey,
  window: SlotWindow,
  ledger: ReadonlyMap<EpochMicros, LedgerRow>,
  error: unknown,
): Promise<'stopped' | 'failed'> {
  if (error instanceof RunStoppedError) {
    context.stats.stopped = true;
    await restoreWindowStatus(
      context.database.db,
      key,
      window.slotStart,
      ledger.get(window.slotStart)?.status ?? 'planned',
    );
    return 'stopped';
  }
  await recordWindowFailure(context, key, window, error);
  if (!(error instanceof WindowIncompleteError)) throw error;
  context.stats.failures.push(error.message);
  return 'failed';
}

async function recordWindowFailure(
  context: RunContext,
  key: LedgerKey,
  window: SlotWindow,
  error: unknown,
): Promise<void> {
  const message = describeError(error);
  context.log.error({ window: describeWindow(window), err: error }, `window failed: ${message}`);
  try {
    await failWindow(context.database.db, key, window.slotStart, message);
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

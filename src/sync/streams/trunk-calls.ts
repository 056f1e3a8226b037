import { PageLimitError } from '../../api/telephony-client.js';
import type { Database } from '../../db/connect.js';
import { findSyncState, saveCursor } from '../../db/repositories/sync-state-repository.js';
import {
  findLedgerEntries,
  type WindowCompletion,
} from '../../db/repositories/sync-windows-repository.js';
import { TRUNK_CALLS } from '../../db/table-specs.js';
import type {
  IncrementalPass,
  LedgerEntry,
  LedgerKey,
  SlotWindow,
} from '../../domain/ledger-entry.js';
import type { BatchLoader, BufferOptions } from '../../load/batch-loader.js';
import { normalizeTrunkCall } from '../../normalize/normalize-trunk-call.js';
import { formatIsoMicros, type EpochMicros } from '../../util/micros.js';
import { requestOptions, type RunContext } from '../run-context.js';
import {
  findResumedBackfill,
  readPendingBackfills,
  withPendingBackfills,
  type PendingBackfill,
} from '../pending-backfills.js';
import { previewTrunkCallBackfill, previewTrunkCallSync } from '../run-preview.js';
import {
  oneRound,
  type RunMode,
  type StreamDefinition,
  type UnitCommit,
  type UnitPlan,
} from '../stream-definition.js';
import { findIncrementalWindows, withSlot } from '../trunk-call-plan.js';
import {
  afterProbe,
  decideBackfill,
  decideIncremental,
  type WindowAction,
} from '../window-actions.js';
import {
  describeWindow,
  planBackfill,
  plannerSettings,
  slotStart,
  type TimeWindow,
} from '../window-planner.js';
import { TRUNK_HISTORY_DAYS } from '../../domain/service-rules.js';
import {
  isConsistent,
  readTrunkCallWindow,
  readTrunkCallWindowFully,
  windowFilters,
  WindowIncompleteError,
} from './read-trunk-call-window.js';

const STREAM = 'trunk_calls';

/** One window of a run: what the ledger knew of its slot, and what to do with it. */
interface WindowUnit {
  readonly window: SlotWindow;
  readonly entry: LedgerEntry | undefined;
  /** Read every page, count it with one request (a probe), or skip it (a resumed backfill). */
  readonly action: WindowAction;
}

/**
 * The trunk-call stream: windows of the UTC grid (window-planner, window-actions: pure) → each
 * window's pages (the client's pager) → normalise → load (rows in batches; the window's ledger
 * entry, and for an incremental run the watermark, in the transaction of its last rows: the
 * runner writes every ledger row from the window changes and slots, and the watermark from the
 * rule, that this stream declares).
 *
 * An incremental run reads from its watermark minus the lookback to now minus the settle lag;
 * windows already complete are only counted (a probe unit, one request each) and re-read when the
 * count moved. Each transaction that completes windows moves the watermark to what the ledger then
 * justifies (see watermarkFromLedger), whatever order windows complete in. A backfill (the
 * stream's other planning mode) re-reads any part of the horizon, resumably, and leaves the
 * watermark alone.
 */
export const TRUNK_CALLS_STREAM: StreamDefinition<WindowUnit> = {
  name: STREAM,
  description: 'completed trunk call records, by end_time window (incremental)',
  table: TRUNK_CALLS,
  defaultSchedule: '*/15 * * * *',
  state: { kind: 'windows' },
  normalize: normalizeTrunkCall,
  batching: (run) => ({
    lanes: run.loadLanes,
    batchSize: run.settings.batchSize,
    unitDelayMs: WINDOW_COMMIT_DELAY_MS,
  }),
  plan: (run, mode) =>
    mode.kind === 'backfill' ? planBackfillUnits(run, mode.window) : planIncrementalUnits(run),
  async readUnit(run, { window, entry, action }, loader, commit) {
    switch (action.kind) {
      case 'skip':
        commit.alreadyComplete();
        run.stats.windowsResumed++;
        return;
      case 'probe':
        if (entry !== undefined) {
          await probeWindow(run, window, entry, loader, commit);
          return;
        }
        break;
      case 'read':
        if (action.why === 'backfill') {
          if (entry?.status === 'complete' && entry.coveredEnd >= window.end)
            run.stats.windowsRereadComplete++;
        } else {
          run.log.debug({ window: describeWindow(window), why: action.why }, 'reading window');
        }
    }
    // A window never read holds no rows yet; one read before (complete, failed, or left running
    // by a run that ended) may hold them.
    const mayBeStored = entry !== undefined && entry.status !== 'planned';
    await readAndComplete(run, window, loader, commit, { mayBeStored });
  },
  // A window the service describes impossibly fails alone, with its numbers; the next is read.
  failsAlone: (error) => error instanceof WindowIncompleteError || error instanceof PageLimitError,
  ledgerSlot: ({ window, entry }) => ({ window, status: entry?.status }),
  preview: (database: Database, accountId, settings, now, mode: RunMode) =>
    mode.kind === 'backfill'
      ? previewTrunkCallBackfill(database, accountId, mode.window, settings, now)
      : previewTrunkCallSync(database, accountId, settings, now),
};

/** An incremental run's windows: re-check days due, then the lookback to now minus the settle lag. */
async function planIncrementalUnits(run: RunContext): Promise<UnitPlan<WindowUnit>> {
  const now = run.now();
  const settings = plannerSettings(run.settings);
  const { plan, ledger, deepRecheck, windows } = await findIncrementalWindows(
    run.database.db,
    run.accountId,
    run.settings,
    now,
  );
  run.stats.span = { start: plan.from, end: plan.to };
  if (plan.gap !== undefined) {
    run.stats.gap = plan.gap;
    run.log.warn(
      { gap_start: formatIsoMicros(plan.gap.start), gap_end: formatIsoMicros(plan.gap.end) },
      `the watermark fell behind the ${TRUNK_HISTORY_DAYS}-day horizon: calls that ended in this gap can no longer be read from the service`,
    );
  }
  const pass: IncrementalPass = {
    from: plan.from,
    fromSlot: slotStart(plan.from, settings.sliceMicros),
    to: plan.to,
    startedAt: now,
  };
  return {
    rounds: oneRound(
      windowUnits(windows, ledger, (window, entry) =>
        decideIncremental(window, entry, deepRecheck),
      ),
    ),
    watermark: { kind: 'ledger', pass },
  };
}

/**
 * A backfill's windows: every window of `requested` (widened to whole slots, cut to the horizon),
 * oldest first. Running the same backfill again after a crash skips the windows it had already
 * read: the backfill's start time stays in the stream's cursor until it finishes.
 */
async function planBackfillUnits(
  run: RunContext,
  requested: TimeWindow,
): Promise<UnitPlan<WindowUnit>> {
  const now = run.now();
  const settings = plannerSettings(run.settings);
  const plan = planBackfill(now, requested, settings);
  run.stats.span = plan.covered;
  if (plan.beyondService !== undefined) {
    // The command says it to the person once, in plain words; here only for debugging.
    run.log.debug(
      {
        from: formatIsoMicros(plan.beyondService.start),
        to: formatIsoMicros(plan.beyondService.end),
      },
      `part of the backfill is older than the ${TRUNK_HISTORY_DAYS}-day horizon and cannot be read from the service`,
    );
  }
  if (plan.covered === undefined) {
    run.stats.windowsPlanned = plan.windows.length;
    return { rounds: oneRound([]), backfill: plan };
  }

  const state = await findSyncState(run.database.db, run.accountId, STREAM);
  // Another range's unfinished backfill keeps its resume point; only the same range resumes.
  const pending = readPendingBackfills(state.cursor);
  const resumed = findResumedBackfill(pending, plan.covered, settings.sliceMicros);
  const startedAt = resumed?.startedAt ?? now;
  if (resumed !== undefined) {
    run.log.info(
      { started_at: formatIsoMicros(resumed.startedAt) },
      'resuming an unfinished backfill of the same range: windows it already read are skipped',
    );
  }
  const others = pending.filter((entry) => entry !== resumed);
  const own: PendingBackfill = { startedAt, range: plan.covered };
  await saveCursor(
    run.database.db,
    run.accountId,
    STREAM,
    withPendingBackfills(state.cursor, [...others, own]),
  );

  const key: LedgerKey = { accountId: run.accountId, stream: STREAM };
  const windows = plan.windows.map((window) => withSlot(window, settings.sliceMicros));
  const ledger = await findLedgerEntries(
    run.database.db,
    key,
    slotStart(plan.covered.start, settings.sliceMicros),
    plan.covered.end,
  );
  // A backfill's windows leave the watermark alone: no rule.
  return {
    rounds: oneRound(
      windowUnits(windows, ledger, (window, entry) => decideBackfill(window, entry, startedAt)),
    ),
    // The stream's lock is held: the cursor is still the one saved above.
    finish: () =>
      saveCursor(
        run.database.db,
        run.accountId,
        STREAM,
        withPendingBackfills(state.cursor, others),
      ),
    backfill: plan,
  };
}

/** A plan's windows as units: each with its ledger entry and what the plan decides for it. */
function windowUnits(
  windows: readonly SlotWindow[],
  ledger: ReadonlyMap<EpochMicros, LedgerEntry>,
  decide: (window: SlotWindow, entry: LedgerEntry | undefined) => WindowAction,
): WindowUnit[] {
  return windows.map((window) => {
    const entry = ledger.get(window.slotStart);
    return { window, entry, action: decide(window, entry) };
  });
}

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
 * Reads every page of a window and marks it complete in the transaction of its last rows (the
 * runner adds the watermark, for an incremental run).
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
  commit: UnitCommit,
  options: BufferOptions,
): Promise<void> {
  commit.queueWindowChange({ kind: 'running', window, runId: context.runId });
  const read = await readTrunkCallWindowFully(context, window, loader, options);
  queueCompletion(context, window, commit, {
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
  commit: UnitCommit,
  stamp: Pick<WindowCompletion, 'totalCount' | 'readAt' | 'verifiedAt'>,
): void {
  commit.queueWindowChange({
    kind: 'complete',
    completion: {
      slotStart: window.slotStart,
      start: window.start,
      end: window.end,
      runId: context.runId,
      ...stamp,
    },
  });
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
  commit: UnitCommit,
): Promise<void> {
  const total = await context.client.countTrunkCalls(
    windowFilters(window),
    requestOptions(context),
  );
  const outcome = afterProbe(window, entry, total);
  const verifiedAt = formatIsoMicros(context.now());
  const confirm = () => queueCompletion(context, window, commit, { totalCount: total, verifiedAt });
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
      await readAndComplete(context, window, loader, commit, { mayBeStored: true });
      return;
    }
    case 'read-all':
      context.log.info(
        { window: describeWindow(window), stored: entry.totalCount, service: total },
        'the service count of a window already read changed; reading it again',
      );
      await readAndComplete(context, window, loader, commit, { mayBeStored: true });
      return;
  }
}

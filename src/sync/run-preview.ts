import type { Database } from '../db/connect.js';
import { findLedgerEntries } from '../db/repositories/sync-windows-repository.js';
import { findSyncState } from '../db/repositories/sync-state-repository.js';
import type { LedgerEntry } from '../domain/ledger-entry.js';
import type { StreamName } from '../domain/streams.js';
import type { EpochMicros } from '../util/micros.js';
import { findResumedBackfill, readPendingBackfills } from './pending-backfills.js';
import { findIncrementalWindows } from './trunk-call-plan.js';
import type { SyncSettings } from './sync-settings.js';
import { decideBackfill, decideIncremental, type WindowAction } from './window-actions.js';
import {
  planBackfill,
  plannerSettings,
  slotStart,
  type BackfillPlan,
  type TimeWindow,
} from './window-planner.js';

/**
 * What a run would do (`sync --dry-run`, `backfill --dry-run`), from the ledger and the queues
 * alone: nothing is asked of the service (not even counts) and nothing is written. What only the
 * service could tell is left unknown (null).
 */

/** Records per page of a list (spec: limit at most 20). */
export const PAGE_SIZE = 20;

/** One window of a planned trunk-call run. */
export interface WindowPreview extends TimeWindow {
  readonly action: WindowAction['kind'];
  /** Why it is read (new, incomplete, deep-recheck, backfill), or skipped. */
  readonly why: string | undefined;
  /** The service's count for the slot when the ledger last read or verified it; null if unknown. */
  readonly knownCount: number | null;
  /** Requests the window costs if nothing changed at the service; null when the count is unknown. */
  readonly requests: number | null;
}

/** What one run (one account × stream) would do. */
export interface RunPreview {
  readonly accountId: string;
  readonly stream: StreamName;
  readonly mode: 'sync' | 'backfill';
  /** The range read (trunk_calls), undefined otherwise or when there is nothing to read. */
  readonly range: TimeWindow | undefined;
  /** The windows (trunk_calls); empty for other streams. */
  readonly windows: readonly WindowPreview[];
  /** Lookups due (lookup streams); null for other streams. */
  readonly lookupsDue: number | null;
  /** Requests known to be needed (a lower bound when `unknownParts` > 0). */
  readonly requestsKnown: number;
  /** Windows or parts whose cost only the service can tell. */
  readonly unknownParts: number;
  /** The backfill plan, for what it leaves out. */
  readonly backfill?: BackfillPlan;
}

/** The requests a window costs given the ledger: a count probe, or every page of a known count. */
export function planWindowPreview(
  window: TimeWindow,
  action: WindowAction,
  entry: LedgerEntry | undefined,
): WindowPreview {
  const knownCount = entry?.totalCount ?? null;
  const why = action.kind === 'probe' ? undefined : action.why;
  const requests =
    action.kind === 'skip'
      ? 0
      : action.kind === 'probe'
        ? 1
        : knownCount === null
          ? null
          : Math.max(1, Math.ceil(knownCount / PAGE_SIZE));
  return { start: window.start, end: window.end, action: action.kind, why, knownCount, requests };
}

/** `preview` with its requests summed; `extraUnknown`: parts whose cost only the service knows. */
export function summedPreview(
  preview: Omit<RunPreview, 'requestsKnown' | 'unknownParts'>,
  extraUnknown = 0,
): RunPreview {
  const requestsKnown = preview.windows.reduce((sum, window) => sum + (window.requests ?? 0), 0);
  const unknownParts =
    preview.windows.filter((window) => window.requests === null).length + extraUnknown;
  return { ...preview, requestsKnown: requestsKnown + (preview.lookupsDue ?? 0), unknownParts };
}

/** What an incremental trunk-call run (`sync`) would do for `accountId` at `now`. Reads only. */
export async function previewTrunkCallSync(
  database: Database,
  accountId: string,
  settings: SyncSettings,
  now: EpochMicros,
): Promise<RunPreview> {
  const { plan, ledger, deepRecheck, windows } = await findIncrementalWindows(
    database.db,
    accountId,
    settings,
    now,
  );
  return summedPreview({
    accountId,
    stream: 'trunk_calls',
    mode: 'sync',
    range: plan.from < plan.to ? { start: plan.from, end: plan.to } : undefined,
    windows: windows.map((window) => {
      const entry = ledger.get(window.slotStart);
      return planWindowPreview(window, decideIncremental(window, entry, deepRecheck), entry);
    }),
    lookupsDue: null,
  });
}

/** What `backfill` of `requested` would do for `accountId` at `now`. Reads only. */
export async function previewTrunkCallBackfill(
  database: Database,
  accountId: string,
  requested: TimeWindow,
  settings: SyncSettings,
  now: EpochMicros,
): Promise<RunPreview> {
  const planner = plannerSettings(settings);
  const plan = planBackfill(now, requested, planner);
  const base = { accountId, stream: 'trunk_calls' as const, mode: 'backfill' as const };
  if (plan.covered === undefined) {
    return summedPreview({
      ...base,
      range: undefined,
      windows: [],
      lookupsDue: null,
      backfill: plan,
    });
  }
  const state = await findSyncState(database.db, accountId, 'trunk_calls');
  // Resuming an unfinished backfill of the same range skips what it read; a new one reads every window.
  const startedAt =
    findResumedBackfill(readPendingBackfills(state.cursor), plan.covered, planner.sliceMicros)
      ?.startedAt ?? now;
  const ledger = await findLedgerEntries(
    database.db,
    { accountId, stream: 'trunk_calls' },
    slotStart(plan.covered.start, planner.sliceMicros),
    plan.covered.end,
  );
  return summedPreview({
    ...base,
    range: plan.covered,
    windows: plan.windows.map((window) => {
      const entry = ledger.get(slotStart(window.start, planner.sliceMicros));
      return planWindowPreview(window, decideBackfill(window, entry, startedAt), entry);
    }),
    lookupsDue: null,
    backfill: plan,
  });
}

/** previewTrunkCallBackfill, under the name `backfill --dry-run` calls it by. */
export const previewBackfill = previewTrunkCallBackfill;

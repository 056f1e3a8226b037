import type { Kysely } from 'kysely';
import { findSyncState } from '../db/repositories/sync-state-repository.js';
import { findLedgerEntries } from '../db/repositories/sync-windows-repository.js';
import type { Tables } from '../db/schema.js';
import type { LedgerEntry, LedgerKey, SlotWindow } from '../domain/ledger-entry.js';
import { parseEpochMicros, type EpochMicros } from '../util/micros.js';
import type { SyncSettings } from './sync-settings.js';
import {
  deepRecheckRange,
  horizonStart,
  planIncremental,
  plannerSettings,
  sliceRange,
  slotStart,
  type IncrementalPlan,
  type TimeWindow,
} from './window-planner.js';

const STREAM = 'trunk_calls';

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
 * Plans an incremental trunk-call run at `now` from the stream's watermark and ledger; reads only
 * (the run itself and `sync --dry-run` share it).
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

/** A planned window with the slot of the UTC grid it belongs to (its ledger row's key). */
export function withSlot(window: TimeWindow, sliceMicros: number): SlotWindow {
  return { slotStart: slotStart(window.start, sliceMicros), start: window.start, end: window.end };
}

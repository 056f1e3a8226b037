import type { LedgerEntry } from '../domain/ledger-entry.js';
import type { EpochMicros } from '../util/micros.js';
import type { TimeWindow } from './window-planner.js';

/**
 * What to do with one planned window, given what the ledger (sync_windows) says about its slot:
 * pure decisions, so the cost of an incremental run (requests per window) follows from rules that
 * can be tested on their own.
 */

export type WindowAction =
  /** Read every page. */
  | { readonly kind: 'read'; readonly why: 'new' | 'incomplete' | 'deep-recheck' | 'backfill' }
  /** Ask for the count with limit=1 and compare it with the ledger (see afterProbe). */
  | { readonly kind: 'probe' }
  /** Nothing to do. */
  | { readonly kind: 'skip'; readonly why: 'read-since-backfill-start' };

/** An incremental run's action for `window`. */
export function decideIncremental(
  window: TimeWindow,
  entry: LedgerEntry | undefined,
  deepRecheck: { range: TimeWindow; dayStart: EpochMicros } | undefined,
): WindowAction {
  if (entry === undefined || entry.status === 'planned') return { kind: 'read', why: 'new' };
  if (entry.status !== 'complete' || entry.totalCount === null)
    return { kind: 'read', why: 'incomplete' };
  // The nightly re-check reads the previous UTC day(s) in full once per UTC day; read_at records
  // that it happened, so a crashed re-check resumes where it stopped.
  if (
    deepRecheck !== undefined &&
    window.start < deepRecheck.range.end &&
    deepRecheck.range.start < window.end &&
    (entry.readAt === null || entry.readAt < deepRecheck.dayStart)
  ) {
    return { kind: 'read', why: 'deep-recheck' };
  }
  return { kind: 'probe' };
}

/**
 * A backfill's action for `window`: read it, unless this backfill (started at `backfillStartedAt`,
 * possibly in an earlier process that crashed) already read the whole of it.
 */
export function decideBackfill(
  window: TimeWindow,
  entry: LedgerEntry | undefined,
  backfillStartedAt: EpochMicros,
): WindowAction {
  if (
    entry !== undefined &&
    entry.status === 'complete' &&
    entry.readAt !== null &&
    entry.readAt >= backfillStartedAt &&
    entry.coveredEnd >= window.end
  ) {
    return { kind: 'skip', why: 'read-since-backfill-start' };
  }
  return { kind: 'read', why: 'backfill' };
}

export type ProbeOutcome =
  /** Count unchanged and nothing new to cover: the window is verified as it stands. */
  | { readonly kind: 'unchanged' }
  /** Count unchanged, and the window now reaches further: the new part holds no calls. */
  | { readonly kind: 'extend' }
  /** The count grew and the window reaches further: read only the new part, then check the sum. */
  | { readonly kind: 'read-new-part'; readonly part: TimeWindow; readonly expectedNew: number }
  /** The count of the part already read changed (late calls): read the whole window again. */
  | { readonly kind: 'read-all' };

/**
 * What a count probe of `window` means, given the ledger entry of its slot (complete, with a
 * count). A late call in the part already read is caught here; a window that merely grew into new
 * time reads only that new time.
 */
export function afterProbe(
  window: TimeWindow,
  entry: LedgerEntry,
  probedTotal: number,
): ProbeOutcome {
  const known = entry.totalCount ?? 0;
  const grew = entry.coveredEnd < window.end;
  if (probedTotal === known) return grew ? { kind: 'extend' } : { kind: 'unchanged' };
  if (grew && probedTotal > known) {
    return {
      kind: 'read-new-part',
      part: { start: entry.coveredEnd, end: window.end },
      expectedNew: probedTotal - known,
    };
  }
  return { kind: 'read-all' };
}

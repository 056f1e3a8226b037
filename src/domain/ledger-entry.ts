import type { EpochMicros } from '../util/micros.js';

/**
 * The window ledger (sync_windows) as the sync engine sees it: one entry per slot of the UTC grid
 * of a stream, keyed by the slot's start. The repository reads and writes it; the window decisions
 * and the watermark are derived from it.
 */

/** Where a slot stands. */
export type LedgerStatus = 'planned' | 'running' | 'complete' | 'failed';

/** The ledger of one account's stream. */
export interface LedgerKey {
  readonly accountId: string;
  readonly stream: string;
}

/** A window with the slot of the UTC grid it belongs to (its ledger entry's key). */
export interface SlotWindow {
  readonly slotStart: EpochMicros;
  readonly start: EpochMicros;
  readonly end: EpochMicros;
}

/** The ledger's record of a slot. */
export interface LedgerEntry {
  readonly status: LedgerStatus;
  /** The slot of the UTC grid the entry stands for. */
  readonly slotStart: EpochMicros;
  /** Lower bound of what was read: the slot start, or later where the horizon cut it. */
  readonly start: EpochMicros;
  /** Upper bound of what was read: the slot end, or less while the slot was still open. */
  readonly coveredEnd: EpochMicros;
  /** The service's count for [start, coveredEnd) when it was last read or verified. */
  readonly totalCount: number | null;
  /** When every page of the window was last read. */
  readonly readAt: EpochMicros | null;
  /** When a count request last confirmed the window without reading it. */
  readonly verifiedAt: EpochMicros | null;
}

/**
 * An incremental pass of a stream: its windows cover `[from, to)`, in the slots starting from
 * `fromSlot` (the slot of `from`); it was planned at `startedAt`. Its windows are the ones that
 * move the watermark.
 */
export interface IncrementalPass {
  readonly from: EpochMicros;
  readonly fromSlot: EpochMicros;
  readonly to: EpochMicros;
  readonly startedAt: EpochMicros;
}

/**
 * The watermark the ledger justifies after windows of `pass` completed: the end of the contiguous
 * run of windows the pass confirmed complete (read in full or verified by a count at or after its
 * start), beginning with its first window, at `pass.from`; undefined when that one is not
 * confirmed yet. It depends only on the ledger, not on the order windows completed in, so windows
 * may complete in any order (on several processes) and the watermark is still right. A window that
 * failed, or that a stopped run left unread, ends the run of windows: it holds the watermark back,
 * so the lookback reads it again. Windows before `pass.from` (re-checks of older days) are not part
 * of it: they neither move nor hold back the watermark.
 */
export function watermarkFromLedger(
  entries: Iterable<LedgerEntry>,
  pass: Pick<IncrementalPass, 'from' | 'startedAt'>,
): EpochMicros | undefined {
  const byStart = new Map<EpochMicros, LedgerEntry>();
  for (const entry of entries) byStart.set(entry.start, entry);
  let end: EpochMicros | undefined;
  let at = pass.from;
  for (;;) {
    const entry = byStart.get(at);
    if (entry === undefined || !isConfirmedSince(entry, pass.startedAt)) return end;
    end = entry.coveredEnd;
    if (end <= at) return end;
    at = end;
  }
}

/** Whether `entry` is complete and was read or verified at or after `since`. */
function isConfirmedSince(entry: LedgerEntry, since: EpochMicros): boolean {
  return (
    entry.status === 'complete' &&
    ((entry.readAt !== null && entry.readAt >= since) ||
      (entry.verifiedAt !== null && entry.verifiedAt >= since))
  );
}

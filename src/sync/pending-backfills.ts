import { formatIsoMicros, parseEpochMicros, type EpochMicros } from '../util/micros.js';
import { slotStart, type TimeWindow } from './window-planner.js';

/**
 * The unfinished backfills of an account's trunk calls, kept in the stream's cursor until each
 * finishes: several may be pending at once (`--days 90` stopped, then `--days 2` run), and each
 * resumes only when the same range is asked for again. Pure.
 */

/** One unfinished backfill: when it started (the windows it read since are skipped) and its range. */
export interface PendingBackfill {
  readonly startedAt: EpochMicros;
  readonly range: TimeWindow;
}

interface StoredBackfill {
  startedAt?: unknown;
  from?: unknown;
  to?: unknown;
}

/** The pending backfills a cursor holds (`backfills`, and the single `backfill` of older versions). */
export function readPendingBackfills(cursor: Readonly<Record<string, unknown>>): PendingBackfill[] {
  const stored: unknown[] = [
    ...(Array.isArray(cursor.backfills) ? (cursor.backfills as unknown[]) : []),
    ...(cursor.backfill === undefined ? [] : [cursor.backfill]),
  ];
  return stored.flatMap((entry) => {
    const { startedAt, from, to } = (entry ?? {}) as StoredBackfill;
    const parsed = [startedAt, from, to].map((text) =>
      typeof text === 'string' ? parseEpochMicros(text) : undefined,
    );
    if (parsed.some((value) => value === undefined)) return [];
    const [started, start, end] = parsed as [EpochMicros, EpochMicros, EpochMicros];
    return [{ startedAt: started, range: { start, end } }];
  });
}

/** `cursor` holding exactly `pending` (the older single entry dropped). */
export function withPendingBackfills(
  cursor: Readonly<Record<string, unknown>>,
  pending: readonly PendingBackfill[],
): Record<string, unknown> {
  const { backfill: _older, backfills: _current, ...rest } = cursor;
  if (pending.length === 0) return rest;
  return {
    ...rest,
    backfills: pending.map((entry) => ({
      startedAt: formatIsoMicros(entry.startedAt),
      from: formatIsoMicros(entry.range.start),
      to: formatIsoMicros(entry.range.end),
    })),
  };
}

/**
 * The pending backfill that `covered` resumes: the one over the same slots (first and last), so
 * `backfill --days 90` run again the same day resumes its unfinished self, and nothing else does.
 */
export function findResumedBackfill(
  pending: readonly PendingBackfill[],
  covered: TimeWindow,
  sliceMicros: number,
): PendingBackfill | undefined {
  const slots = (range: TimeWindow) =>
    `${slotStart(range.start, sliceMicros)}:${slotStart(range.end - 1, sliceMicros)}`;
  return pending.find((entry) => slots(entry.range) === slots(covered));
}

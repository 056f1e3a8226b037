import { DateTime } from 'luxon';
import { TRUNK_HISTORY_DAYS, TRUNK_MAX_RANGE_DAYS } from '../domain/service-rules.js';
import {
  epochMicrosFromMillis,
  formatIsoMicros,
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_MINUTE,
  MICROS_PER_SECOND,
  type EpochMicros,
} from '../util/micros.js';

/**
 * Window planning for the trunk-call stream: pure functions of the clock and the settings.
 *
 * Windows are slots of a UTC grid (`slice` wide, default one day, aligned to the Unix epoch so a
 * 24-hour slice starts at midnight UTC), half-open `[start, end)`, oldest first. Every window lies
 * inside the service's retrievable horizon and ends no later than now minus the settle lag. Only
 * the newest window may be cut short by that end, and only the oldest by the horizon; all others
 * are whole slots, so the same slot is the same ledger row from one run to the next.
 */

/**
 * How far inside the horizon the oldest window starts, so a window planned a moment ago is not
 * refused as too old when it is sent (assumption A15).
 */
export const HORIZON_MARGIN_MINUTES = 10;

/**
 * A part of a backfill beyond the service's horizon shorter than this is only the clock moving
 * between `--days N` being read and the run planning it: not worth a warning (planLeftOut).
 */
export const HORIZON_ROUNDING_MICROS = MICROS_PER_SECOND;

export interface PlannerSettings {
  /** Width of a slot; at most TRUNK_MAX_RANGE_DAYS. */
  readonly sliceMicros: number;
  /** Calls that ended less than this long ago are left for a later run. */
  readonly settleLagMicros: number;
  /** An incremental run starts this far behind its watermark. */
  readonly lookbackMicros: number;
  /** A first incremental run (no watermark) starts this far back. */
  readonly initialMicros: number;
}

/** Settings from the configuration's units (hours, minutes, days). */
export function plannerSettings(sync: {
  sliceHours: number;
  settleLagMinutes: number;
  lookbackHours: number;
  initialDays: number;
}): PlannerSettings {
  return {
    sliceMicros: Math.min(sync.sliceHours * MICROS_PER_HOUR, TRUNK_MAX_RANGE_DAYS * MICROS_PER_DAY),
    settleLagMicros: sync.settleLagMinutes * MICROS_PER_MINUTE,
    lookbackMicros: sync.lookbackHours * MICROS_PER_HOUR,
    initialMicros: sync.initialDays * MICROS_PER_DAY,
  };
}

/** A half-open range of end_time: `[start, end)`. */
export interface TimeWindow {
  readonly start: EpochMicros;
  readonly end: EpochMicros;
}

/** The oldest instant it is safe to ask the service for, at `now`. */
export function horizonStart(now: EpochMicros): EpochMicros {
  return now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY + HORIZON_MARGIN_MINUTES * MICROS_PER_MINUTE;
}

/** The newest instant a run at `now` reads up to (exclusive). */
export function settledEnd(now: EpochMicros, settings: PlannerSettings): EpochMicros {
  return now - settings.settleLagMicros;
}

/** The start of the slot that holds `at`. */
export function slotStart(at: EpochMicros, sliceMicros: number): EpochMicros {
  return Math.floor(at / sliceMicros) * sliceMicros;
}

/**
 * Cuts `[from, to)` into slot windows, oldest first. The first window starts at `from` even when
 * it is not on the grid; every other boundary is a slot boundary.
 */
export function sliceRange(from: EpochMicros, to: EpochMicros, sliceMicros: number): TimeWindow[] {
  const windows: TimeWindow[] = [];
  let start = from;
  while (start < to) {
    const end = Math.min(slotStart(start, sliceMicros) + sliceMicros, to);
    windows.push({ start, end });
    start = end;
  }
  return windows;
}

export interface IncrementalPlan {
  readonly windows: readonly TimeWindow[];
  /** Where the run starts reading: before the watermark by the lookback, on the grid. */
  readonly from: EpochMicros;
  /** Where it stops (exclusive): now minus the settle lag. */
  readonly to: EpochMicros;
  /**
   * Calls that can no longer be read: the watermark fell behind the horizon (the pipeline was off
   * for longer than the service keeps calls). Undefined when there is no such gap.
   */
  readonly gap: TimeWindow | undefined;
}

/**
 * The windows of an incremental run: from the watermark minus the lookback (or the initial span
 * when there is no watermark yet), moved back to the start of its slot, to now minus the settle
 * lag; never before the horizon.
 */
export function planIncremental(
  now: EpochMicros,
  watermark: EpochMicros | undefined,
  settings: PlannerSettings,
): IncrementalPlan {
  const horizon = horizonStart(now);
  const to = settledEnd(now, settings);
  const wanted =
    watermark === undefined ? now - settings.initialMicros : watermark - settings.lookbackMicros;
  const aligned = slotStart(wanted, settings.sliceMicros);
  const from = Math.max(aligned, horizon);
  const gap =
    watermark !== undefined && watermark < horizon ? { start: watermark, end: horizon } : undefined;
  return { windows: from < to ? sliceRange(from, to, settings.sliceMicros) : [], from, to, gap };
}

export interface BackfillPlan {
  readonly windows: readonly TimeWindow[];
  /** What was asked for. */
  readonly requested: TimeWindow;
  /** What is read: the request widened to whole slots, then cut to what the service still has. */
  readonly covered: TimeWindow | undefined;
  /** The part of the request older than the horizon (margin included), which is not read. */
  readonly beyondHorizon: TimeWindow | undefined;
  /**
   * The part of the request older than the service keeps calls at all (90 days, without telesync's
   * margin): what a person must be told is lost. Undefined when none.
   */
  readonly beyondService: TimeWindow | undefined;
  /** The part of the request newer than now minus the settle lag; undefined when none. */
  readonly notYetSettled: TimeWindow | undefined;
}

/**
 * The windows of a backfill of `[from, to)`, oldest first (they leave the horizon soonest). The
 * range is widened to whole slots, so a backfill re-reads whole slots and shares their ledger rows
 * with incremental runs, then cut to the horizon and to now minus the settle lag.
 */
export function planBackfill(
  now: EpochMicros,
  requested: TimeWindow,
  settings: PlannerSettings,
): BackfillPlan {
  const horizon = horizonStart(now);
  const serviceEdge = now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY;
  const settled = settledEnd(now, settings);
  const widenedFrom = slotStart(requested.start, settings.sliceMicros);
  const requestedEndSlot = slotStart(requested.end, settings.sliceMicros);
  const widenedTo =
    requestedEndSlot === requested.end ? requested.end : requestedEndSlot + settings.sliceMicros;
  const from = Math.max(widenedFrom, horizon);
  const to = Math.min(widenedTo, settled);
  return {
    windows: from < to ? sliceRange(from, to, settings.sliceMicros) : [],
    requested,
    covered: from < to ? { start: from, end: to } : undefined,
    beyondHorizon:
      requested.start < horizon
        ? { start: requested.start, end: Math.min(horizon, requested.end) }
        : undefined,
    beyondService:
      requested.start < serviceEdge
        ? { start: requested.start, end: Math.min(serviceEdge, requested.end) }
        : undefined,
    notYetSettled:
      requested.end > settled
        ? { start: Math.max(settled, requested.start), end: requested.end }
        : undefined,
  };
}

/** A part of a backfill's request that is not read, and why. */
export interface LeftOut extends TimeWindow {
  readonly why: 'beyond-horizon' | 'horizon-margin' | 'settle-lag';
}

/**
 * What a backfill plan leaves out of its request, oldest first: what the service no longer keeps
 * (beyond its 90 days), the margin kept inside the horizon (HORIZON_MARGIN_MINUTES) and calls
 * that ended too recently (the settle lag; the next sync reads them).
 */
export function planLeftOut(plan: BackfillPlan): LeftOut[] {
  const parts: LeftOut[] = [];
  // A sub-second slice beyond the service's 90 days is the clock's rounding, not a lost range.
  const beyond =
    plan.beyondService !== undefined &&
    plan.beyondService.end - plan.beyondService.start >= HORIZON_ROUNDING_MICROS
      ? plan.beyondService
      : undefined;
  if (beyond !== undefined) parts.push({ ...beyond, why: 'beyond-horizon' });
  if (plan.beyondHorizon !== undefined) {
    const start = Math.max(plan.beyondHorizon.start, beyond?.end ?? plan.beyondHorizon.start);
    if (start < plan.beyondHorizon.end)
      parts.push({ start, end: plan.beyondHorizon.end, why: 'horizon-margin' });
  }
  if (plan.notYetSettled !== undefined) parts.push({ ...plan.notYetSettled, why: 'settle-lag' });
  return parts;
}

/** The backfill range of `--days N`: the last N days up to now. */
export function lastDays(now: EpochMicros, days: number): TimeWindow {
  return { start: now - days * MICROS_PER_DAY, end: now };
}

/**
 * The UTC days a deep re-check covers at `now`: the `days` whole UTC days before today, oldest
 * first, as `[start, end)`. Empty when `days` is 0.
 */
export function deepRecheckRange(now: EpochMicros, days: number): TimeWindow | undefined {
  if (days <= 0) return undefined;
  const today = DateTime.fromMillis(Math.floor(now / 1000), { zone: 'utc' }).startOf('day');
  return {
    start: epochMicrosFromMillis(today.minus({ days }).toMillis()),
    end: epochMicrosFromMillis(today.toMillis()),
  };
}

/** The UTC calendar day of an instant, `YYYY-MM-DD` (for "once a day" bookkeeping). */
export function utcDay(at: EpochMicros): string {
  return DateTime.fromMillis(Math.floor(at / 1000), { zone: 'utc' }).toISODate() ?? '';
}

/** Whether two windows overlap. */
export function overlaps(a: TimeWindow, b: TimeWindow): boolean {
  return a.start < b.end && b.start < a.end;
}

/** `window` as `[start, end)` in ISO text, for logs and messages. */
export function describeWindow(window: TimeWindow): string {
  return `[${formatIsoMicros(window.start)}, ${formatIsoMicros(window.end)})`;
}

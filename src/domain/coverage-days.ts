import { formatIsoMicros, MICROS_PER_DAY, type EpochMicros } from '../util/micros.js';
import type { LedgerStatus } from './ledger-entry.js';
import { TRUNK_HISTORY_DAYS } from './service-rules.js';
import { comparedPart, type ComparedDay } from './verify-days.js';

/**
 * The trunk-call ledger (sync_windows) seen one UTC day at a time: what the status page's coverage
 * strip shows and what the horizon alarm counts, derived here only so the two agree.
 */

/** How many UTC days the coverage strip shows: the days the service still serves. */
export const COVERAGE_DAYS = TRUNK_HISTORY_DAYS;

/** One ledger row, as far as coverage is concerned. */
export interface CoverageWindow {
  readonly status: LedgerStatus;
  /** What the row covers, `[start, end)`: the slot, or less where the horizon or now cut it. */
  readonly start: EpochMicros;
  readonly end: EpochMicros;
  /** The service's count for `[start, end)` when it was last read or verified. */
  readonly totalCount: number | null;
}

/** Everything the day-by-day view of one account is computed from. */
export interface CoverageInput {
  /** Ledger rows that overlap the strip's days. */
  readonly windows: readonly CoverageWindow[];
  /** trunk_calls rows stored per UTC day of end_time, by `YYYY-MM-DD`. */
  readonly storedRowsByDay: ReadonlyMap<string, number>;
  /**
   * Start of the account's oldest ledger row (whatever its age), or null when the stream never
   * planned a window. Days before it were never asked for (TELESYNC_INITIAL_DAYS, or no backfill
   * that far back): they are unread, but not the pipeline's to lose.
   */
  readonly trackedFrom: EpochMicros | null;
  /** Now, epoch microseconds. */
  readonly now: EpochMicros;
  /** The oldest instant the service still serves (the sync's horizon start, margin included). */
  readonly horizonStart: EpochMicros;
}

/**
 * - `complete`: every readable instant of the day is in a complete window;
 * - `incomplete`: a window of the day is planned, running or failed, or parts of it were read
 *   and parts not;
 * - `unread`: no window of the day was read yet;
 * - `beyond`: the whole day is older than the horizon: the service no longer serves it.
 */
export type CoverageState = 'complete' | 'incomplete' | 'unread' | 'beyond';

/** One UTC day of the strip. */
export interface CoverageDay {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly start: EpochMicros;
  readonly end: EpochMicros;
  readonly state: CoverageState;
  /** A window of the day failed (its last attempt ended in an error). */
  readonly failed: boolean;
  /**
   * The service's count of the day (the sum of its complete windows' counts); null when no
   * complete window fell wholly inside the day (wider slices count several days at once).
   */
  readonly serviceCount: number | null;
  /**
   * trunk_calls rows stored with an end_time in the day; for a day counted from later than its
   * midnight (countedParts), in the part counted.
   */
  readonly storedRows: number;
  /**
   * The service's count covers the whole UTC day. False when it covers only part of it: the day
   * was read when the 90-day cut-off lay inside it, or only up to the settle lag.
   */
  readonly countedWholeDay: boolean;
  /** The count and the rows stored disagree, by {@link countsDiffer}. */
  readonly differs: boolean;
  /** Complete, but fewer rows stored than the service counted: rows went missing since. */
  readonly missingRows: boolean;
  /** On or after the account's oldest ledger row: the pipeline was asked to read this day. */
  readonly tracked: boolean;
}

/** `YYYY-MM-DD` of the UTC day holding `at`. */
export function utcDay(at: EpochMicros): string {
  return formatIsoMicros(dayStart(at)).slice(0, 10);
}

function dayStart(at: EpochMicros): EpochMicros {
  return Math.floor(at / MICROS_PER_DAY) * MICROS_PER_DAY;
}

/**
 * The first instant of the strip and the end of it: the {@link COVERAGE_DAYS} UTC days before
 * the day of `now` (today is still being written, and is the watermark's business).
 */
export function coverageSpan(now: EpochMicros): { start: EpochMicros; end: EpochMicros } {
  const end = dayStart(now);
  return { start: end - COVERAGE_DAYS * MICROS_PER_DAY, end };
}

/**
 * The coverage strip of one account: {@link COVERAGE_DAYS} cells, oldest first, each UTC day
 * classified from the ledger rows that overlap it, with the service's count and the rows stored.
 */
export function planCoverageDays(input: CoverageInput): CoverageDay[] {
  const span = coverageSpan(input.now);
  const days: CoverageDay[] = [];
  for (let start = span.start; start < span.end; start += MICROS_PER_DAY) {
    const end = start + MICROS_PER_DAY;
    days.push(classifyDay(input, start, end));
  }
  return days;
}

function classifyDay(input: CoverageInput, start: EpochMicros, end: EpochMicros): CoverageDay {
  const day = utcDay(start);
  const storedRows = input.storedRowsByDay.get(day) ?? 0;
  const tracked = input.trackedFrom !== null && end > input.trackedFrom;
  // What can still be read of the day: nothing before the horizon, nothing after now.
  const readableStart = Math.max(start, input.horizonStart);
  const readableEnd = Math.min(end, input.now);
  const base = { day, start, end, storedRows, tracked };
  if (readableEnd <= readableStart)
    return {
      ...base,
      state: 'beyond',
      failed: false,
      serviceCount: null,
      countedWholeDay: false,
      differs: false,
      missingRows: false,
    };

  const overlapping = input.windows.filter((window) => window.start < end && window.end > start);
  const failed = overlapping.some((window) => window.status === 'failed');
  const pending = overlapping.some((window) => window.status !== 'complete');
  const complete = overlapping.filter((window) => window.status === 'complete');
  let covered = 0;
  for (const window of complete)
    covered += Math.max(
      0,
      Math.min(window.end, readableEnd) - Math.max(window.start, readableStart),
    );
  const inside = complete.filter((window) => window.start >= start && window.end <= end);
  const serviceCount =
    complete.length > 0 && inside.length === complete.length
      ? inside.reduce((sum, window) => sum + (window.totalCount ?? 0), 0)
      : null;
  const countedMicros = inside.reduce((sum, window) => sum + (window.end - window.start), 0);
  const countedWholeDay = serviceCount !== null && countedMicros >= end - start;

  let state: CoverageState;
  if (pending) state = 'incomplete';
  else if (covered >= readableEnd - readableStart) state = 'complete';
  else state = covered > 0 ? 'incomplete' : 'unread';
  return {
    ...base,
    state,
    failed,
    serviceCount,
    countedWholeDay,
    differs: countsDiffer(serviceCount, storedRows, countedWholeDay ? 'whole' : 'part'),
    missingRows: state === 'complete' && serviceCount !== null && storedRows < serviceCount,
  };
}

/**
 * The edge rule: whether the service's count of a day and the rows stored for it disagree.
 * `storedRows` are the rows stored with an end_time anywhere in the UTC day. A count of the
 * whole day (`counted` 'whole') must equal them. A count of part of the day (`'part'`: taken
 * when the 90-day cut-off lay inside the day, so the rows from before the cut-off are stored
 * but no longer counted; or taken up to the settle lag) differs only when fewer rows are stored
 * than it counts: the part's rows are among the day's, more are never a fault. Nothing counted
 * (`serviceCount` null): nothing differs.
 */
export function countsDiffer(
  serviceCount: number | null,
  storedRows: number,
  counted: 'whole' | 'part',
): boolean {
  if (serviceCount === null) return false;
  return counted === 'whole' ? storedRows !== serviceCount : storedRows < serviceCount;
}

/**
 * The days of the strip whose count starts after their midnight, and the part of each the count
 * covers: the oldest day, counted from the 90-day cut-off as it was then. Rows stored from before
 * that start are not the service's to count, so the page compares only the rows stored in the
 * part (as `telesync verify` does, with comparedPart): a day counted before the cut-off moved is
 * no false alarm.
 */
export function countedParts(windows: readonly CoverageWindow[], now: EpochMicros): ComparedDay[] {
  const span = coverageSpan(now);
  const parts: ComparedDay[] = [];
  for (let start = span.start; start < span.end; start += MICROS_PER_DAY) {
    const end = start + MICROS_PER_DAY;
    const inside = windows.filter(
      (window) => window.status === 'complete' && window.start >= start && window.end <= end,
    );
    if (inside.length === 0) continue;
    const from = Math.min(...inside.map((window) => window.start));
    if (from <= start) continue;
    const part = comparedPart(start, from, now);
    if (part !== undefined) parts.push(part);
  }
  return parts;
}

/**
 * The days about to leave the horizon unread: within `alarmDays` days of the horizon (the day
 * holding it included), still partly readable, and either `incomplete`, or `unread` although the
 * pipeline was asked to read them (`tracked`). Days never asked for are left out: an account set
 * up with a week of history would otherwise be in alarm for ever. `alarmDays` 0 turns the alarm
 * off (an empty list).
 */
export function unreadNearHorizon(
  days: readonly CoverageDay[],
  horizonStart: EpochMicros,
  alarmDays: number,
): CoverageDay[] {
  if (alarmDays <= 0) return [];
  const limit = horizonStart + alarmDays * MICROS_PER_DAY;
  return days.filter(
    (day) =>
      day.end > horizonStart &&
      day.start < limit &&
      (day.state === 'incomplete' || (day.state === 'unread' && day.tracked)),
  );
}

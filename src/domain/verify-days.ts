import { formatIsoMicros, MICROS_PER_DAY, type EpochMicros } from '../util/micros.js';
import { TRUNK_HISTORY_DAYS } from './service-rules.js';

/**
 * The days `telesync verify` compares, and the part of each day it compares: pure, so that verify
 * and the status page draw the edges of the retrievable range the same way.
 *
 * The service counts nothing older than its 90-day cut-off, and calls that ended in the last
 * minutes may still be settling: the oldest day is compared only from the cut-off on, the newest
 * only up to the settle lag, and rows stored outside those parts are neither counted nor an error.
 */

/** The part of one UTC day that is compared, `[start, end)`. */
export interface ComparedDay {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly start: EpochMicros;
  readonly end: EpochMicros;
}

/** A half-open range of end_time, `[start, end)`. */
export interface EndTimeRange {
  readonly start: EpochMicros;
  readonly end: EpochMicros;
}

/** The start of the UTC day holding `at`. */
export function utcDayStart(at: EpochMicros): EpochMicros {
  return Math.floor(at / MICROS_PER_DAY) * MICROS_PER_DAY;
}

/**
 * The part of the UTC day starting at `dayStart` that lies in `[oldest, newest)`; undefined when
 * none does. Verify passes the cut-off and now minus the settle lag; the status page the start of
 * what the ledger counted and now.
 */
export function comparedPart(
  dayStart: EpochMicros,
  oldest: EpochMicros,
  newest: EpochMicros,
): ComparedDay | undefined {
  const start = Math.max(dayStart, oldest);
  const end = Math.min(dayStart + MICROS_PER_DAY, newest);
  if (end <= start) return undefined;
  return { day: formatIsoMicros(dayStart).slice(0, 10), start, end };
}

/**
 * The UTC days that `requested` touches, widened to whole days, each cut to `[oldest, newest)`
 * (see comparedPart), oldest first; days with nothing left are left out.
 */
export function planComparedDays(
  requested: EndTimeRange,
  oldest: EpochMicros,
  newest: EpochMicros,
): ComparedDay[] {
  const days: ComparedDay[] = [];
  for (let day = utcDayStart(requested.start); day < requested.end; day += MICROS_PER_DAY) {
    const part = comparedPart(day, oldest, newest);
    if (part !== undefined) days.push(part);
  }
  return days;
}

/**
 * The first day (`YYYY-MM-DD`) whose verification still matters at `now`: the day holding the
 * service's cut-off (TRUNK_HISTORY_DAYS). Older days keep their last finding, but the service no longer serves them.
 */
export function retrievableSinceDay(now: EpochMicros): string {
  return formatIsoMicros(utcDayStart(now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY)).slice(0, 10);
}

/** What one day's comparison found. */
export interface DayComparison extends ComparedDay {
  /** The service's total_count for the day's compared part. */
  readonly serviceCount: number;
  /** trunk_calls rows stored with an end_time in the compared part. */
  readonly storedCount: number;
  /** The exact sum of their total_amount (decimal text). */
  readonly storedAmount: string;
  /** The sum of their billed_duration, seconds. */
  readonly billedSeconds: number;
}

export type VerifyResult = 'agree' | 'differs';

/** Whether the service and the warehouse agree on a day. */
export function verifyResult(
  day: Pick<DayComparison, 'serviceCount' | 'storedCount'>,
): VerifyResult {
  return day.serviceCount === day.storedCount ? 'agree' : 'differs';
}

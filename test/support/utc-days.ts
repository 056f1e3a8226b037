import { CONFIG_DEFAULTS } from '../../src/config/config-defaults.js';
import { horizonStart, plannerSettings, settledEnd } from '../../src/sync/window-planner.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../../src/util/micros.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Where a run at `atMs` starts reading: the planner's horizon (the margin inside the 90 days). */
export function horizonStartAt(atMs: number): string {
  return formatIsoMicros(horizonStart(epochMicrosFromMillis(atMs)));
}

/** Where a run at `atMs` stops reading with the default settle lag (exclusive). */
export function settledEndAt(atMs: number): string {
  const settings = plannerSettings(CONFIG_DEFAULTS);
  return formatIsoMicros(settledEnd(epochMicrosFromMillis(atMs), settings));
}

/**
 * The UTC days (YYYY-MM-DD) that [from, to) touches, oldest first: the day windows of a backfill
 * that covered that range. Ninety days back from a moment in the day touch 91 days; from the last
 * minutes before midnight, 90: tests that count windows derive the count from the range.
 */
export function utcDaysTouched(from: string, to: string): string[] {
  const days: string[] = [];
  const last = Date.parse(to) - 1;
  for (let day = Math.floor(Date.parse(from) / DAY_MS) * DAY_MS; day <= last; day += DAY_MS) {
    days.push(new Date(day).toISOString().slice(0, 10));
  }
  return days;
}

/**
 * Waits past the next UTC midnight when it is less than `marginMs` away, and says how long it
 * waited. For tests that take "today" once and compare it with what the database or a page works
 * out later: a midnight between the two would move one and not the other.
 */
export async function clearOfUtcMidnight(
  marginMs: number,
  now: () => number = Date.now,
): Promise<number> {
  const untilMidnight = DAY_MS - (now() % DAY_MS);
  if (untilMidnight > marginMs) return 0;
  const waitMs = untilMidnight + 1_000;
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  return waitMs;
}

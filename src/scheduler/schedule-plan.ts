import { SCHEDULE_OFF } from './schedule-settings.js';
import type { StreamName } from '../domain/streams.js';
import { STREAMS } from '../sync/stream-registry.js';
import type { StreamScheduleDefault } from './schedule-settings.js';

/** A stream the scheduler runs, and when. */
export interface ScheduledStream {
  readonly stream: StreamName;
  /** A five-field cron expression (minute hour day month weekday), checked by loadConfig. */
  readonly cron: string;
}

export interface SchedulePlan {
  /** In the registry's order: the order `--once` runs them, so lookups see what earlier streams stored. */
  readonly scheduled: readonly ScheduledStream[];
  /** Streams set to "off". */
  readonly off: readonly StreamName[];
  /** Every stream with its cron or "off", in the registry's order (the status page's lines). */
  readonly every: readonly ScheduledStream[];
}

/**
 * Which of `streams` (default: the registry) to schedule: every stream whose cron (`crons`, the
 * configured ones; else its definition's default) is not "off".
 */
export function planSchedule(
  crons: Readonly<Partial<Record<string, string>>>,
  streams: readonly StreamScheduleDefault[] = STREAMS,
): SchedulePlan {
  const every = streams.map(({ name: stream, defaultSchedule }) => ({
    stream,
    cron: (crons[stream] ?? defaultSchedule).trim(),
  }));
  return {
    scheduled: every.filter((entry) => entry.cron !== SCHEDULE_OFF),
    off: every.filter((entry) => entry.cron === SCHEDULE_OFF).map((entry) => entry.stream),
    every,
  };
}

/**
 * The longest wait between two consecutive ticks among `ticks` (sorted), in minutes; 0 with fewer
 * than two. Used to warn when a stream runs too rarely to ever look healthy.
 */
export function longestTickGapMinutes(ticks: readonly Date[]): number {
  let longest = 0;
  for (let index = 1; index < ticks.length; index++) {
    const gap = ticks[index]!.getTime() - ticks[index - 1]!.getTime();
    longest = Math.max(longest, gap);
  }
  return longest / 60_000;
}

import { SCHEDULE_OFF } from './schedule-settings.js';
import { STREAM_NAMES, type StreamName } from '../domain/streams.js';

/** A stream the scheduler runs, and when. */
export interface ScheduledStream {
  readonly stream: StreamName;
  /** A five-field cron expression (minute hour day month weekday), checked by loadConfig. */
  readonly cron: string;
}

export interface SchedulePlan {
  /** In STREAM_NAMES order: the order `--once` runs them, so lookups see what earlier streams stored. */
  readonly scheduled: readonly ScheduledStream[];
  /** Streams set to "off". */
  readonly off: readonly StreamName[];
}

/** Which streams to schedule: every stream whose cron is not "off". */
export function planSchedule(crons: Readonly<Record<StreamName, string>>): SchedulePlan {
  const scheduled: ScheduledStream[] = [];
  const off: StreamName[] = [];
  for (const stream of STREAM_NAMES) {
    const cron = crons[stream].trim();
    if (cron === SCHEDULE_OFF) off.push(stream);
    else scheduled.push({ stream, cron });
  }
  return { scheduled, off };
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

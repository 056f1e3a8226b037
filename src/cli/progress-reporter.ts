import type { RunStats } from '../sync/run-context.js';
import type { CliIo } from './cli-io.js';

const number = new Intl.NumberFormat('en-US');

/** Progress of a long run on stderr: windows and records done, rate, time left. */
export interface ProgressReporter {
  update(stats: RunStats): void;
  finish(): void;
}

/** Plain progress lines (every update) for logs and pipes. */
export function createProgressReporter(io: CliIo, label: string): ProgressReporter {
  const started = performance.now();
  return {
    update(stats) {
      io.err(progressLine(label, stats, performance.now() - started));
    },
    finish() {},
  };
}

/** `backfill MA…: 12/91 windows, 130,000 calls, 2,400 calls/s, about 40s left`. */
export function progressLine(label: string, stats: RunStats, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? (stats.recordsFetched / elapsedMs) * 1000 : 0;
  const done = stats.windowsCompleted;
  const left = stats.windowsPlanned - done;
  const perWindowMs = done > 0 ? elapsedMs / done : undefined;
  const eta =
    perWindowMs !== undefined && left > 0
      ? `, about ${formatDuration((perWindowMs * left) / 1000)} left`
      : '';
  return `${label}: ${done}/${stats.windowsPlanned} windows, ${number.format(stats.recordsFetched)} calls, ${number.format(Math.round(rate))} calls/s${eta}`;
}

export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)}s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3600).toFixed(1)}h`;
}

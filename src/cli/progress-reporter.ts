import cliProgress from 'cli-progress';
import type { RunStats } from '../sync/run-context.js';
import type { CliIo } from './cli-io.js';

const number = new Intl.NumberFormat('en-US');

/** Progress of a long run: windows and records done, rate, time left. */
export interface ProgressReporter {
  update(stats: RunStats): void;
  finish(): void;
}

/**
 * A progress bar on a terminal (stderr), plain progress lines otherwise (logs, pipes, CI), so that
 * stdout keeps only the outcome.
 */
export function createProgressReporter(io: CliIo, label: string): ProgressReporter {
  const started = performance.now();
  if (io.terminal === undefined) {
    return {
      update(stats) {
        io.err(progressLine(label, stats, performance.now() - started));
      },
      finish() {},
    };
  }
  const bar = new cliProgress.SingleBar(
    {
      stream: io.terminal,
      format: `${label} [{bar}] {value}/{total} windows | {calls} calls | {rate} calls/s | {left}`,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let begun = false;
  return {
    update(stats) {
      const elapsed = performance.now() - started;
      const payload = progressPayload(stats, elapsed);
      if (!begun) {
        bar.start(Math.max(1, stats.windowsPlanned), stats.windowsCompleted, payload);
        begun = true;
      }
      bar.setTotal(Math.max(1, stats.windowsPlanned));
      bar.update(stats.windowsCompleted, payload);
    },
    finish() {
      if (begun) bar.stop();
    },
  };
}

function progressPayload(
  stats: RunStats,
  elapsedMs: number,
): { calls: string; rate: string; left: string } {
  const rate = elapsedMs > 0 ? (stats.recordsFetched / elapsedMs) * 1000 : 0;
  const done = stats.windowsCompleted;
  const remaining = stats.windowsPlanned - done;
  const left =
    done > 0 && remaining > 0
      ? `about ${formatDuration(((elapsedMs / done) * remaining) / 1000)} left`
      : '';
  return {
    calls: number.format(stats.recordsFetched),
    rate: number.format(Math.round(rate)),
    left,
  };
}

/** `backfill MA…: 12/91 windows, 130,000 calls, 2,400 calls/s, about 40s left`. */
export function progressLine(label: string, stats: RunStats, elapsedMs: number): string {
  const { calls, rate, left } = progressPayload(stats, elapsedMs);
  return `${label}: ${stats.windowsCompleted}/${stats.windowsPlanned} windows, ${calls} calls, ${rate} calls/s${left ? `, ${left}` : ''}`;
}

export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)}s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3600).toFixed(1)}h`;
}

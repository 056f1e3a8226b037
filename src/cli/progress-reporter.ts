import cliProgress from 'cli-progress';
import type { RunStats } from '../sync/run-context.js';
import type { CliIo } from './cli-io.js';
import { writeNotice } from './notice.js';
import { plural } from './plural.js';

const number = new Intl.NumberFormat('en-US');

/** What a progress line shows of a run (or of several, summed). */
type ProgressCounts = Pick<RunStats, 'windowsPlanned' | 'windowsCompleted' | 'recordsFetched'>;

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
        writeNotice(io, 'info', progressLine(label, stats, performance.now() - started));
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

/** Progress of several runs at once (a backfill of many accounts): one reporter each, and a total. */
export interface MultiProgressReporter {
  /** The reporter of one run, by its label (an account). */
  reporter(key: string): ProgressReporter;
  finish(): void;
}

/** How often the total is printed as a line when there is no terminal. */
const TOTAL_LINE_INTERVAL_MS = 5_000;

/**
 * A bar per key and a total bar on a terminal; otherwise each run's lines as createProgressReporter
 * prints them, and a total line every few seconds. With one key it is createProgressReporter.
 */
export function createMultiProgressReporter(
  io: CliIo,
  label: string,
  keys: readonly string[],
): MultiProgressReporter {
  if (keys.length === 1) {
    const only = createProgressReporter(io, `${label} ${keys[0]}`);
    return { reporter: () => only, finish: () => only.finish() };
  }
  const started = performance.now();
  const latest = new Map<string, ProgressCounts>();
  const total = (): ProgressCounts => {
    const sum = { windowsPlanned: 0, windowsCompleted: 0, recordsFetched: 0 };
    for (const stats of latest.values()) {
      sum.windowsPlanned += stats.windowsPlanned;
      sum.windowsCompleted += stats.windowsCompleted;
      sum.recordsFetched += stats.recordsFetched;
    }
    return sum;
  };
  const totalLabel = `${label} total (${plural(keys.length, 'account')})`;

  if (io.terminal === undefined) {
    let lastTotalAt = started;
    const reporters = new Map(
      keys.map((key) => {
        const inner = createProgressReporter(io, `${label} ${key}`);
        const reporter: ProgressReporter = {
          update(stats) {
            latest.set(key, stats);
            inner.update(stats);
            const now = performance.now();
            if (now - lastTotalAt >= TOTAL_LINE_INTERVAL_MS) {
              lastTotalAt = now;
              writeNotice(io, 'info', progressLine(totalLabel, total(), now - started));
            }
          },
          finish() {},
        };
        return [key, reporter] as const;
      }),
    );
    return {
      reporter: (key) => reporters.get(key)!,
      finish() {
        if (latest.size > 0)
          writeNotice(io, 'info', progressLine(totalLabel, total(), performance.now() - started));
      },
    };
  }

  const width = Math.max(totalLabel.length, ...keys.map((key) => key.length + label.length + 1));
  const multi = new cliProgress.MultiBar(
    {
      stream: io.terminal,
      format: `{label} [{bar}] {value}/{total} windows | {calls} calls | {rate} calls/s | {left}`,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  const startedAt = new Map<string, number>();
  const bars = new Map(
    keys.map((key) => [
      key,
      multi.create(1, 0, {
        label: `${label} ${key}`.padEnd(width),
        calls: '0',
        rate: '0',
        left: '',
      }),
    ]),
  );
  const totalBar = multi.create(1, 0, {
    label: totalLabel.padEnd(width),
    calls: '0',
    rate: '0',
    left: '',
  });
  return {
    reporter(key) {
      return {
        update(stats) {
          const now = performance.now();
          if (!startedAt.has(key)) startedAt.set(key, now);
          latest.set(key, stats);
          const bar = bars.get(key)!;
          bar.setTotal(Math.max(1, stats.windowsPlanned));
          bar.update(stats.windowsCompleted, progressPayload(stats, now - startedAt.get(key)!));
          const sum = total();
          totalBar.setTotal(Math.max(1, sum.windowsPlanned));
          totalBar.update(sum.windowsCompleted, progressPayload(sum, now - started));
        },
        finish() {},
      };
    },
    finish() {
      multi.stop();
    },
  };
}

function progressPayload(
  stats: ProgressCounts,
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
export function progressLine(label: string, stats: ProgressCounts, elapsedMs: number): string {
  const { calls, rate, left } = progressPayload(stats, elapsedMs);
  return `${label}: ${stats.windowsCompleted}/${stats.windowsPlanned} windows, ${calls} calls, ${rate} calls/s${left ? `, ${left}` : ''}`;
}

export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)}s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3600).toFixed(1)}h`;
}

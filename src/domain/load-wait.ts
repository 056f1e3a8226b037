import { toEpochMicros } from '../util/micros.js';

/**
 * Whether a run's wait for the database is a share worth acting on (docs/scaling.md, "Which limit
 * a run met": more load connections, or fewer accounts on this process): a second or more, and a
 * tenth or more of the run. The run's line, `status` and the status page say it only then.
 */
export function loadWaitWorthSaying(loadWaitMs: number, durationMs: number): boolean {
  return loadWaitMs >= 1_000 && loadWaitMs >= durationMs / 10;
}

/** A run as sync_runs records it: its times (ISO text) and its wait for the database. */
export interface RecordedRunWait {
  readonly startedAt: string;
  /** Null while the run goes on. */
  readonly finishedAt: string | null;
  readonly loadWaitMs: number;
}

/**
 * The length in milliseconds of a finished run whose wait for the database is worth saying
 * (loadWaitWorthSaying), else undefined: what `status` and the status page show it with.
 */
export function heldByDatabaseMs(run: RecordedRunWait): number | undefined {
  if (run.finishedAt === null) return undefined;
  const durationMs = (toEpochMicros(run.finishedAt) - toEpochMicros(run.startedAt)) / 1000;
  return loadWaitWorthSaying(run.loadWaitMs, durationMs) ? durationMs : undefined;
}

import { pingDatabase, type Database } from '../db/connect.js';
import { findLatestRuns } from '../db/repositories/health-repository.js';
import { describeError } from '../util/coerce-error.js';
import { withTimeout } from '../util/with-timeout.js';
import { evaluateHealth, type DatabaseAnswer, type HealthReport } from './health.js';
import type { HorizonUnread } from './read-coverage.js';

/** How long /healthz waits for the database before calling it down. */
export const HEALTH_DATABASE_TIMEOUT_MS = 3_000;

/**
 * The database's clock, epoch milliseconds, waited for at most `timeoutMs`: runs are timed by it
 * (sync_runs), whichever machine ran them, so what is served ages them on it.
 */
export function readDatabaseClock(
  database: Database,
  timeoutMs: number = HEALTH_DATABASE_TIMEOUT_MS,
): Promise<number> {
  return withTimeout(pingDatabase(database), timeoutMs, "the query of the database's clock");
}

export interface HealthCheckOptions {
  readonly database: Database;
  readonly accountIds: readonly string[];
  /** The scheduled streams. */
  readonly streams: readonly string[];
  readonly maxAgeMinutes: number;
  /** When the scheduler started, epoch milliseconds. */
  readonly startedAtMs: number;
  /** The clock, epoch milliseconds. */
  readonly now: () => number;
  readonly timeoutMs?: number;
  /**
   * The horizon alarm: `alarmDays` (TELESYNC_HORIZON_ALARM_DAYS; 0 turns it off) and how to read
   * the days it counts. Omitted: not judged.
   */
  readonly horizon?: {
    readonly alarmDays: number;
    readonly read: () => Promise<readonly HorizonUnread[]>;
  };
}

/**
 * The /healthz check: pings the database (bounded by `timeoutMs`), reads the latest runs (and the
 * horizon alarm's days), and judges them with evaluateHealth on the database's clock. Never
 * throws: a database that fails or hangs is part of the verdict.
 */
export function createHealthCheck(options: HealthCheckOptions): () => Promise<HealthReport> {
  const timeoutMs = options.timeoutMs ?? HEALTH_DATABASE_TIMEOUT_MS;
  return async () => {
    let database: DatabaseAnswer;
    let unread: readonly HorizonUnread[] = [];
    const { horizon } = options;
    let nowMs = options.now();
    // Runs are timed by the database's clock (sync_runs): they are judged on it, and the
    // scheduler's start is moved onto it by how far the two clocks are apart.
    let clockOffsetMs = 0;
    try {
      const asked = options.now();
      const databaseNowMs = await readDatabaseClock(options.database, timeoutMs);
      const answered = options.now();
      // An offset within the round trip cannot be told from none.
      const offset = databaseNowMs - (asked + answered) / 2;
      clockOffsetMs = Math.abs(offset) > answered - asked ? offset : 0;
      nowMs = answered + clockOffsetMs;
      const runs = await withTimeout(
        findLatestRuns(options.database.db, options.accountIds, options.streams),
        timeoutMs,
        'the query of the latest runs',
      );
      if (horizon !== undefined && horizon.alarmDays > 0)
        unread = await withTimeout(horizon.read(), timeoutMs, 'the query of the window ledger');
      database = { ok: true, runs };
    } catch (error) {
      database = { ok: false, error: describeError(error) };
    }
    return evaluateHealth({
      nowMs,
      startedAtMs: options.startedAtMs + clockOffsetMs,
      maxAgeMinutes: options.maxAgeMinutes,
      accountIds: options.accountIds,
      streams: options.streams,
      database,
      ...(horizon === undefined ? {} : { horizon: { alarmDays: horizon.alarmDays, unread } }),
    });
  };
}

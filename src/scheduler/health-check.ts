import { pingDatabase, type Database } from '../db/connect.js';
import { findLatestRuns } from '../db/repositories/health-repository.js';
import { describeError } from '../util/coerce-error.js';
import { withTimeout } from '../util/with-timeout.js';
import { evaluateHealth, type DatabaseAnswer, type HealthReport } from './health.js';
import type { HorizonUnread } from './read-coverage.js';

/** How long /healthz waits for the database before calling it down. */
export const HEALTH_DATABASE_TIMEOUT_MS = 3_000;

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
 * The /healthz check: pings the database (`SELECT 1`, bounded by `timeoutMs`), reads the latest
 * runs (and the horizon alarm's days), and judges them with evaluateHealth. Never throws: a database that fails or hangs is
 * part of the verdict.
 */
export function createHealthCheck(options: HealthCheckOptions): () => Promise<HealthReport> {
  const timeoutMs = options.timeoutMs ?? HEALTH_DATABASE_TIMEOUT_MS;
  return async () => {
    let database: DatabaseAnswer;
    let unread: readonly HorizonUnread[] = [];
    const { horizon } = options;
    try {
      await withTimeout(pingDatabase(options.database), timeoutMs, 'SELECT 1');
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
      nowMs: options.now(),
      startedAtMs: options.startedAtMs,
      maxAgeMinutes: options.maxAgeMinutes,
      accountIds: options.accountIds,
      streams: options.streams,
      database,
      ...(horizon === undefined ? {} : { horizon: { alarmDays: horizon.alarmDays, unread } }),
    });
  };
}

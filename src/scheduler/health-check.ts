import type { Database } from '../db/connect.js';
import { describeError } from '../util/coerce-error.js';
import { evaluateHealth, type DatabaseAnswer, type HealthReport } from './health.js';
import { findLatestRuns, pingDatabase, withTimeout } from './health-repository.js';

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
}

/**
 * The /healthz check: pings the database (`SELECT 1`, bounded by `timeoutMs`), reads the latest
 * runs, and judges them with evaluateHealth. Never throws: a database that fails or hangs is
 * part of the verdict.
 */
export function createHealthCheck(options: HealthCheckOptions): () => Promise<HealthReport> {
  const timeoutMs = options.timeoutMs ?? HEALTH_DATABASE_TIMEOUT_MS;
  return async () => {
    let database: DatabaseAnswer;
    const ping = await pingDatabase(options.database, timeoutMs);
    if (!ping.ok) {
      database = ping;
    } else {
      try {
        const runs = await withTimeout(
          findLatestRuns(options.database.db, options.accountIds, options.streams),
          timeoutMs,
          'the query of the latest runs',
        );
        database = { ok: true, runs };
      } catch (error) {
        database = { ok: false, error: describeError(error) };
      }
    }
    return evaluateHealth({
      nowMs: options.now(),
      startedAtMs: options.startedAtMs,
      maxAgeMinutes: options.maxAgeMinutes,
      accountIds: options.accountIds,
      streams: options.streams,
      database,
    });
  };
}

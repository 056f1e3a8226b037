import { DEFAULT_STREAM_CALLBACK_PATH } from '../http/http-settings.js';
import type { LogLevel } from '../util/logger.js';

/** Defaults of every setting, one place (the help texts quote them). */
export const CONFIG_DEFAULTS = {
  dataDir: './.telesync',
  schema: 'telephony',
  // The service this spec describes publishes its API at this address; override for a proxy,
  // a regional endpoint or the simulator.
  baseUrl: 'https://api.plivo.com',
  // The service's budget per account, as its documentation states it (spec §8).
  requestBudget: '300/5s',
  // The account's budget is also the customer's own applications': a fifth of it stays theirs
  // while telesync reads, about what telesync's earlier default (50 requests/s) left them.
  requestShare: 0.8,
  // TELESYNC_MAX_RPS's default, when only TELESYNC_RATE_WINDOW_SECONDS of the older pair is given.
  legacyMaxRps: 50,
  concurrency: 8,
  timeoutMs: 30_000,
  maxRetries: 8,
  retryAfterMaxSeconds: 120,
  maxBodyBytes: 32 * 1024 * 1024,
  jobLeaseSeconds: 60,
  jobRetryLimit: 8,
  jobRetryDelaySeconds: 5,
  jobPollMs: 1_000,
  logLevel: 'info' as LogLevel,
  sliceHours: 24,
  initialDays: 7,
  lookbackHours: 6,
  settleLagMinutes: 5,
  deepRecheckDays: 1,
  batchSize: 2000,
  // Every account runs at once, and their COPY limit was best on four on busy and quiet machines alike.
  loadConnections: 4,
  snapshotDeleteGuard: 0.5,
  lookupMaxAttempts: 5,
  powerpackRefreshHours: 24,
  maxPagesPerWindow: 50_000,
  scheduleTimezone: 'UTC',
  httpHost: '127.0.0.1',
  httpPort: 9464,
  shutdownTimeoutSeconds: 60,
  healthMaxAgeMinutes: 180,
  streamCallbackPath: DEFAULT_STREAM_CALLBACK_PATH,
  horizonAlarmDays: 7,
  /** Daily, once the night's syncs and the deep re-check of yesterday are done. */
  verifyCron: '0 6 * * *',
} as const;

/** The environment variable of a stream's cron expression (its default: the definition's). */
export function scheduleVariable(stream: string): string {
  return `TELESYNC_SCHEDULE_${stream.toUpperCase()}`;
}

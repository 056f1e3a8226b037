import type { StreamName } from '../domain/streams.js';
import { DEFAULT_STREAM_CALLBACK_PATH } from '../http/http-settings.js';
import { STREAMS } from '../sync/stream-registry.js';
import type { LogLevel } from '../util/logger.js';

/** Defaults of every setting, one place (the help texts quote them). */
export const CONFIG_DEFAULTS = {
  dataDir: './.telesync',
  schema: 'telephony',
  // The service this spec describes publishes its API at this address; override for a proxy,
  // a regional endpoint or the simulator.
  baseUrl: 'https://api.plivo.com',
  maxRps: 50,
  rateWindowSeconds: 1,
  concurrency: 8,
  timeoutMs: 30_000,
  maxRetries: 8,
  retryAfterMaxSeconds: 120,
  maxBodyBytes: 32 * 1024 * 1024,
  // Accounts worked on at once in one process: each holds a few database connections and its
  // own request budget; 4 fits a 2-core machine with the default pool.
  accountConcurrency: 4,
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
  // One per core of the database server we run beside: see LoadGate.
  loadConnections: 2,
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
  // Each stream's definition declares its default schedule; the registry lists every StreamName.
  crons: Object.fromEntries(
    STREAMS.map((stream) => [stream.name, stream.defaultSchedule]),
  ) as Readonly<Record<StreamName, string>>,
} as const;

/** The environment variable of each stream's cron expression. */
export function scheduleVariable(stream: StreamName): string {
  return `TELESYNC_SCHEDULE_${stream.toUpperCase()}`;
}

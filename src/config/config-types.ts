import type { StreamName } from '../sync/streams.js';

/** Where telesync keeps its data. */
export interface DatabaseConfig {
  /** PostgreSQL connection string (DATABASE_URL); unset means the embedded database. */
  readonly url: string | undefined;
  /** Directory of the embedded database and its lock file (TELESYNC_DATA_DIR). */
  readonly dataDir: string;
  /** Schema of telesync's tables (TELESYNC_SCHEMA). */
  readonly schema: string;
}

/** One account of the service. */
export interface AccountConfig {
  readonly authId: string;
  readonly authToken: string;
}

/** How telesync talks to the service. */
export interface ApiConfig {
  /** Base address, without the /v1 prefix (TELESYNC_BASE_URL). */
  readonly baseUrl: string;
  /** Requests per second to the service, per account (TELESYNC_MAX_RPS). */
  readonly maxRps: number;
  /** Requests in flight at once, per account (TELESYNC_CONCURRENCY). */
  readonly concurrency: number;
  /** Time allowed for one request, headers and body (TELESYNC_HTTP_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /** Retries of one request after a 429, 5xx, reset or timeout (TELESYNC_MAX_RETRIES). */
  readonly maxRetries: number;
}

/** How the streams are synced. */
export interface SyncConfig {
  /** Width of a trunk-call window (a slot of the UTC grid), in hours; at most 720 (TELESYNC_SLICE_HOURS). */
  readonly sliceHours: number;
  /** First sync with no watermark starts this many days back (TELESYNC_INITIAL_DAYS). */
  readonly initialDays: number;
  /** Each incremental sync re-checks this far behind its watermark (TELESYNC_LOOKBACK_HOURS). */
  readonly lookbackHours: number;
  /** Calls that ended less than this long ago are left for the next run (TELESYNC_SETTLE_LAG_MINUTES). */
  readonly settleLagMinutes: number;
  /** Once a UTC day, re-read this many previous UTC days in full; 0 turns it off (TELESYNC_DEEP_RECHECK_DAYS). */
  readonly deepRecheckDays: number;
  /** Rows per upsert batch (TELESYNC_BATCH_SIZE). */
  readonly batchSize: number;
  /** A snapshot that would mark more than this share of rows deleted is refused (TELESYNC_SNAPSHOT_DELETE_GUARD). */
  readonly snapshotDeleteGuard: number;
  /** Lookups of one UUID give up after this many failed attempts (TELESYNC_LOOKUP_MAX_ATTEMPTS). */
  readonly lookupMaxAttempts: number;
  /** A stored sender pack is fetched again when older than this (TELESYNC_POWERPACK_REFRESH_HOURS). */
  readonly powerpackRefreshHours: number;
}

/** The value of TELESYNC_SCHEDULE_<STREAM> that leaves a stream out of the schedule. */
export const SCHEDULE_OFF = 'off';

/** When the scheduler runs each stream, and how it is watched. */
export interface ScheduleConfig {
  /** Time zone of the cron expressions (TELESYNC_SCHEDULE_TIMEZONE, default UTC). */
  readonly timezone: string;
  /** A cron expression per stream, or "off" (TELESYNC_SCHEDULE_<STREAM>). */
  readonly crons: Readonly<Record<StreamName, string>>;
  /** Where /healthz and /metrics listen (TELESYNC_HTTP_HOST, TELESYNC_HTTP_PORT; port 0: off). */
  readonly httpHost: string;
  readonly httpPort: number;
  /** On SIGTERM, runs in hand get this long to finish their batch (TELESYNC_SHUTDOWN_TIMEOUT_SECONDS). */
  readonly shutdownTimeoutSeconds: number;
  /** /healthz fails when a stream's last successful run is older (TELESYNC_HEALTH_MAX_AGE_MINUTES). */
  readonly healthMaxAgeMinutes: number;
}

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

/** Everything telesync reads from its environment, validated and frozen. */
export interface TelesyncConfig {
  readonly database: DatabaseConfig;
  /** Accounts to sync; empty when no credentials are configured (fine for `migrate`, `status`). */
  readonly accounts: readonly AccountConfig[];
  readonly api: ApiConfig;
  readonly sync: SyncConfig;
  readonly schedule: ScheduleConfig;
  readonly logLevel: LogLevel;
  /** The config file that was read (TELESYNC_CONFIG), if any. */
  readonly configFile: string | undefined;
}

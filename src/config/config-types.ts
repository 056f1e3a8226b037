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

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

/** Everything telesync reads from its environment, validated and frozen. */
export interface TelesyncConfig {
  readonly database: DatabaseConfig;
  /** Accounts to sync; empty when no credentials are configured (fine for `migrate`, `status`). */
  readonly accounts: readonly AccountConfig[];
  readonly api: ApiConfig;
  readonly logLevel: LogLevel;
}

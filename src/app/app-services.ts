import {
  describeRequestBudget,
  planLegacyRateNote,
  planRateWarning,
  type ApiSettings,
} from '../api/api-settings.js';
import { TelephonyClient } from '../api/telephony-client.js';
import { HttpTransport } from '../api/transport.js';
import { ConfigError } from '../config/config-errors.js';
import type { AccountConfig, TelesyncConfig } from '../config/config-types.js';
import type { Database } from '../db/connect.js';
import { pendingMigrations } from '../db/migrate.js';
import { loadLanesFor } from '../load/batch-loader.js';
import { LoadGate } from '../load/load-gate.js';
import type { SyncDependencies } from '../sync/run-stream.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { STREAMS } from '../sync/stream-registry.js';
import type { VerifyDependencies } from '../sync/verify-trunk-calls.js';
import { epochMicrosFromMillis } from '../util/micros.js';
import { describeError } from '../util/coerce-error.js';
import { createLogger, type Logger } from '../util/logger.js';
import { heldBackNote, RepeatFilter } from '../util/repeat-filter.js';

/**
 * The parts every kind of process is built from (a command, the scheduler, and next a worker):
 * each takes the part of the configuration its component declares. Only the roots in src/app
 * call these; everything else receives what they build.
 */

/** Where log lines go: the process's stderr, or a test's buffer. */
export interface LogSink {
  /** Human-readable lines instead of JSON (a terminal). */
  readonly pretty: boolean;
  /** One line, without its newline. */
  write(line: string): void;
}

/** The secrets of a configuration: never printed, logged or stored. */
export function configSecrets(config: TelesyncConfig): string[] {
  // The token, and the Authorization header's forms of it: a service or a proxy that echoes the
  // request puts those in a body.
  const secrets = config.accounts.flatMap((account) => {
    const credentials = Buffer.from(`${account.authId}:${account.authToken}`).toString('base64');
    return [account.authToken, credentials, `Basic ${credentials}`];
  });
  if (config.database.url !== undefined) {
    try {
      const password = decodeURIComponent(new URL(config.database.url).password);
      if (password !== '') secrets.push(password);
    } catch {
      // Not a parseable URL: loadConfig has refused it already.
    }
  }
  return secrets;
}

/** The process's logger, at the configured level, with every secret of the configuration redacted. */
export function createAppLogger(config: TelesyncConfig, sink: LogSink): Logger {
  return createLogger({
    level: config.logLevel,
    secrets: configSecrets(config),
    pretty: sink.pretty,
    write: (line) => sink.write(line.endsWith('\n') ? line.slice(0, -1) : line),
  });
}

/** The accounts to work on: all configured, or the one `only` (--account) names. */
export function selectAccounts(config: TelesyncConfig, only: string | undefined): AccountConfig[] {
  if (config.accounts.length === 0) {
    throw new ConfigError([
      {
        key: 'TELESYNC_AUTH_ID',
        message:
          'no account is configured: set TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN (the account credentials) ' +
          'and TELESYNC_BASE_URL if the service is not at its default address',
      },
    ]);
  }
  if (only === undefined) return [...config.accounts];
  const account = config.accounts.find((candidate) => candidate.authId === only);
  if (account === undefined) {
    throw new ConfigError([
      {
        key: '--account',
        message: `"${only}" is not a configured account (known: ${config.accounts.map((a) => a.authId).join(', ')})`,
      },
    ]);
  }
  return [account];
}

/** A client per account, each over its own transport (each account has its own rate limit). */
export interface AccountClients {
  /** In the order of the accounts given. */
  readonly clients: readonly TelephonyClient[];
  /** Closes every transport's connections. */
  readonly close: () => Promise<void>;
}

/**
 * Builds the clients of `accounts`; retries are logged as warnings, naming the account. Says once
 * what each account's limiter will use of the service's budget (a process builds its clients once).
 */
export function createAccountClients(
  api: ApiSettings,
  accounts: readonly AccountConfig[],
  log: Logger,
): AccountClients {
  const rateWarning = planRateWarning(api);
  if (rateWarning !== undefined) log.warn(rateWarning);
  else log.info(describeRequestBudget(api));
  const legacyNote = planLegacyRateNote(api);
  if (legacyNote !== undefined) log.info(legacyNote);
  const transports = accounts.map(
    (account) =>
      new HttpTransport({
        baseUrl: api.baseUrl,
        authId: account.authId,
        authToken: account.authToken,
        maxRps: api.maxRps,
        rateWindowSeconds: api.rateWindowSeconds,
        concurrency: api.concurrency,
        timeoutMs: api.timeoutMs,
        maxRetries: api.maxRetries,
        retryAfterMaxSeconds: api.retryAfterMaxSeconds,
        maxBodyBytes: api.maxBodyBytes,
        onRetry: (event) =>
          log.warn(
            {
              account: account.authId,
              path: event.path,
              retry: event.retryNumber,
              wait_ms: event.delayMs,
              status: event.error.status,
            },
            `retrying: ${event.error.message}${event.note === undefined ? '' : ` (${event.note})`}`,
          ),
      }),
  );
  return {
    clients: transports.map(
      (transport, index) => new TelephonyClient(transport, accounts[index]!.authId),
    ),
    close: async () => {
      await Promise.all(transports.map((transport) => transport.close()));
    },
  };
}

/**
 * Pages (or lookups) of one run requested at once, per connection to the service: two keep every
 * connection busy while the previous page is parsed.
 */
const PAGES_PER_CONNECTION = 2;

/**
 * Connections one process opens at most: a scheduler, two workers and a command beside them stay
 * within PostgreSQL's default max_connections of 100. Runs take a connection only now and then, so
 * more accounts than this share the pool.
 */
const MAX_PROCESS_CONNECTIONS = 20;

/**
 * Connections for `accounts` worked on at once: one holds every run lock of the process (see
 * withAdvisoryLock), a run takes one now and then for its ledger and progress, the process's
 * batches take `loadConnections` (see LoadGate), and a few are left for status reads. Never under
 * node-postgres's 10, nor over MAX_PROCESS_CONNECTIONS unless the batches alone need more.
 */
export function databasePoolSize(accounts: number, loadConnections: number): number {
  const cap = Math.max(MAX_PROCESS_CONNECTIONS, 1 + loadConnections + 2 + 1);
  return Math.max(10, Math.min(cap, 1 + accounts + loadConnections + 2));
}

/**
 * What every run of the process shares: built once, for every stream and account. `runsAtOnce`:
 * how many runs the process may have loading side by side (accounts, or accounts × streams);
 * `streams`: the streams its runs may name (default: the registry).
 */
export function createSyncDependencies(
  config: TelesyncConfig,
  database: Database,
  log: Logger,
  runsAtOnce: number,
  streams: readonly StreamDefinition[] = STREAMS,
): SyncDependencies {
  return {
    streams,
    database,
    settings: config.sync,
    log,
    pageConcurrency: config.api.concurrency * PAGES_PER_CONNECTION,
    loadLanes: loadLanesFor(runsAtOnce, config.sync.loadConnections),
    loadGate: LoadGate.forBatches(config.sync.loadConnections, config.sync.batchSize),
    secrets: configSecrets(config),
  };
}

/** What `telesync verify` needs, from the configuration: count requests go as pages would. */
export function createVerifyDependencies(
  config: TelesyncConfig,
  database: Database,
  log: Logger,
): VerifyDependencies {
  return {
    database,
    settings: config.sync,
    log,
    requestConcurrency: config.api.concurrency,
    clock: () => epochMicrosFromMillis(Date.now()),
  };
}

/** How long like connection warnings are held back after one is said. */
const CONNECTION_WARNING_WINDOW_MS = 10_000;

/**
 * Warns of a failed database connection (`what`: whose), once per fault: when the database goes,
 * every pooled connection of telesync's pool and the job queue's fails at once, with the same error.
 */
export function createConnectionWarner(log: Logger): (what: string, error: Error) => void {
  const filter = new RepeatFilter(CONNECTION_WARNING_WINDOW_MS);
  return (what, error) => {
    const description = describeError(error);
    const held = filter.pass(description);
    if (held === undefined) return;
    log.warn({ err: error }, `${what}: ${description}${heldBackNote(held)}`);
  };
}

/** The database's schema is behind the code: `telesync migrate` must run first. */
export class SchemaNotMigratedError extends Error {
  override name = 'SchemaNotMigratedError';
  constructor(
    readonly schema: string,
    readonly location: string,
    /** Names of the pending migrations. */
    readonly pending: readonly string[],
  ) {
    const named =
      pending.length <= 3
        ? pending.join(', ')
        : `${pending.slice(0, 2).join(', ')} and ${pending.length - 2} more`;
    super(
      `The schema "${schema}" at ${location} is not migrated ` +
        `(${pending.length} migration${pending.length === 1 ? '' : 's'} pending: ${named}). ` +
        'Run telesync migrate first.',
    );
  }
}

/** Throws SchemaNotMigratedError when the database's schema has pending migrations. */
export async function requireMigrated(database: Database): Promise<void> {
  const pending = (await pendingMigrations(database)).map((migration) => migration.name);
  if (pending.length > 0) {
    throw new SchemaNotMigratedError(database.schema, database.location, pending);
  }
}

import { resolve } from 'node:path';
import type { TelephonyClient } from '../api/telephony-client.js';
import type { AccountConfig, TelesyncConfig } from '../config/config-types.js';
import { ConfigError } from '../config/config-errors.js';
import {
  embeddedDatabaseExists,
  openDatabase,
  pingDatabase,
  type Database,
} from '../db/connect.js';
import { knownMigrationNames, migrateToLatest } from '../db/migrate.js';
import type { JobQueue } from '../jobs/job-queue.js';
import { jobSchemaName } from '../jobs/job-settings.js';
import { openPgBossQueue } from '../jobs/pg-boss-queue.js';
import { runStream, type RunRequest, type SyncResult } from '../sync/run-stream.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { STREAMS } from '../sync/stream-registry.js';
import { evenWaveWidth } from '../util/even-wave-width.js';
import type { Logger } from '../util/logger.js';
import { mapConcurrently } from '../util/map-concurrently.js';
import {
  createAccountClients,
  createAppLogger,
  createSyncDependencies,
  databasePoolSize,
  requireMigrated,
  SchemaNotMigratedError,
  selectAccounts,
  type LogSink,
} from './app-services.js';

/**
 * The composition root of one command (`sync`, `backfill`, `lookup`, `status`…): it holds the
 * configuration and the logger, and builds the database, the clients and the sync services once
 * for the part of the command that needs them, closing them after. Commands parse their flags,
 * ask for what they need here, and print.
 */
export interface CommandApp {
  readonly config: TelesyncConfig;
  readonly log: Logger;
  /** The accounts to work on: every configured one, or the one `--account` names (ConfigError otherwise). */
  selectAccounts(only: string | undefined): AccountConfig[];
  /** Opens the database, runs `use`, and always closes it. */
  withDatabase<T>(use: (database: Database) => Promise<T>): Promise<T>;
  /**
   * withDatabase for a command that reads or writes telesync's tables: before `use`,
   * DatabaseUnreachableError when it does not answer, SchemaNotMigratedError when the schema is
   * behind the code.
   */
  withMigratedDatabase<T>(use: (database: Database) => Promise<T>): Promise<T>;
  /** Builds a client per account (in their order), runs `use`, and always closes them. */
  withClients<T>(
    accounts: readonly AccountConfig[],
    use: (clients: readonly TelephonyClient[]) => Promise<T>,
  ): Promise<T>;
  /**
   * The workers' job queue (pg-boss) and the database it lives in, for `use`, closed after; a
   * ConfigError naming DATABASE_URL on the embedded database. This process only enqueues and reads:
   * it keeps no schedule.
   */
  withJobQueue<T>(use: (queue: JobQueue, database: Database) => Promise<T>): Promise<T>;
  /**
   * The database (checked to answer: DatabaseUnreachableError otherwise; and to be migrated:
   * SchemaNotMigratedError, unless `options.migrate` brings it up to date), a client per account
   * and the sync services, for `use`; all closed after.
   */
  withSync<T>(
    accounts: readonly AccountConfig[],
    use: (session: SyncSession) => Promise<T>,
    options?: SyncSessionOptions,
  ): Promise<T>;
}

export interface SyncSessionOptions {
  /** Apply the pending migrations first (the demo) rather than refuse a schema behind the code. */
  readonly migrate?: boolean;
}

/** What a command that syncs works with. */
export interface SyncSession {
  readonly database: Database;
  /** The migrations this command applied (SyncSessionOptions.migrate); empty otherwise. */
  readonly applied: readonly string[];
  /** One per account, in the order the accounts were given. */
  readonly clients: readonly TelephonyClient[];
  /** Runs one stream of one account with the services built once for the command. */
  readonly runStream: (client: TelephonyClient, request: RunRequest) => Promise<SyncResult>;
  /**
   * Runs `work` for every client, accounts side by side (each has its own budget), at most
   * TELESYNC_ACCOUNT_CONCURRENCY at once and in waves of equal width (evenWaveWidth); the results
   * in the order of `clients`.
   */
  readonly forEachAccount: <R>(work: (client: TelephonyClient) => Promise<R>) => Promise<R[]>;
}

export interface CommandAppOptions {
  /** The command as people read it (`sync`, `lookup messages`): names the embedded database's lock. */
  readonly command: string;
  readonly logSink: LogSink;
  /** The streams its runs may name (default: the registry). */
  readonly streams?: readonly StreamDefinition[];
}

/** Builds the application of one command from its configuration. Opens nothing yet. */
export function createCommandApp(config: TelesyncConfig, options: CommandAppOptions): CommandApp {
  const log = createAppLogger(config, options.logSink);
  const streams = options.streams ?? STREAMS;

  const withDatabase = async <T>(use: (database: Database) => Promise<T>): Promise<T> => {
    const database = await openDatabase(config.database, {
      command: `telesync ${options.command}`,
      maxConnections: databasePoolSize(config.accountConcurrency, config.sync.loadConnections),
    });
    try {
      return await use(database);
    } finally {
      await database.close();
    }
  };

  /**
   * Checks that `database` answers (DatabaseUnreachableError) and that its schema is current
   * (SchemaNotMigratedError), or with `migrate` brings it up to date: one line for the command,
   * not one stack trace per stream. Returns the migrations applied.
   */
  const prepareTables = async (database: Database, migrate: boolean): Promise<string[]> => {
    await pingDatabase(database);
    if (migrate) return migrateToLatest(database);
    await requireMigrated(database);
    return [];
  };

  /**
   * withDatabase after prepareTables. An embedded database never created is not migrated either:
   * without `migrate` that is said at once, not after creating it (PostgreSQL's initdb).
   */
  const withPreparedTables = async <T>(
    migrate: boolean,
    use: (database: Database, applied: string[]) => Promise<T>,
  ): Promise<T> => {
    const { url, dataDir, schema } = config.database;
    if (!migrate && url === undefined && !embeddedDatabaseExists(dataDir)) {
      throw new SchemaNotMigratedError(schema, resolve(dataDir), knownMigrationNames());
    }
    return withDatabase(async (database) => use(database, await prepareTables(database, migrate)));
  };

  const withMigratedDatabase = <T>(use: (database: Database) => Promise<T>): Promise<T> =>
    withPreparedTables(false, (database) => use(database));

  const withClients = async <T>(
    accounts: readonly AccountConfig[],
    use: (clients: readonly TelephonyClient[]) => Promise<T>,
  ): Promise<T> => {
    const { clients, close } = createAccountClients(config.api, accounts, log);
    try {
      return await use(clients);
    } finally {
      await close();
    }
  };

  const withJobQueue = async <T>(
    use: (queue: JobQueue, database: Database) => Promise<T>,
  ): Promise<T> => {
    const url = config.database.url;
    if (url === undefined) {
      throw new ConfigError([
        {
          key: 'DATABASE_URL',
          message: `telesync ${options.command} --queue needs PostgreSQL, where the workers take their jobs: set DATABASE_URL`,
        },
      ]);
    }
    return withMigratedDatabase(async (database) => {
      const queue = await openPgBossQueue({
        connectionString: url,
        schema: jobSchemaName(config.database.schema),
        database,
        leaseSeconds: config.jobs.leaseSeconds,
        retryLimit: config.jobs.retryLimit,
        retryDelaySeconds: config.jobs.retryDelaySeconds,
        maxConnections: 2,
        supervise: false,
        onError: (error) => log.warn({ err: error }, `job queue: ${error.message}`),
        streams: streams.map((stream) => stream.name),
      });
      try {
        return await use(queue, database);
      } finally {
        await queue.stop();
      }
    });
  };

  return {
    config,
    log,
    withJobQueue,
    selectAccounts: (only) => selectAccounts(config, only),
    withDatabase,
    withMigratedDatabase,
    withClients,
    withSync: (accounts, use, options = {}) =>
      withPreparedTables(options.migrate === true, (database, applied) =>
        withClients(accounts, (clients) => {
          const atOnce = evenWaveWidth(accounts.length, config.accountConcurrency);
          const deps = createSyncDependencies(config, database, log, atOnce, streams);
          return use({
            database,
            applied,
            clients,
            runStream: (client, request) => runStream(deps, client, request),
            forEachAccount: (work) => mapConcurrently(clients, atOnce, work),
          });
        }),
      ),
  };
}

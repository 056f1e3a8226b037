import { HttpTransport } from '../api/transport.js';
import { TelephonyClient } from '../api/telephony-client.js';
import { ConfigError } from '../config/config-errors.js';
import type { AccountConfig, TelesyncConfig } from '../config/config-types.js';
import type { Database } from '../db/connect.js';
import type { SyncDependencies } from '../sync/sync-runner.js';
import { createLogger, type Logger } from '../util/logger.js';
import type { CliIo } from './cli-io.js';

/** The secrets of a configuration: never printed, logged or stored. */
export function configSecrets(config: TelesyncConfig): string[] {
  const secrets = config.accounts.map((account) => account.authToken);
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

export function createCliLogger(config: TelesyncConfig, io: CliIo): Logger {
  return createLogger({
    level: config.logLevel,
    secrets: configSecrets(config),
    pretty: io.isTty,
    write: (line) => io.err(line.endsWith('\n') ? line.slice(0, -1) : line),
  });
}

/** The accounts a command works on: all configured, or the one `--account` names. */
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

/** A client per account over its own transport (each account has its own rate limit). */
export interface AccountClients {
  readonly clients: readonly TelephonyClient[];
  readonly close: () => Promise<void>;
}

export function createAccountClients(
  config: TelesyncConfig,
  accounts: readonly AccountConfig[],
  log: Logger,
): AccountClients {
  const transports = accounts.map(
    (account) =>
      new HttpTransport({
        baseUrl: config.api.baseUrl,
        authId: account.authId,
        authToken: account.authToken,
        maxRps: config.api.maxRps,
        concurrency: config.api.concurrency,
        timeoutMs: config.api.timeoutMs,
        maxRetries: config.api.maxRetries,
        onRetry: (event) =>
          log.warn(
            {
              account: account.authId,
              path: event.path,
              retry: event.retryNumber,
              waitMs: event.delayMs,
              status: event.error.status,
            },
            `retrying: ${event.error.message}`,
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

/** Pages (or lookups) of one run requested at once, per connection to the service. */
const PAGES_PER_CONNECTION = 2;

/** What a run needs from the configuration: one definition for every command that syncs. */
export function syncDependencies(
  config: TelesyncConfig,
  database: Database,
  log: Logger,
): SyncDependencies {
  return {
    database,
    settings: config.sync,
    log,
    // Two pages per connection keep every connection busy while the previous page is parsed.
    pageConcurrency: config.api.concurrency * PAGES_PER_CONNECTION,
    secrets: configSecrets(config),
  };
}

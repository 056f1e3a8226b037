import { afterAll, beforeAll, expect } from 'vitest';
import { runTelesync } from './run-telesync.js';
import {
  createCliDatabase,
  harnessTarget,
  type CliDatabase,
  type TestDatabaseTarget,
} from './test-database.js';

/** What the `telesync` command under test talks to: the simulator, or a stand-in of a test's own. */
export interface CliService {
  readonly url: string;
  close(): Promise<void>;
}

/** The credentials of one account of the service. */
export interface CliAccount {
  readonly authId: string;
  readonly authToken: string;
}

export type CommandEnv = Readonly<Record<string, string>>;

/**
 * Settings every end-to-end command gets unless a test says otherwise: the simulator answers at
 * once, so the rate limiter should not be what a test waits for, and warnings are all a failing
 * assertion needs to show.
 */
export const E2E_DEFAULT_ENV: CommandEnv = {
  TELESYNC_MAX_RPS: '5000',
  TELESYNC_LOG_LEVEL: 'warn',
};

export interface CliFixtureOptions<S extends CliService> {
  /** Starts the service the command talks to (omit for tests that need only a database). */
  service?: () => Promise<S>;
  /** The account the environment carries; with a service, omit it only to test missing credentials. */
  account?: CliAccount;
  /** Added to (and overriding) E2E_DEFAULT_ENV in every environment the fixture builds. */
  env?: CommandEnv;
  /** Run `telesync migrate` on each database (default true); false leaves the schema empty. */
  migrate?: boolean;
}

/** A service, a database of its own and the environment that points `telesync` at both. */
export interface CliFixture<S extends CliService> {
  /** Known before the fixture starts: for test titles. */
  readonly target: TestDatabaseTarget;
  readonly service: S;
  readonly database: CliDatabase;
  /** The environment for `database`: service, account, defaults and the fixture's env. */
  readonly env: CommandEnv;
  /** `env` with `extra` on top. */
  envWith(extra: CommandEnv): Record<string, string>;
  /** The same environment for another database (one from `addDatabase`). */
  envFor(database: CliDatabase, extra?: CommandEnv): Record<string, string>;
  /** Another database on the same service, migrated as the first; dropped when the fixture ends. */
  addDatabase(): Promise<CliDatabase>;
}

/** A fixture started by hand, for a test that needs one of its own; `close` ends it. */
export interface StartedCliFixture<S extends CliService> extends CliFixture<S> {
  close(): Promise<void>;
}

/** The credentials as the command reads them. */
export function accountEnv(account: CliAccount): Record<string, string> {
  return { TELESYNC_AUTH_ID: account.authId, TELESYNC_AUTH_TOKEN: account.authToken };
}

/**
 * Starts the service, creates a database of its own (a fresh schema, or a fresh embedded
 * directory) and migrates it with `telesync migrate` (unless `migrate: false`). `S` is the type
 * `service` resolves to; a fixture without one has no `service` to read.
 */
export async function startCliFixture<S extends CliService = never>(
  options: CliFixtureOptions<S>,
): Promise<StartedCliFixture<S>> {
  const target = harnessTarget();
  const databases: CliDatabase[] = [];
  let service: S | undefined;
  const close = async (): Promise<void> => {
    await service?.close();
    for (const database of databases.splice(0)) await database.cleanup();
  };
  try {
    service = await options.service?.();
    const envFor = (database: CliDatabase, extra: CommandEnv = {}): Record<string, string> => ({
      ...database.env,
      ...(service === undefined ? {} : { TELESYNC_BASE_URL: service.url }),
      ...(options.account === undefined ? {} : accountEnv(options.account)),
      ...E2E_DEFAULT_ENV,
      ...options.env,
      ...extra,
    });
    const addDatabase = async (): Promise<CliDatabase> => {
      const database = createCliDatabase(target);
      databases.push(database);
      if (options.migrate !== false) {
        const migrated = await runTelesync(['migrate'], envFor(database));
        expect(migrated.code, `telesync migrate: ${migrated.stderr}`).toBe(0);
      }
      return database;
    };
    const database = await addDatabase();
    const started = service;
    return {
      target,
      get service(): S {
        if (started === undefined) throw new Error('this fixture was started without a service');
        return started;
      },
      database,
      env: envFor(database),
      envWith: (extra) => envFor(database, extra),
      envFor,
      addDatabase,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The fixture for the enclosing `describe` (or file): started in a `beforeAll`, ended in an
 * `afterAll`. Its members are readable from the tests and later hooks, not while tests are being
 * collected (except `target`). Each call makes its own: nothing is shared between suites or files.
 */
export function useCliFixture<S extends CliService = never>(
  options: CliFixtureOptions<S>,
): CliFixture<S> {
  let started: StartedCliFixture<S> | undefined;
  const current = (): StartedCliFixture<S> => {
    if (started === undefined) throw new Error('the CLI fixture is used before its beforeAll ran');
    return started;
  };
  beforeAll(async () => {
    started = await startCliFixture(options);
  });
  afterAll(async () => {
    await started?.close();
  });
  return {
    target: harnessTarget(),
    get service() {
      return current().service;
    },
    get database() {
      return current().database;
    },
    get env() {
      return current().env;
    },
    envWith: (extra) => current().envWith(extra),
    envFor: (database, extra) => current().envFor(database, extra),
    addDatabase: () => current().addDatabase(),
  };
}

import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { inject } from 'vitest';
import {
  databaseFromPGlite,
  openDatabase,
  openPGlite,
  type Database,
} from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { TestDatabaseTarget } from './choose-test-database.js';

export type { TestDatabaseTarget };

/** The database the harness chose for this run (see global-setup.ts). */
export function harnessTarget(): TestDatabaseTarget {
  return inject('testDatabase');
}

export const PGLITE_TARGET: TestDatabaseTarget = { kind: 'pglite', description: 'embedded PGlite' };

/**
 * The harness database plus embedded PGlite, once each: for the few tests that must prove a
 * behaviour on both databases within one run.
 */
export function bothDatabases(): TestDatabaseTarget[] {
  const target = harnessTarget();
  return target.kind === 'pglite' ? [target] : [target, PGLITE_TARGET];
}

export interface TestDatabase {
  readonly database: Database;
  readonly target: TestDatabaseTarget;
  /** Drops everything the test created. */
  close(): Promise<void>;
}

/** A fresh schema of its own (PostgreSQL) or a fresh in-memory instance (PGlite), migrated. */
export async function createTestDatabase(
  options: { migrate?: boolean; target?: TestDatabaseTarget } = {},
): Promise<TestDatabase> {
  const target = options.target ?? harnessTarget();
  const schema = uniqueSchemaName();
  let database: Database;
  let cleanup: () => Promise<void>;
  if (target.kind === 'postgres') {
    database = await openDatabase({ url: target.url, dataDir: '', schema }, { maxConnections: 4 });
    cleanup = async () => {
      await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(database.root);
      await database.close();
    };
  } else {
    database = databaseFromPGlite(await openPGlite(), schema);
    cleanup = () => database.close();
  }
  if (options.migrate !== false) await migrateToLatest(database);
  return { database, target, close: cleanup };
}

/**
 * A database for end-to-end tests that run the `telesync` command: the environment that points
 * the command at it, and a way to open it for inspection between commands (the embedded database
 * may be held by one process at a time, so close what `open` returns before running the command
 * again).
 */
export interface CliDatabase {
  readonly env: Readonly<Record<string, string>>;
  readonly target: TestDatabaseTarget;
  open(): Promise<Database>;
  inspect<T>(read: (database: Database) => Promise<T>): Promise<T>;
  cleanup(): Promise<void>;
}

export function createCliDatabase(target: TestDatabaseTarget = harnessTarget()): CliDatabase {
  const schema = uniqueSchemaName();
  if (target.kind === 'postgres') {
    const config = { url: target.url, dataDir: '', schema };
    const open = () => openDatabase(config, { maxConnections: 2 });
    return {
      env: { DATABASE_URL: target.url, TELESYNC_SCHEMA: schema },
      target,
      open,
      inspect: (read) => inspectWith(open, read),
      cleanup: async () => {
        const database = await open();
        try {
          await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(database.root);
          // The job queue's schema, which `telesync migrate` creates beside it.
          await sql`DROP SCHEMA IF EXISTS ${sql.id(`${schema}_jobs`)} CASCADE`.execute(
            database.root,
          );
        } finally {
          await database.close();
        }
      },
    };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'telesync-e2e-'));
  // A copy of an embedded database created once for the run, where the harness made one: the same
  // files `telesync` would create on first use, without its initdb's seconds in every fixture.
  const template = inject('embeddedTemplate');
  if (template !== undefined) cpSync(template, dataDir, { recursive: true });
  const open = () =>
    openDatabase({ url: undefined, dataDir, schema }, { command: 'test inspection' });
  return {
    env: { TELESYNC_DATA_DIR: dataDir, TELESYNC_SCHEMA: schema },
    target,
    open,
    inspect: (read) => inspectWith(open, read),
    cleanup: () => {
      rmSync(dataDir, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

async function inspectWith<T>(
  open: () => Promise<Database>,
  read: (database: Database) => Promise<T>,
): Promise<T> {
  const database = await open();
  try {
    return await read(database);
  } finally {
    await database.close();
  }
}

function uniqueSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { coerceError, describeError } from '../util/coerce-error.js';
import { redactUrl } from '../util/redact.js';
import { PGliteDialect } from './drivers/pglite-driver.js';
import { PgDialect } from './drivers/pg-driver.js';
import type { DatabaseSettings } from './database-settings.js';
import { lockEmbeddedDirectory } from './embedded-lock.js';
import { PostgresStartOutput } from './postgres-start-output.js';
import type { Tables } from './schema.js';
import { SESSION_SETTINGS, TEXT_PARSERS } from './type-parsers.js';
import { delayWasmTierUp } from './wasm-tier-up.js';

/** An open telesync database: Kysely bound to the telesync schema, and how to close it. */
export interface Database {
  /** Queries built with this instance are qualified with `schema`. */
  readonly db: Kysely<Tables>;
  /** The same connection without a default schema (migrations, catalog queries). */
  readonly root: Kysely<unknown>;
  /** The schema that holds telesync's tables (TELESYNC_SCHEMA). */
  readonly schema: string;
  /** Where the data lives, for people: a redacted URL or the embedded directory. */
  readonly location: string;
  /** `postgres` or `embedded`, for messages only: nothing may branch on it. */
  readonly kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}

/** The database could not be reached or used at all (down, wrong address, refused). */
export class DatabaseUnreachableError extends Error {
  override name = 'DatabaseUnreachableError';
}

/**
 * Checks that `database` answers, so a command fails once, in one line, instead of once per
 * stream, and returns its clock in epoch milliseconds (sync_runs times runs by it). Throws
 * DatabaseUnreachableError naming the location and the cause.
 */
export async function pingDatabase(database: Database): Promise<number> {
  try {
    const result = await sql<{
      ms: string;
    }>`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::text AS ms`.execute(database.root);
    return Number(result.rows[0]!.ms);
  } catch (error) {
    // 3D000: the server answers but has no such database, so "is it running" would mislead.
    const missing = (error as { code?: unknown } | null)?.code === '3D000';
    throw new DatabaseUnreachableError(
      `cannot use the database at ${database.location}: ${describeError(error)}; ` +
        (missing
          ? 'create it (createdb, or CREATE DATABASE) or check the name in DATABASE_URL'
          : 'check DATABASE_URL and that PostgreSQL is running'),
      { cause: error },
    );
  }
}

export interface OpenDatabaseOptions {
  /** Names the process in the embedded lock file, for the "in use by" message. */
  command?: string;
  /** Pool size for PostgreSQL. */
  maxConnections?: number;
  onIdleError?: (error: Error) => void;
}

/** The directory below TELESYNC_DATA_DIR where PGlite keeps its files. */
export const EMBEDDED_PGDATA_DIR = 'pgdata';

/** Where PGlite keeps the files of the embedded database under TELESYNC_DATA_DIR `dataDir`. */
export function embeddedPgdata(dataDir: string): string {
  return join(resolve(dataDir), EMBEDDED_PGDATA_DIR);
}

/**
 * Whether the embedded database under `dataDir` exists: the first command that opens it creates
 * it (PostgreSQL's initdb, seconds and about a gigabyte at its peak).
 */
export function embeddedDatabaseExists(dataDir: string): boolean {
  return existsSync(join(embeddedPgdata(dataDir), 'PG_VERSION'));
}

/**
 * Opens the database that `config` names: PostgreSQL through node-postgres when `url` is set,
 * otherwise the embedded PGlite database under `dataDir` (created on first use). This is the only
 * place that knows which one it is.
 */
export async function openDatabase(
  config: DatabaseSettings,
  options: OpenDatabaseOptions = {},
): Promise<Database> {
  if (config.url !== undefined) {
    const dialect = new PgDialect({
      connectionString: config.url,
      maxConnections: options.maxConnections ?? 10,
      ...(options.onIdleError ? { onIdleError: options.onIdleError } : {}),
    });
    return wrap(new Kysely<unknown>({ dialect }), config.schema, redactUrl(config.url), 'postgres');
  }

  const dataDir = resolve(config.dataDir);
  const lock = lockEmbeddedDirectory(dataDir, options.command ?? 'telesync');
  try {
    const pgdata = embeddedPgdata(dataDir);
    removeStalePostmasterLock(pgdata);
    const pglite = await openPGlite(pgdata).catch((error: unknown) => {
      throw new DatabaseUnreachableError(
        `cannot start the embedded database in ${dataDir}: ${coerceError(error).message}; ` +
          'its files may be damaged or written by another version of PostgreSQL: ' +
          `move ${pgdata} aside ` +
          '(it holds what was synced so far) and run the command again to start an empty one, ' +
          'or set DATABASE_URL to a PostgreSQL server',
        { cause: error },
      );
    });
    const database = wrap(
      new Kysely<unknown>({ dialect: new PGliteDialect(pglite) }),
      config.schema,
      dataDir,
      'embedded',
    );
    return {
      ...database,
      close: async () => {
        try {
          await database.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * PostgreSQL's own lock file in PGlite's directory. PGlite creates it empty and writes it after,
 * so a process killed between the two leaves an empty one, on which PostgreSQL refuses to start
 * ("lock file is empty") until someone deletes it. Under telesync's lock no other process has the
 * directory open, so whatever this file says is stale.
 */
function removeStalePostmasterLock(pgdata: string): void {
  rmSync(join(pgdata, 'postmaster.pid'), { force: true });
}

/**
 * Starts PGlite with telesync's parsers and session settings; `dataDir` undefined keeps it in
 * memory (tests).
 */
export async function openPGlite(dataDir?: string): Promise<PGlite> {
  delayWasmTierUp();
  // Loaded on demand: the WebAssembly module is large and PostgreSQL users never need it.
  const { PGlite } = await import('@electric-sql/pglite');
  const output = new PostgresStartOutput();
  const pglite = new PGlite({
    ...(dataDir !== undefined ? { dataDir } : {}),
    parsers: TEXT_PARSERS,
    onStderr: (line) => {
      output.add(line);
      return false;
    },
  });
  await pglite.waitReady.catch((error: unknown) => {
    // PGlite's own error does not say why; PostgreSQL's last words do.
    const reason = output.reason();
    throw reason === undefined ? error : new Error(`PostgreSQL: ${reason}`, { cause: error });
  });
  for (const [key, value] of Object.entries(SESSION_SETTINGS)) {
    await pglite.query(`SELECT set_config($1, $2, false)`, [key, value]);
  }
  return pglite;
}

/** Wraps an already-open PGlite instance (tests that share one in memory). */
export function databaseFromPGlite(pglite: PGlite, schema: string): Database {
  return wrap(
    new Kysely<unknown>({ dialect: new PGliteDialect(pglite) }),
    schema,
    'memory',
    'embedded',
  );
}

function wrap(
  root: Kysely<unknown>,
  schema: string,
  location: string,
  kind: Database['kind'],
): Database {
  let closed = false;
  return {
    db: (root as Kysely<Tables>).withSchema(schema),
    root,
    schema,
    location,
    kind,
    close: async () => {
      if (closed) return;
      closed = true;
      await root.destroy();
    },
  };
}

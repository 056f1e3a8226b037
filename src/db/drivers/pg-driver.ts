import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { copyPayloadOf } from '../copy-payload.js';
import { beginStatement } from './transaction-sql.js';
import { SESSION_SETTINGS, TEXT_PARSERS } from '../type-parsers.js';
import { CatalogIntrospector } from './catalog-introspector.js';

/** Options of the node-postgres dialect. */
export interface PgDialectOptions {
  connectionString: string;
  /** Connections in the pool. */
  maxConnections: number;
  /**
   * Called when a connection fails outside a query (the server restarted, the network dropped, the
   * session was terminated), idle in the pool or checked out.
   */
  onIdleError?: (error: Error) => void;
}

/**
 * Kysely dialect over a node-postgres pool with telesync's type parsers and session settings, and
 * COPY support (see copy-payload.ts). Written here rather than using Kysely's PostgresDialect because
 * that one hides the pg client, which COPY needs.
 */
export class PgDialect implements Dialect {
  constructor(private readonly options: PgDialectOptions) {}

  createDriver(): Driver {
    return new PgDriver(this.options);
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CatalogIntrospector(new PostgresIntrospector(db));
  }
}

const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    const parser = TEXT_PARSERS[oid];
    if (parser !== undefined && format !== 'binary') return parser;
    return pg.types.getTypeParser(oid, format ?? 'text') as (value: string) => unknown;
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** `-c key=value` startup options: applied by the server before the first query. */
function startupOptions(): string {
  return Object.entries(SESSION_SETTINGS)
    .map(([key, value]) => `-c ${key}=${value.replaceAll(' ', '\\ ')}`)
    .join(' ');
}

class PgDriver implements Driver {
  #pool: pg.Pool | undefined;
  readonly #connections = new WeakMap<pg.PoolClient, PgConnection>();

  constructor(private readonly options: PgDialectOptions) {}

  init(): Promise<void> {
    this.#pool = new pg.Pool({
      connectionString: this.options.connectionString,
      max: this.options.maxConnections,
      application_name: 'telesync',
      options: startupOptions(),
      types: pgTypes,
      connectionTimeoutMillis: 15_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
    });
    // Without a listener an idle client's error would crash the process; the next query simply
    // gets a fresh connection, so the failure is reported and otherwise ignored.
    this.#pool.on('error', (error) => this.options.onIdleError?.(error));
    return Promise.resolve();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#pool === undefined) throw new Error('database driver is closed');
    const client = await this.#pool.connect();
    let connection = this.#connections.get(client);
    if (connection === undefined) {
      connection = new PgConnection(client, this.options.onIdleError);
      this.#connections.set(client, connection);
    }
    return connection;
  }

  async beginTransaction(
    connection: DatabaseConnection,
    settings: TransactionSettings,
  ): Promise<void> {
    await connection.executeQuery(beginStatement(settings));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PgConnection).release();
    return Promise.resolve();
  }

  async destroy(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.end();
  }
}

class PgConnection implements DatabaseConnection {
  /** Set when a query failed in a way that leaves the connection unusable (cut, killed). */
  #broken = false;

  constructor(
    private readonly client: pg.PoolClient,
    onError: ((error: Error) => void) | undefined,
  ) {
    // A checked-out client whose session ends (pg_terminate_backend, a server restart, a cut
    // network) emits 'error'; the pool listens only while a client is idle, and an 'error' without
    // a listener kills the process. Once is enough: the client is never used again.
    client.on('error', (error: Error) => {
      this.#broken = true;
      onError?.(error);
    });
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      const payload = copyPayloadOf(query);
      if (payload !== undefined) {
        const copy = this.client.query(copyFrom(payload.statement('STDIN')));
        await pipeline(Readable.from(payload.chunks()), copy);
        return { rows: [], numAffectedRows: BigInt(copy.rowCount) };
      }
      const result = await this.client.query<R & pg.QueryResultRow>(query.sql, [
        ...query.parameters,
      ]);
      const changes = ['INSERT', 'UPDATE', 'DELETE', 'MERGE'].includes(result.command);
      return {
        rows: result.rows,
        numAffectedRows: changes ? BigInt(result.rowCount ?? 0) : undefined,
      };
    } catch (error) {
      if (isConnectionLevelFailure(error)) this.#broken = true;
      throw error;
    }
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used by telesync');
  }

  release(): void {
    // A broken client is destroyed rather than returned to the pool for the next caller to trip on.
    this.client.release(this.#broken ? true : undefined);
  }
}

/** Errors after which a pg client must not be reused: no SQLSTATE, or an admin shutdown class. */
function isConnectionLevelFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return true;
  // 08: connection exception; 57P: operator intervention (admin shutdown, crash shutdown).
  return code.startsWith('08') || code.startsWith('57P');
}

import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CompiledQuery } from 'kysely';
import {
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
import type { CopyPayload } from '../copy-payload.js';
import type { LoadConnection, RunOptions } from '../load-connection.js';
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
 * Kysely dialect over a node-postgres pool with telesync's type parsers and session settings, whose
 * connections are also the loading port (LoadConnection). Written here rather than using Kysely's
 * PostgresDialect because that one hides the pg client, which COPY needs.
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

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    (connection as PgConnection).deferBegin(beginStatement(settings).sql);
    return Promise.resolve();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PgConnection).end('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PgConnection).end('rollback');
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

/**
 * Prepared statements one session keeps at most: one per data table and schema in use is the
 * need; the bound keeps a process that loads into many schemas (the tests) from filling the
 * server's memory with them. Past it, statements run unnamed.
 */
export const MAX_PREPARED_PER_SESSION = 64;

/**
 * One pooled client. A transaction's BEGIN is not sent on its own: it waits for the transaction's
 * first statement and, when that one has no parameters or is a COPY (the loader's, with the
 * staging table's creation the first time on a session), goes in the same message, so a
 * transaction costs one round trip less. Against a database across a network each round trip is
 * at least the network's latency (docs/scaling.md, "Round trips of a loading transaction"). A
 * syntax error in such a message fails it whole, BEGIN included; the ROLLBACK that follows is then
 * a warning, not an error. What the session keeps (the staging tables, prepared statements) is
 * remembered here, so the server is not asked to make it again (docs/scaling.md, "The cost of a
 * loading transaction").
 */
class PgConnection implements DatabaseConnection, LoadConnection {
  /** Set when a query failed in a way that leaves the connection unusable (cut, killed). */
  #broken = false;
  /** The BEGIN of the transaction in hand, not sent yet. */
  #pendingBegin: string | undefined;
  /**
   * Session setup statements (CopyPayload's `sessionSetup`) whose effect this session keeps: a
   * COMMIT followed them. A COPY leaves them out.
   */
  readonly #sessionReady = new Set<string>();
  /**
   * Session setup statements run since the last COMMIT or ROLLBACK: kept once a COMMIT is answered
   * as one. (One run outside a transaction has committed already; it is only sent again.)
   */
  #setUpPending: string[] = [];
  /** The statements prepared on this session: text → name. */
  readonly #prepared = new Map<string, string>();
  readonly stagedInTransaction = new Set<string>();

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

  /** Opens a transaction with `statement` along with its first statement. */
  deferBegin(statement: string): void {
    this.#pendingBegin = statement;
  }

  /**
   * Ends the transaction in hand with COMMIT or ROLLBACK; a transaction that ran no statement was
   * never begun on the server, and ends here.
   */
  async end(statement: 'commit' | 'rollback'): Promise<void> {
    const setUp = this.#setUpPending;
    this.#setUpPending = [];
    this.stagedInTransaction.clear();
    if (this.#pendingBegin !== undefined) {
      this.#pendingBegin = undefined;
      return;
    }
    const result = await this.#guarded(() => this.client.query(statement));
    // COMMIT of a transaction that failed (an error caught and not thrown on) answers ROLLBACK.
    if (result.command === 'COMMIT') for (const setup of setUp) this.#sessionReady.add(setup);
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.run<R>(query.sql, query.parameters);
  }

  run<R>(
    sql: string,
    parameters: readonly unknown[],
    options: RunOptions = {},
  ): Promise<QueryResult<R>> {
    const begin = this.#pendingBegin;
    this.#pendingBegin = undefined;
    return this.#guarded(async () => {
      if (begin !== undefined && parameters.length === 0) {
        // Without parameters the statement goes by the simple protocol, which takes several
        // statements in one message: BEGIN and it, with an answer each (pg's types say one).
        const answers = (await this.client.query(`${begin};\n${sql}`)) as
          pg.QueryResult | pg.QueryResult[];
        const last = Array.isArray(answers) ? answers[answers.length - 1] : answers;
        return queryResultOf<R>(last!);
      }
      if (begin !== undefined) await this.client.query(begin);
      return queryResultOf<R>(
        await this.client.query<R & pg.QueryResultRow>({
          name: options.prepared === true ? this.#statementName(sql) : undefined,
          text: sql,
          values: [...parameters],
        }),
      );
    });
  }

  copyIn(copy: CopyPayload): Promise<number> {
    const begin = this.#pendingBegin;
    this.#pendingBegin = undefined;
    return this.#guarded(async () => {
      // The simple protocol runs every statement of a message in turn, a COPY FROM STDIN among
      // them: BEGIN, the session's setup not done yet, the statements the copy asks for first,
      // and the COPY go as one message.
      const setup = copy.sessionSetup.filter((statement) => !this.#sessionReady.has(statement));
      const statements = [...(begin === undefined ? [] : [begin]), ...setup, ...copy.before];
      const stream = this.client.query(
        copyFrom([...statements, copy.statement('STDIN')].join(';\n')),
      );
      await pipeline(Readable.from(copy.chunks()), stream);
      this.#setUpPending.push(...setup);
      return stream.rowCount;
    });
  }

  /** Runs `work`, marking the connection broken when it fails in a way that leaves it unusable. */
  async #guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isConnectionLevelFailure(error)) this.#broken = true;
      throw error;
    }
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used by telesync');
  }

  /**
   * The name to prepare `sql` under on this session (a hash of it, the same on every session),
   * while the session holds fewer than MAX_PREPARED_PER_SESSION others; past it, undefined.
   */
  #statementName(sql: string): string | undefined {
    let name = this.#prepared.get(sql);
    if (name === undefined) {
      if (this.#prepared.size >= MAX_PREPARED_PER_SESSION) return undefined;
      name = `telesync_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
      this.#prepared.set(sql, name);
    }
    return name;
  }

  release(): void {
    this.#pendingBegin = undefined;
    this.#setUpPending = [];
    this.stagedInTransaction.clear();
    // A broken client is destroyed rather than returned to the pool for the next caller to trip on.
    this.client.release(this.#broken ? true : undefined);
  }
}

function queryResultOf<R>(result: pg.QueryResult): QueryResult<R> {
  const changes = ['INSERT', 'UPDATE', 'DELETE', 'MERGE'].includes(result.command);
  return {
    rows: result.rows as R[],
    numAffectedRows: changes ? BigInt(result.rowCount ?? 0) : undefined,
  };
}

/** Errors after which a pg client must not be reused: no SQLSTATE, or an admin shutdown class. */
function isConnectionLevelFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return true;
  // 08: connection exception; 57P: operator intervention (admin shutdown, crash shutdown).
  return code.startsWith('08') || code.startsWith('57P');
}

import type { PGlite } from '@electric-sql/pglite';
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
import { copyPayloadOf } from '../copy-payload.js';
import { beginStatement } from './transaction-sql.js';
import { CatalogIntrospector } from './catalog-introspector.js';

/**
 * Kysely dialect over one embedded PGlite instance.
 *
 * PGlite is a single Postgres session. Kysely may hand out several "connections" at once (a run
 * holds one for its lock while others load data), so each connection here is a view of the one
 * session, and a mutex keeps a transaction's statements together: while one connection is inside
 * BEGIN…COMMIT, every other connection's statements wait. A single statement outside a transaction
 * takes the mutex just for itself.
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}

  createDriver(): Driver {
    return new PGliteDriver(this.pglite);
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

/** A FIFO mutex: `acquire` resolves with the function that releases it. */
class Mutex {
  #tail: Promise<void> = Promise.resolve();

  acquire(): Promise<() => void> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const acquired = this.#tail.then(() => release);
    this.#tail = this.#tail.then(() => released);
    return acquired;
  }
}

class PGliteDriver implements Driver {
  readonly #mutex = new Mutex();
  #closed = false;

  constructor(private readonly pglite: PGlite) {}

  async init(): Promise<void> {
    await this.pglite.waitReady;
  }

  acquireConnection(): Promise<DatabaseConnection> {
    if (this.#closed) return Promise.reject(new Error('database driver is closed'));
    return Promise.resolve(new PGliteConnection(this.pglite, this.#mutex));
  }

  async beginTransaction(
    connection: DatabaseConnection,
    settings: TransactionSettings,
  ): Promise<void> {
    const conn = connection as PGliteConnection;
    await conn.holdForTransaction();
    try {
      await conn.executeQuery(beginStatement(settings));
    } catch (error) {
      conn.releaseHold();
      throw error;
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const conn = connection as PGliteConnection;
    try {
      await conn.executeQuery(CompiledQuery.raw('commit'));
    } finally {
      conn.releaseHold();
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const conn = connection as PGliteConnection;
    try {
      await conn.executeQuery(CompiledQuery.raw('rollback'));
    } finally {
      conn.releaseHold();
    }
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PGliteConnection).releaseHold();
    return Promise.resolve();
  }

  async destroy(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Waiting for the mutex lets a transaction in hand finish before the instance closes.
    const release = await this.#mutex.acquire();
    try {
      await this.pglite.close();
    } finally {
      release();
    }
  }
}

class PGliteConnection implements DatabaseConnection {
  #release: (() => void) | undefined;

  constructor(
    private readonly pglite: PGlite,
    private readonly mutex: Mutex,
  ) {}

  async holdForTransaction(): Promise<void> {
    this.#release = await this.mutex.acquire();
  }

  releaseHold(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#release !== undefined) return this.run<R>(query);
    const release = await this.mutex.acquire();
    try {
      return await this.run<R>(query);
    } finally {
      release();
    }
  }

  private async run<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const payload = copyPayloadOf(query);
    if (payload !== undefined) {
      // In the process, a statement costs no round trip: the ones before the COPY go one by one.
      for (const statement of [...payload.sessionSetup, ...payload.before])
        await this.pglite.query(statement);
      const result = await this.pglite.query(payload.statement("'/dev/blob'"), [], {
        blob: new Blob(payload.chunks()),
      });
      return { rows: [], numAffectedRows: BigInt(result.affectedRows ?? 0) };
    }
    const result = await this.pglite.query<R>(query.sql, [...query.parameters]);
    return {
      rows: result.rows,
      numAffectedRows: result.affectedRows !== undefined ? BigInt(result.affectedRows) : undefined,
    };
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used by telesync');
  }
}

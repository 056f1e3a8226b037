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
import type { CopyPayload } from '../copy-payload.js';
import type { LoadConnection } from '../load-connection.js';
import { beginStatement } from './transaction-sql.js';
import { CatalogIntrospector } from './catalog-introspector.js';

/**
 * Kysely dialect over one embedded PGlite instance.
 *
 * PGlite is a single Postgres session. Kysely may hand out several "connections" at once (a run
 * holds one for its lock while others load data), so each connection here is a view of the one
 * session, and a mutex keeps a transaction's statements together: while one connection is inside
 * BEGIN…COMMIT, every other connection's statements wait. A single statement outside a transaction
 * takes the mutex just for itself. Its connections are also the loading port (LoadConnection).
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

class PGliteConnection implements DatabaseConnection, LoadConnection {
  #release: (() => void) | undefined;
  readonly stagedInTransaction = new Set<string>();

  constructor(
    private readonly pglite: PGlite,
    private readonly mutex: Mutex,
  ) {}

  async holdForTransaction(): Promise<void> {
    this.#release = await this.mutex.acquire();
  }

  releaseHold(): void {
    this.stagedInTransaction.clear();
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.run<R>(query.sql, query.parameters);
  }

  /** Runs a statement (PGlite has no use for prepared statements: no parsing by a server apart). */
  run<R>(sql: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
    return this.#exclusive(async () => {
      const result = await this.pglite.query<R>(sql, [...parameters]);
      return {
        rows: result.rows,
        numAffectedRows:
          result.affectedRows !== undefined ? BigInt(result.affectedRows) : undefined,
      };
    });
  }

  copyIn(copy: CopyPayload): Promise<number> {
    return this.#exclusive(async () => {
      // In the process, a statement costs no round trip: the ones before the COPY go one by one.
      for (const statement of [...copy.sessionSetup, ...copy.before])
        await this.pglite.query(statement);
      const result = await this.pglite.query(copy.statement("'/dev/blob'"), [], {
        blob: new Blob(copy.chunks()),
      });
      return result.affectedRows ?? 0;
    });
  }

  /** Runs `work` inside the transaction this connection holds, or alone under the mutex. */
  async #exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (this.#release !== undefined) return work();
    const release = await this.mutex.acquire();
    try {
      return await work();
    } finally {
      release();
    }
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used by telesync');
  }
}

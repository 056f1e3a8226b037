import type { Kysely, QueryResult } from 'kysely';
import type { CopyPayload } from './copy-payload.js';

/** Options of LoadConnection.run. */
export interface RunOptions {
  /**
   * Run as a named prepared statement of the session where the driver can: for a statement whose
   * text repeats batch after batch (the upsert from the staging table), so the server parses and
   * plans it once a session. Only for statements whose result columns cannot change while a
   * session lives (no `SELECT *`): PostgreSQL refuses a prepared statement whose columns changed.
   */
  readonly prepared?: boolean;
}

/**
 * The loading port: what the loader needs of the one database connection its transaction runs on.
 * Both drivers' connections implement it, so a COPY goes to the driver's own client (pg through
 * pg-copy-streams, PGlite through its '/dev/blob') in the same transaction as every statement of
 * the Kysely transaction around it: rows, rejects, ledger and checkpoint commit together.
 * What a session keeps (staging tables made, statements prepared) is state of the connection.
 */
export interface LoadConnection {
  /**
   * Runs `copy`: its `sessionSetup` where this session has not kept it yet, its `before`
   * statements (a savepoint, the staging table's emptying), then its COPY with its bytes.
   * Resolves with the rows copied.
   */
  copyIn(copy: CopyPayload): Promise<number>;
  /** Runs one statement with its parameters ($1, $2…). */
  run<R>(
    sql: string,
    parameters: readonly unknown[],
    options?: RunOptions,
  ): Promise<QueryResult<R>>;
  /**
   * Staging tables loaded in the transaction in hand: a second batch of one transaction finds the
   * first one's rows there. Emptied when the transaction ends.
   */
  readonly stagedInTransaction: Set<string>;
}

/** Whether `value` is a LoadConnection (a connection of telesync's drivers). */
export function isLoadConnection(value: unknown): value is LoadConnection {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<LoadConnection>).copyIn === 'function' &&
    typeof (value as Partial<LoadConnection>).run === 'function' &&
    (value as Partial<LoadConnection>).stagedInTransaction instanceof Set
  );
}

/** A Kysely transaction (or instance) of any schema type, as far as loadConnectionOf needs it. */
export type TransactionRunner = Pick<Kysely<unknown>, 'getExecutor'>;

/**
 * The connection a Kysely transaction runs on, as the loading port. A transaction's executor
 * provides its one connection every time, so what is sent through the port shares the
 * transaction.
 */
export async function loadConnectionOf(
  trx: Pick<Kysely<unknown>, 'getExecutor'>,
): Promise<LoadConnection> {
  const connection = await trx.getExecutor().provideConnection((c) => Promise.resolve(c));
  if (!isLoadConnection(connection)) {
    throw new TypeError('the database connection cannot load: open it with openDatabase');
  }
  return connection;
}

import pg from 'pg';
import { openDatabase } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { HarnessError } from './bench-errors.js';

/**
 * The benchmarks' PostgreSQL: every run works in a schema of its own (`bench_<tag>_<label>`),
 * migrated by telesync's own migrations (same tables, same indexes as production), and dropped
 * afterwards, also when the harness fails or is interrupted.
 */

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export class BenchDatabase {
  readonly #pool: pg.Pool;
  readonly #schemas = new Set<string>();
  #sequence = 0;

  constructor(
    readonly url: string,
    /** Unique per harness run: schemas of two runs never collide. */
    readonly tag: string,
  ) {
    this.#pool = new pg.Pool({ connectionString: url, max: 2, application_name: 'telesync-bench' });
    this.#pool.on('error', () => undefined);
  }

  /** Checks the connection; throws HarnessError naming the URL's host when it fails. */
  async check(): Promise<void> {
    try {
      await this.#pool.query('SELECT 1');
    } catch (error) {
      throw new HarnessError(
        `cannot reach PostgreSQL at ${redactUrl(this.url)} (set DATABASE_URL): ${String(error)}`,
      );
    }
  }

  async serverVersion(): Promise<string> {
    const result = await this.#pool.query<{ version: string }>('SELECT version() AS version');
    return result.rows[0]?.version ?? 'unknown';
  }

  /** A new schema holding telesync's migrated tables; dropped by dropSchema or dropAll. */
  async createSchema(label: string): Promise<string> {
    const schema = `bench_${this.tag}_${label}_${++this.#sequence}`.toLowerCase().slice(0, 63);
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new HarnessError(`bad schema name ${schema}`);
    this.#schemas.add(schema);
    const database = await openDatabase(
      { url: this.url, schema, dataDir: '/nonexistent' },
      { maxConnections: 1 },
    );
    try {
      await migrateToLatest(database);
    } finally {
      await database.close();
    }
    return schema;
  }

  /** An empty schema for a telesync of another commit to migrate itself; dropped as the others. */
  async createEmptySchema(label: string): Promise<string> {
    const schema = `bench_${this.tag}_${label}_${++this.#sequence}`.toLowerCase().slice(0, 63);
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new HarnessError(`bad schema name ${schema}`);
    this.#schemas.add(schema);
    await this.#pool.query(`CREATE SCHEMA "${schema}"`);
    return schema;
  }

  /** The backends (pid) of the connections from these client ports (pg_stat_activity). */
  async backendsOfClientPorts(
    ports: readonly number[],
  ): Promise<{ pid: number; clientPort: number }[]> {
    const rows = await this.query<{ pid: number; client_port: number }>(
      'SELECT pid, client_port FROM pg_stat_activity WHERE client_port = ANY($1::int[])',
      [ports],
    );
    return rows.map((row) => ({ pid: row.pid, clientPort: row.client_port }));
  }

  async dropSchema(schema: string): Promise<void> {
    await this.#pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    // `telesync migrate` puts the job queue beside the data, in <schema>_jobs.
    await this.#pool.query(`DROP SCHEMA IF EXISTS "${schema}_jobs" CASCADE`);
    this.#schemas.delete(schema);
  }

  /** Drops every schema this run created and still holds. */
  async dropAll(): Promise<void> {
    for (const schema of [...this.#schemas]) {
      try {
        await this.dropSchema(schema);
      } catch {
        // Reported by the caller's own failure; the next attempt may succeed.
      }
    }
  }

  /**
   * Asks PostgreSQL to write every dirty buffer now, so each timed run starts from the same state
   * instead of paying for the previous run's writes. Needs superuser; skipped (false) otherwise.
   */
  async checkpoint(): Promise<boolean> {
    try {
      await this.#pool.query('CHECKPOINT');
      return true;
    } catch {
      return false;
    }
  }

  async query<R extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<R[]> {
    return (await this.#pool.query<R>(text, params)).rows;
  }

  /** Rows of trunk_calls, all of them or those whose end_time lies in [fromIso, toIso). */
  async countTrunkCalls(schema: string, range?: { from: string; to: string }): Promise<number> {
    const rows =
      range === undefined
        ? await this.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".trunk_calls`)
        : await this.query<{ n: string }>(
            `SELECT count(*) AS n FROM "${schema}".trunk_calls WHERE end_time >= $1::timestamptz AND end_time < $2::timestamptz`,
            [range.from, range.to],
          );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Rows of each account whose end_time lies in that account's [from, to), in one scan: account →
   * count (0 for an account with none).
   */
  async countTrunkCallsPerAccount(
    schema: string,
    ranges: readonly { accountId: string; from: string; to: string }[],
  ): Promise<Map<string, number>> {
    // A recordset from JSON, as telesync's own batched statements take their rows.
    const rows = await this.query<{ account_id: string; n: string }>(
      `SELECT r."accountId" AS account_id, count(t.account_id) AS n
         FROM jsonb_to_recordset($1::jsonb) AS r("accountId" text, "from" timestamptz, "to" timestamptz)
         LEFT JOIN "${schema}".trunk_calls t
           ON t.account_id = r."accountId" AND t.end_time >= r."from" AND t.end_time < r."to"
        GROUP BY r."accountId"`,
      [JSON.stringify(ranges)],
    );
    return new Map(rows.map((row) => [row.account_id, Number(row.n)]));
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}

/** The URL without its password, for messages and results. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

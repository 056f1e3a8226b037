import { CompiledQuery, sql, type Kysely } from 'kysely';
import { CopyPayload } from '../../src/db/copy-payload.js';
import { MAX_PREPARED_PER_SESSION } from '../../src/db/drivers/pg-driver.js';
import { loadConnectionOf, type TransactionRunner } from '../../src/db/load-connection.js';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, harnessTarget, type TestDatabase } from '../support/test-database.js';

const SERVER = harnessTarget();

/**
 * The PostgreSQL driver sends a transaction's BEGIN with its first statement when that one has no
 * parameters: one round trip less a transaction, and every transaction still all or nothing.
 * Messages are counted where they leave, at the pg client.
 */
describe.skipIf(SERVER.kind !== 'postgres')('the PostgreSQL driver opening transactions', () => {
  let handle: TestDatabase;
  let table: string;
  beforeAll(async () => {
    handle = await createTestDatabase({ target: SERVER });
    table = `${handle.database.schema}.driver_probe`;
    await sql`CREATE TABLE ${sql.table(table)} (n int PRIMARY KEY)`.execute(handle.database.root);
  });
  afterAll(async () => {
    await handle?.close();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** What the pg clients were given while `work` ran (COPY streams as their statement). */
  const sentDuring = async (work: () => Promise<unknown>): Promise<string[]> =>
    (await queriesDuring(work)).map((query) => query.text);
  /** The same, with the name each was prepared under (none: unnamed). */
  const queriesDuring = async (
    work: () => Promise<unknown>,
  ): Promise<{ text: string; name: string | undefined }[]> => {
    const sent: { text: string; name: string | undefined }[] = [];
    // eslint-disable-next-line @typescript-eslint/unbound-method -- applied to its client below
    const original = pg.Client.prototype.query;
    vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
      this: pg.Client,
      ...args: unknown[]
    ) {
      const [first] = args;
      sent.push(
        typeof first === 'string'
          ? { text: first, name: undefined }
          : {
              text: String((first as { text?: string }).text),
              name: (first as { name?: string }).name,
            },
      );
      return (original as (...all: unknown[]) => unknown).apply(this, args) as never;
    });
    try {
      await work();
    } finally {
      vi.restoreAllMocks();
    }
    return sent;
  };
  const stored = async () =>
    (
      await sql<{ n: number }>`SELECT n FROM ${sql.table(table)} ORDER BY n`.execute(
        handle.database.root,
      )
    ).rows.map((row) => row.n);
  const raw = (text: string, parameters: unknown[] = []) => CompiledQuery.raw(text, parameters);
  /** Sends `copy` through the loading port of the connection `trx` runs on. */
  const copyIn = async (trx: TransactionRunner, copy: CopyPayload) =>
    (await loadConnectionOf(trx)).copyIn(copy);
  /** Runs `text` as a prepared statement through the loading port. */
  const runPrepared = async <R>(trx: TransactionRunner, text: string, parameters: unknown[]) =>
    (await loadConnectionOf(trx)).run<R>(text, parameters, { prepared: true });

  it('sends BEGIN with a first statement that has no parameters, and COMMIT alone', async () => {
    const sent = await sentDuring(() =>
      handle.database.root.transaction().execute(async (trx) => {
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES (1)`));
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES ($1)`, [2]));
      }),
    );
    expect(sent).toEqual([
      `begin;\nINSERT INTO ${table} VALUES (1)`,
      `INSERT INTO ${table} VALUES ($1)`,
      'commit',
    ]);
    expect(await stored()).toEqual([1, 2]);
  });

  it('sends BEGIN and the statements a COPY asks for first in the message of the COPY', async () => {
    const staging = `${handle.database.schema}.driver_staging`;
    const copy = (rows: string, before: string[]) =>
      new CopyPayload(staging, ['"n"'], rows, before);
    const create = `CREATE TABLE IF NOT EXISTS ${staging} (n int)`;
    const sent = await sentDuring(() =>
      handle.database.root.transaction().execute(async (trx) => {
        await copyIn(trx, copy('10\n11\n', [create]));
        await copyIn(trx, copy('12\n', [`DELETE FROM ${staging}`]));
        await trx.executeQuery(raw(`INSERT INTO ${table} SELECT n FROM ${staging}`));
      }),
    );
    expect(sent).toEqual([
      `begin;\n${create};\nCOPY ${staging} ("n") FROM STDIN`,
      `DELETE FROM ${staging};\nCOPY ${staging} ("n") FROM STDIN`,
      `INSERT INTO ${table} SELECT n FROM ${staging}`,
      'commit',
    ]);
    expect(await stored()).toEqual([1, 2, 12]);

    // A statement before the COPY that fails takes the whole transaction with it.
    await expect(
      handle.database.root.transaction().execute(async (trx) => {
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES (13)`));
        await copyIn(trx, copy('14\n', [`DELETE FROM ${staging}_missing`]));
      }),
    ).rejects.toThrow(/does not exist/);
    expect(await stored()).toEqual([1, 2, 12]);
    await sql`DELETE FROM ${sql.table(table)} WHERE n = 12`.execute(handle.database.root);
  });

  it('sends BEGIN alone before a first statement with parameters', async () => {
    const sent = await sentDuring(() =>
      handle.database.root.transaction().execute(async (trx) => {
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES ($1)`, [3]));
      }),
    );
    expect(sent).toEqual(['begin', `INSERT INTO ${table} VALUES ($1)`, 'commit']);
    expect(await stored()).toEqual([1, 2, 3]);
  });

  it('keeps the isolation level asked for, and answers the first statement with its own result', async () => {
    const level = await handle.database.root
      .transaction()
      .setIsolationLevel('serializable')
      .execute(async (trx) => {
        const result = await trx.executeQuery<{ transaction_isolation: string }>(
          raw('SHOW transaction_isolation'),
        );
        return result.rows;
      });
    expect(level).toEqual([{ transaction_isolation: 'serializable' }]);
  });

  it('rolls back everything when a later statement fails, and the connection serves the next transaction', async () => {
    await expect(
      handle.database.root.transaction().execute(async (trx) => {
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES (4)`));
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES ($1)`, [1]));
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await stored()).toEqual([1, 2, 3]);
    await expect(
      handle.database.root.transaction().execute(async (trx) => {
        await trx.executeQuery(raw(`INSERT INTO ${table} VALUES (1)`));
      }),
    ).rejects.toThrow(/duplicate key/);
    await handle.database.root.transaction().execute(async (trx) => {
      await trx.executeQuery(raw(`INSERT INTO ${table} VALUES (5)`));
    });
    expect(await stored()).toEqual([1, 2, 3, 5]);
  });

  it('sends nothing for a transaction that ran no statement, committed or rolled back', async () => {
    const sent = await sentDuring(async () => {
      await handle.database.root.transaction().execute(() => Promise.resolve());
      await expect(
        handle.database.root
          .transaction()
          .execute(() => Promise.reject(new Error('given up before any statement'))),
      ).rejects.toThrow('given up');
    });
    expect(sent).toEqual([]);
    // No BEGIN is left over for the connection's next statement outside a transaction: it is
    // sent alone and commits by itself.
    const next = await sentDuring(() =>
      handle.database.root.executeQuery(raw(`INSERT INTO ${table} VALUES (6)`)),
    );
    expect(next).toEqual([`INSERT INTO ${table} VALUES (6)`]);
    expect(await stored()).toEqual([1, 2, 3, 5, 6]);
  });

  /** COPYs of rows into the temporary table `staging`, which each makes as its session setup. */
  const stagedCopies = (staging: string) => {
    const create = `CREATE TEMP TABLE IF NOT EXISTS ${staging} (n int) ON COMMIT DELETE ROWS`;
    const copy = (rows: string) => new CopyPayload(staging, ['"n"'], rows, [], [create]);
    return { create, copy };
  };

  it("runs a COPY's session setup once a session, counting it done only when its transaction commits", async () => {
    const staging = 'driver_session_staging';
    const { create, copy } = stagedCopies(staging);
    const copyStatement = `COPY ${staging} ("n") FROM STDIN`;
    // One session throughout, as a pooled connection is.
    const sent = await sentDuring(() =>
      handle.database.root.connection().execute(async (session) => {
        // Rolled back: the table it made is gone with it, so the next COPY makes it again.
        await expect(
          session.transaction().execute(async (trx) => {
            await copyIn(trx, copy('20\n'));
            throw new Error('given up after the COPY');
          }),
        ).rejects.toThrow('given up');
        for (const n of [21, 22]) {
          await session.transaction().execute(async (trx) => {
            await copyIn(trx, copy(`${n}\n`));
            await trx.executeQuery(raw(`INSERT INTO ${table} SELECT n FROM ${staging}`));
          });
        }
      }),
    );
    expect(sent).toEqual([
      `begin;\n${create};\n${copyStatement}`,
      'rollback',
      `begin;\n${create};\n${copyStatement}`,
      `INSERT INTO ${table} SELECT n FROM ${staging}`,
      'commit',
      `begin;\n${copyStatement}`,
      `INSERT INTO ${table} SELECT n FROM ${staging}`,
      'commit',
    ]);
    expect(await stored()).toEqual([1, 2, 3, 5, 6, 21, 22]);
  });

  it('makes the session setup again after a COMMIT that the server answered with ROLLBACK', async () => {
    const staging = 'driver_failed_staging';
    const { create, copy } = stagedCopies(staging);
    const sent = await sentDuring(() =>
      handle.database.root.connection().execute(async (session) => {
        // An error caught inside the transaction leaves it failed: COMMIT then rolls it back.
        await session.transaction().execute(async (trx) => {
          await copyIn(trx, copy('30\n'));
          await trx.executeQuery(raw('SELECT 1 / 0')).catch(() => undefined);
        });
        await session.transaction().execute(async (trx) => {
          await copyIn(trx, copy('31\n'));
          await trx.executeQuery(raw(`INSERT INTO ${table} SELECT n FROM ${staging}`));
        });
      }),
    );
    expect(sent.filter((text) => text.includes(create))).toHaveLength(2);
    expect(await stored()).toEqual([1, 2, 3, 5, 6, 21, 22, 31]);
  });

  it('sends a prepared query as a named statement, prepared once a session, with the same results', async () => {
    const text = `INSERT INTO ${table} SELECT n FROM unnest($1::int[]) AS n`;
    let statements: { name: string; statement: string }[] = [];
    const sent = await queriesDuring(() =>
      handle.database.root.connection().execute(async (session) => {
        for (const values of [[40, 41], [42]]) {
          await session.transaction().execute(async (trx) => {
            const result = await runPrepared(trx, text, [values]);
            expect(result.numAffectedRows).toBe(BigInt(values.length));
          });
        }
        // Not a prepared query: the same text, unnamed.
        await session.executeQuery(raw(text, [[43]]));
        statements = (
          await sql<{
            name: string;
            statement: string;
          }>`SELECT name, statement FROM pg_prepared_statements WHERE statement = ${text}`.execute(
            session,
          )
        ).rows;
      }),
    );
    const name = statements[0]?.name;
    expect(name).toMatch(/^telesync_[0-9a-f]{24}$/);
    expect(sent.filter((query) => query.text === text).map((query) => query.name)).toEqual([
      name,
      name,
      undefined,
    ]);
    expect(statements.map((row) => row.statement)).toEqual([text]);
    expect(await stored()).toEqual([1, 2, 3, 5, 6, 21, 22, 31, 40, 41, 42, 43]);
  });

  it(`prepares at most ${MAX_PREPARED_PER_SESSION} statements a session, and runs the others unnamed`, async () => {
    const { before, after } = await handle.database.root.connection().execute(async (session) => {
      const before = await preparedOn(session);
      for (let k = 0; k < MAX_PREPARED_PER_SESSION + 5; k++) {
        const result = await runPrepared<{ k: number }>(session, `SELECT $1::int + ${k} AS k`, [1]);
        expect(result.rows).toEqual([{ k: 1 + k }]);
      }
      return { before, after: await preparedOn(session) };
    });
    // The pooled session may hold one from the test before; either way it is full now, no more.
    expect(before).toBeLessThan(MAX_PREPARED_PER_SESSION);
    expect(after).toBe(MAX_PREPARED_PER_SESSION);
  });
});

async function preparedOn(session: Kysely<unknown>): Promise<number> {
  const result = await sql<{
    count: string;
  }>`SELECT count(*) AS count FROM pg_prepared_statements`.execute(session);
  return Number(result.rows[0]!.count);
}

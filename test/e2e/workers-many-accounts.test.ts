import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { sleep } from '../../src/util/sleep.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { lastJson } from '../support/command-output.js';
import {
  expectAccountsExact,
  expectWithinBudget,
  SERVICE_BUDGET,
  testAccounts,
  writeAccountsConfig,
} from '../support/many-accounts.js';
import { runTelesync, startTelesync, type TelesyncProcess } from '../support/run-telesync.js';
import { waitFor } from '../support/telesync-process.js';
import { harnessTarget, type CliDatabase } from '../support/test-database.js';
import { SCHEDULES_OFF } from '../support/schedules-off.js';

const ACCOUNTS = testAccounts('MA_MANY', 300);

/** Most transactions a second two idle workers of 300 accounts may cost PostgreSQL. */
const IDLE_TRANSACTIONS_PER_SECOND = 10;
const IDLE_MEASURE_MS = 20_000;
/** Past PostgreSQL's late report of an idle session's counters (10 s), with a margin. */
const STATS_SETTLE_MS = 12_000;

describe.skipIf(harnessTarget().kind !== 'postgres')(
  'two workers and three hundred accounts through the job queue',
  () => {
    const cli = useCliFixture({
      service: () =>
        startSimulator({
          seed: 'e2e-many-accounts',
          // About three calls a day for each account.
          calls: 270,
          accounts: ACCOUNTS,
          rateLimit: `${SERVICE_BUDGET.requests}/5s`,
        }),
      env: {
        TELESYNC_MAX_RPS: '55',
        // TELESYNC_ACCOUNT_CONCURRENCY unset: each worker takes what memory allows (57 accounts)
        // on a pool of at most 20 connections.
        TELESYNC_HTTP_PORT: '0',
        TELESYNC_LOG_LEVEL: 'info',
        ...SCHEDULES_OFF,
      },
    });

    it('idle, they cost PostgreSQL a few transactions a second; then every account is read exactly', async () => {
      const target = harnessTarget();
      if (target.kind !== 'postgres') throw new Error('needs the PostgreSQL harness');
      // A database of its own: its statistics then count these workers alone, not other tests.
      const admin = await openDatabase(
        { url: target.url, dataDir: '', schema: 'public' },
        { maxConnections: 1 },
      );
      const name = `telesync_many_${randomBytes(4).toString('hex')}`;
      await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.root);
      const url = new URL(target.url);
      url.pathname = `/${name}`;
      const database = ownDatabase(url.toString());
      const env = cli.envFor(database, { TELESYNC_CONFIG: writeAccountsConfig(ACCOUNTS) });
      const workers: TelesyncProcess[] = [];
      try {
        const migrated = await runTelesync(['migrate'], env);
        expect(migrated.code, migrated.stderr).toBe(0);
        for (let index = 0; index < 2; index++)
          workers.push(startTelesync(['worker'], env, { timeoutMs: 170_000 }));
        for (const worker of workers)
          await waitFor(() => /worker started/.test(worker.stderr()), {
            timeoutMs: 60_000,
            what: 'the workers to start',
          });
        // Past their start (queues, schedules, first heartbeats), then measured idle. PostgreSQL 15
        // reports a session's counters up to 10 s after it goes idle (PGSTAT_IDLE_INTERVAL): sooner,
        // the start-up's transactions would be counted in the idle window.
        await sleep(STATS_SETTLE_MS);
        const before = await transactions(admin.root, name);
        const started = Date.now();
        await sleep(IDLE_MEASURE_MS);
        const perSecond =
          ((await transactions(admin.root, name)) - before) / ((Date.now() - started) / 1_000);
        expect(perSecond).toBeLessThanOrEqual(IDLE_TRANSACTIONS_PER_SECOND);

        const done = await runTelesync(
          ['backfill', '--days', '10', '--queue', '--wait', '--json'],
          env,
          { timeoutMs: 150_000 },
        );
        expect(done.code, done.stderr.slice(-2_000)).toBe(0);
        const outcome = lastJson(done.stdout);
        expect(outcome).toMatchObject({ status: 'succeeded', accounts: 300, failed_accounts: [] });
        await expectAccountsExact(
          cli.service,
          database,
          String(outcome.covered_from),
          String(outcome.covered_to),
        );
        expectWithinBudget(cli.service);
        // Both workers took accounts.
        for (const worker of workers) expect(worker.stderr()).toMatch(/job completed/);
        for (const worker of workers) worker.kill('SIGTERM');
        for (const worker of workers) {
          const ended = await worker.exited;
          expect(ended.code, ended.stderr.slice(-2_000)).toBe(0);
        }
      } finally {
        for (const worker of workers) worker.kill('SIGKILL');
        await Promise.all(workers.map((worker) => worker.exited));
        await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.root);
        await admin.close();
      }
    }, 240_000);
  },
);

/** The command line's view of a database of the test's own, in its default schema. */
function ownDatabase(url: string): CliDatabase {
  const schema = 'telephony';
  const open = () => openDatabase({ url, dataDir: '', schema }, { maxConnections: 2 });
  return {
    env: { DATABASE_URL: url, TELESYNC_SCHEMA: schema },
    target: { kind: 'postgres', url, description: 'a PostgreSQL database of the test' },
    open,
    async inspect(read) {
      const database = await open();
      try {
        return await read(database);
      } finally {
        await database.close();
      }
    },
    cleanup: () => Promise.resolve(),
  };
}

/** Transactions committed and rolled back in database `name` so far. */
async function transactions(root: Kysely<unknown>, name: string): Promise<number> {
  await sql`SELECT pg_stat_clear_snapshot()`.execute(root);
  const { rows } = await sql<{ total: string }>`
    SELECT (xact_commit + xact_rollback)::text AS total
    FROM pg_stat_database WHERE datname = ${name}`.execute(root);
  return Number(rows[0]?.total ?? Number.NaN);
}

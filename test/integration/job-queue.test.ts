import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import { sleep } from '../../src/util/sleep.js';
import {
  createWorkersTable,
  findJobStateCounts,
  findWorkToShare,
  upsertWorkerHeartbeat,
} from '../../src/db/repositories/job-queue-repository.js';
import { FairShare } from '../../src/jobs/fair-share.js';
import { runWorkerLoop } from '../../src/jobs/worker-loop.js';
import { createLogger } from '../../src/util/logger.js';
import type { StreamName } from '../../src/domain/streams.js';
import type { JobQueue } from '../../src/jobs/job-queue.js';
import { jobSchemaName } from '../../src/jobs/job-settings.js';
import {
  ACCOUNT_JOBS_QUEUE,
  installJobSchema,
  openPgBossQueue,
} from '../../src/jobs/pg-boss-queue.js';
import { PgBoss } from 'pg-boss';
import { createTestDatabase, harnessTarget, type TestDatabase } from '../support/test-database.js';
import { STREAMS } from '../../src/sync/stream-registry.js';

const STREAM_NAMES = STREAMS.map((stream) => stream.name);

const opened: TestDatabase[] = [];
afterEach(async () => {
  for (const test of opened.splice(0)) {
    await sql`DROP SCHEMA IF EXISTS ${sql.id(jobSchemaName(test.database.schema))} CASCADE`.execute(
      test.database.root,
    );
    await test.close();
  }
});

const target = harnessTarget();

describe.skipIf(target.kind !== 'postgres')('the pg-boss job queue', () => {
  const url = target.kind === 'postgres' ? target.url : '';

  /** A test database of its own with the job schema installed (dropped after the test). */
  async function openJobSchema(): Promise<{ test: TestDatabase; jobSchema: string }> {
    const test = await createTestDatabase();
    opened.push(test);
    const jobSchema = jobSchemaName(test.database.schema);
    await installJobSchema({
      connectionString: url,
      schema: jobSchema,
      database: test.database,
      onError: () => undefined,
      streams: STREAM_NAMES,
    });
    return { test, jobSchema };
  }

  async function openQueue(
    test: Pick<TestDatabase, 'database'>,
    options: { connectionString?: string; supervise?: boolean } = {},
  ): Promise<JobQueue> {
    return openPgBossQueue({
      connectionString: options.connectionString ?? url,
      schema: jobSchemaName(test.database.schema),
      database: test.database,
      leaseSeconds: 30,
      retryLimit: 0,
      retryDelaySeconds: 1,
      maxConnections: 2,
      supervise: options.supervise ?? false,
      onError: () => undefined,
      streams: STREAM_NAMES,
    });
  }

  it("four processes enqueuing jobs of the same twenty accounts at once: every job kept, in its account's group", async () => {
    const { test, jobSchema } = await openJobSchema();
    const accounts = Array.from(
      { length: 20 },
      (_, index) => `MAQUEUE${String(index).padStart(2, '0')}`,
    );
    const queues = await Promise.all([0, 1, 2, 3].map(() => openQueue(test)));
    await enqueueEachAccountFromEach(queues, accounts, 5, 'trunk_calls');
    const counts = await findJobStateCounts(
      test.database.root,
      jobSchema,
      ACCOUNT_JOBS_QUEUE,
      accounts,
    );
    expect(counts.map((row) => [row.account, row.state, row.count]).sort()).toEqual(
      accounts.map((account) => [account, 'created', 4]).sort(),
    );
  }, 60_000);

  it('workers starting while a backfill enqueues: no deadlock, not even one pg-boss swallows', async () => {
    // pg-boss creates a queue of its own when a process that keeps schedules starts, and ignores
    // its failure: a deadlock there shows only in the database's statistics. A database of its
    // own, then, so that those count this test alone.
    const admin = await openDatabase({ url, dataDir: '', schema: 'public' }, { maxConnections: 1 });
    const name = `telesync_jobq_${randomBytes(4).toString('hex')}`;
    await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.root);
    const ownUrl = withDatabaseName(url, name);
    const database = await openDatabase(
      { url: ownUrl, dataDir: '', schema: `t_${randomBytes(6).toString('hex')}` },
      { maxConnections: 4 },
    );
    let closed = false;
    const closeDatabase = async (): Promise<void> => {
      if (!closed) await database.close();
      closed = true;
    };
    try {
      const accounts = Array.from({ length: 20 }, (_, index) => `MASTART${index}`);
      for (let round = 0; round < 3; round++) {
        await sql`DROP SCHEMA IF EXISTS ${sql.id(jobSchemaName(database.schema))} CASCADE`.execute(
          database.root,
        );
        await installJobSchema({
          connectionString: ownUrl,
          schema: jobSchemaName(database.schema),
          database,
          onError: () => undefined,
          streams: STREAM_NAMES,
        });
        const opening = [0, 1, 2, 3].map((index) =>
          openQueue({ database }, { connectionString: ownUrl, supervise: index % 2 === 0 }),
        );
        const queues = await Promise.all(opening);
        await enqueueEachAccountFromEach(queues, accounts, 7, 'endpoints');
      }
      await closeDatabase();
      // A backend reports its statistics when it ends: wait for the closed pools' backends to go.
      expect(await deadlocksOnceIdle(admin.root, name)).toBe(0);
    } finally {
      await closeDatabase();
      await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.root);
      await admin.close();
    }
  }, 120_000);

  it('counts as work a job due now or active, not a retry still in its backoff', async () => {
    const { test, jobSchema } = await openJobSchema();
    const accounts = ['MADUE0', 'MADUE1', 'MADUE2', 'MAIDLE3'];
    const queue = await openQueue(test);
    try {
      await queue.enqueue(
        accounts
          .slice(0, 3)
          .map((accountId) => ({ kind: 'sync' as const, accountId, stream: 'endpoints' })),
      );
      const taken = await queue.take();
      expect(taken?.job.accountId).toBe('MADUE0');
      // MADUE2's job waits for a retry an hour away, as after a failure with backoff.
      await sql`UPDATE ${sql.id(jobSchema, 'job')} SET state = 'retry',
          start_after = now() + interval '1 hour'
        WHERE name = ${ACCOUNT_JOBS_QUEUE} AND group_id = 'MADUE2'`.execute(test.database.root);
      await createWorkersTable(test.database.root, jobSchema);
      await upsertWorkerHeartbeat(test.database.root, jobSchema, {
        worker_id: 'w',
        host: 'test',
        pid: 1,
        concurrency: 4,
        in_hand: 1,
        queues: accounts,
      });
      expect(
        await findWorkToShare(test.database.root, jobSchema, ACCOUNT_JOBS_QUEUE, accounts, 30),
      ).toEqual({ accountsWithWork: 2, liveWorkers: 1 });
    } finally {
      await queue.stop();
    }
  }, 60_000);

  it('two workers share ten accounts five and five, though each could hold all ten', async () => {
    const { test, jobSchema } = await openJobSchema();
    const accounts = Array.from({ length: 10 }, (_, index) => `MASHARE${index}`);
    const queues = [await openQueue(test), await openQueue(test)];
    await queues[0]!.enqueue(
      accounts.map((accountId) => ({ kind: 'sync' as const, accountId, stream: 'endpoints' })),
    );
    await createWorkersTable(test.database.root, jobSchema);
    const log = createLogger({ level: 'silent', secrets: [], pretty: false });
    const stop = new AbortController();
    const releases: (() => void)[] = [];
    const held = [new Set<string>(), new Set<string>()];
    // Both workers are live (their heartbeats are in) before either takes a job; the first to
    // poll takes its share, the other the rest.
    for (const index of [0, 1])
      await upsertWorkerHeartbeat(test.database.root, jobSchema, {
        worker_id: `worker-${index}`,
        host: 'test',
        pid: index,
        concurrency: 10,
        in_hand: 0,
        queues: accounts,
      });
    const startWorker = (index: number) => {
      const share = new FairShare(
        () => findWorkToShare(test.database.root, jobSchema, ACCOUNT_JOBS_QUEUE, accounts, 30),
        { cacheMs: 0, now: () => Date.now() },
      );
      const queue = queues[index]!;
      return runWorkerLoop({
        queue,
        concurrency: 10,
        fairShare: () => share.current(),
        pollMs: 50,
        signal: stop.signal,
        log,
        handle: async (taken) => {
          held[index]!.add(taken.job.accountId);
          await new Promise<void>((resolve) => releases.push(resolve));
          await queue.complete(taken);
        },
      });
    };
    const loops = [startWorker(0), startWorker(1)];
    try {
      for (let waited = 0; held[0]!.size + held[1]!.size < 10 && waited < 10_000; waited += 50)
        await sleep(50);
      expect([held[0]!.size, held[1]!.size]).toEqual([5, 5]);
      expect(new Set([...held[0]!, ...held[1]!]).size).toBe(10);
    } finally {
      stop.abort();
      for (const release of releases) release();
      await Promise.all(loops);
      await Promise.all(queues.map((queue) => queue.stop()));
    }
  }, 60_000);

  it('a workers table from before workers reported their queues gains the column', async () => {
    const { test, jobSchema } = await openJobSchema();
    const table = sql.id(jobSchema, 'telesync_workers');
    await sql`DROP TABLE IF EXISTS ${table}`.execute(test.database.root);
    await sql`CREATE TABLE ${table} (worker_id text PRIMARY KEY, host text NOT NULL,
        pid integer NOT NULL, concurrency integer NOT NULL, in_hand integer NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now())`.execute(test.database.root);
    await sql`INSERT INTO ${table} (worker_id, host, pid, concurrency, in_hand)
        VALUES ('older-version', 'test', 2, 8, 0)`.execute(test.database.root);
    await createWorkersTable(test.database.root, jobSchema);
    await createWorkersTable(test.database.root, jobSchema);
    const { rows } = await sql<{ worker_id: string; queues: string[] }>`
        SELECT worker_id, queues FROM ${table}`.execute(test.database.root);
    expect(rows).toEqual([{ worker_id: 'older-version', queues: [] }]);
  }, 60_000);

  it('workers share only the accounts they have in common', async () => {
    const { test, jobSchema } = await openJobSchema();
    const accounts = Array.from({ length: 8 }, (_, index) => `MAOWN${index}`);
    const queue = await openQueue(test);
    try {
      await queue.enqueue(
        accounts.map((accountId) => ({ kind: 'sync' as const, accountId, stream: 'endpoints' })),
      );
      await createWorkersTable(test.database.root, jobSchema);
      const heartbeat = (workerId: string, served: readonly string[]) =>
        upsertWorkerHeartbeat(test.database.root, jobSchema, {
          worker_id: workerId,
          host: 'test',
          pid: 1,
          concurrency: 8,
          in_hand: 0,
          queues: served,
        });
      const shareOf = (served: readonly string[]) =>
        findWorkToShare(test.database.root, jobSchema, ACCOUNT_JOBS_QUEUE, served, 30);
      // One worker per half of the accounts (each machine configured with its own): neither can
      // help the other, so each takes all four of its own.
      const [first, second] = [accounts.slice(0, 4), accounts.slice(4)];
      await heartbeat('first-half', first);
      await heartbeat('second-half', second);
      expect(await shareOf(first)).toEqual({ accountsWithWork: 4, liveWorkers: 1 });
      expect(await shareOf(second)).toEqual({ accountsWithWork: 4, liveWorkers: 1 });
      // A worker that serves every account shares with both; one from before workers reported
      // their queues counts as serving any.
      await heartbeat('every-account', accounts);
      await sql`INSERT INTO ${sql.id(jobSchema, 'telesync_workers')}
          (worker_id, host, pid, concurrency, in_hand)
        VALUES ('older-version', 'test', 2, 8, 0)`.execute(test.database.root);
      expect(await shareOf(first)).toEqual({ accountsWithWork: 4, liveWorkers: 3 });
      expect(await shareOf(accounts)).toEqual({ accountsWithWork: 8, liveWorkers: 4 });
      // A worker whose accounts have no work is not counted by those whose accounts have some.
      await heartbeat('idle-accounts', ['MAOWNIDLE']);
      expect(await shareOf(accounts)).toEqual({ accountsWithWork: 8, liveWorkers: 4 });
    } finally {
      await queue.stop();
    }
  }, 60_000);
  it('fails a malformed job at once with the reason, and gives the account its next job', async () => {
    const { test, jobSchema } = await openJobSchema();
    const queue = await openQueue(test);
    const boss = new PgBoss({ connectionString: url, schema: jobSchema, supervise: false });
    await boss.start();
    try {
      // Rows no telesync enqueues: written straight into the queue, in the account's group.
      await boss.insert(ACCOUNT_JOBS_QUEUE, [
        { group: { id: 'MABAD' }, priority: 20 },
        {
          data: { kind: 'sync', accountId: 'MABAD', stream: 'no_such_stream' },
          group: { id: 'MABAD' },
          priority: 20,
        },
        {
          data: {
            kind: 'backfill-window',
            accountId: 'MABAD',
            start: '2026-02-30T00:00:00Z',
            end: '2026-03-02T00:00:00Z',
            backfillId: 'b',
          },
          group: { id: 'MABAD' },
          priority: 20,
        },
      ]);
      await queue.enqueue([{ kind: 'sync', accountId: 'MABAD', stream: 'endpoints' }]);
      const taken = await queue.take();
      expect(taken?.job).toEqual({ kind: 'sync', accountId: 'MABAD', stream: 'endpoints' });
      const { rows } = await sql<{ state: string; message: string | null }>`
        SELECT state::text AS state, output->>'message' AS message FROM ${sql.id(jobSchema, 'job')}
        WHERE name = ${ACCOUNT_JOBS_QUEUE} AND state::text <> 'active'
        ORDER BY created_on, id`.execute(test.database.root);
      expect(rows.map((row) => row.state)).toEqual(['failed', 'failed', 'failed']);
      expect(rows.map((row) => row.message).sort()).toEqual([
        'backfill job of MABAD has a bad window: start "2026-02-30T00:00:00Z", end "2026-03-02T00:00:00Z"',
        'job data is null, not an object',
        'sync job of MABAD names an unknown stream: "no_such_stream"',
      ]);
    } finally {
      await boss.stop({ graceful: false });
      await queue.stop();
    }
  }, 60_000);

  it('a worker leaves the jobs of accounts it does not serve to the workers that do', async () => {
    const { test, jobSchema } = await openJobSchema();
    const queue = await openPgBossQueue({
      connectionString: url,
      schema: jobSchema,
      database: test.database,
      leaseSeconds: 30,
      retryLimit: 0,
      retryDelaySeconds: 1,
      maxConnections: 2,
      supervise: false,
      onError: () => undefined,
      streams: STREAM_NAMES,
      serves: (accountId) => accountId === 'MAMINE',
    });
    try {
      await queue.enqueue([
        { kind: 'sync', accountId: 'MATHEIRS', stream: 'endpoints' },
        { kind: 'sync', accountId: 'MAMINE', stream: 'endpoints' },
      ]);
      expect((await queue.take())?.job.accountId).toBe('MAMINE');
      expect(await queue.take()).toBeUndefined();
      const counts = await findJobStateCounts(test.database.root, jobSchema, ACCOUNT_JOBS_QUEUE, [
        'MATHEIRS',
      ]);
      expect(counts.filter((row) => row.state === 'created')).toEqual([
        { account: 'MATHEIRS', state: 'created', count: 1 },
      ]);
    } finally {
      await queue.stop();
    }
  }, 60_000);

  it('a job in hand renews its lease, sees a sync of its account waiting, and its settling is told', async () => {
    const { test, jobSchema } = await openJobSchema();
    const worker = await openQueue(test, { supervise: true });
    const producer = await openQueue(test);
    const stop = new AbortController();
    try {
      await producer.enqueue([
        {
          kind: 'backfill-window',
          accountId: 'MALEASE',
          start: '2026-11-01T00:00:00Z',
          end: '2026-11-03T00:00:00Z',
          backfillId: 'b1',
        },
      ]);
      const taken = await worker.take();
      expect(taken?.job.accountId).toBe('MALEASE');
      if (taken === undefined) return;
      // A lease of 30 s renewed by heartbeats, within an hour's expiry.
      expect(taken.renewSeconds).toBe(30);
      expect(taken.expiresAtMs - taken.leaseEndsAtMs).toBeGreaterThan(3_000_000);
      const heartbeat = async () =>
        (
          await sql<{ at: number }>`
            SELECT (extract(epoch FROM heartbeat_on) * 1000)::float8 AS at
            FROM ${sql.id(jobSchema, 'job')} WHERE id = ${taken.id}::uuid`.execute(
            test.database.root,
          )
        ).rows[0]?.at;
      const before = await heartbeat();
      await sleep(20);
      expect(await worker.extend(taken)).toBe(true);
      expect(await heartbeat()).toBeGreaterThan(before ?? Number.POSITIVE_INFINITY);

      // Only a job of its own account with a higher priority goes ahead of it.
      await producer.enqueue([{ kind: 'sync', accountId: 'MAOTHER', stream: 'endpoints' }]);
      expect(await worker.hasWorkAhead(taken)).toBe(false);
      await producer.enqueue([{ kind: 'sync', accountId: 'MALEASE', stream: 'endpoints' }]);
      expect(await worker.hasWorkAhead(taken)).toBe(true);

      // `backfill --queue --wait` hears the job settle (it would otherwise wait the 2 minutes).
      await producer.waitForSettled(0, stop.signal);
      const told = producer.waitForSettled(120_000, stop.signal);
      await worker.complete(taken);
      await told;
      expect(await worker.extend(taken)).toBe(false);
    } finally {
      stop.abort();
      await producer.stop();
      await worker.stop();
    }
  }, 60_000);

  it('wakes an idle worker within a second of a job being enqueued, not at its next poll', async () => {
    const { test } = await openJobSchema();
    const worker = await openQueue(test, { supervise: true });
    const producer = await openQueue(test);
    const stop = new AbortController();
    try {
      expect(await worker.take()).toBeUndefined();
      const waited = worker.waitForWork(60_000, stop.signal).then(() => Date.now());
      const sent = Date.now();
      await producer.enqueue([{ kind: 'sync', accountId: 'MAWAKE', stream: 'endpoints' }]);
      expect((await waited) - sent).toBeLessThan(1_000);
      expect((await worker.take())?.job.accountId).toBe('MAWAKE');
    } finally {
      stop.abort();
      await producer.stop();
      await worker.stop();
    }
  }, 60_000);

  it('makes a schema of pg-boss 10 anew, carrying over the jobs not yet done', async () => {
    const test = await createTestDatabase();
    opened.push(test);
    const jobSchema = jobSchemaName(test.database.schema);
    // The part of a pg-boss 10 schema that telesync reads: its version (24) and its jobs.
    const root = test.database.root;
    await sql`CREATE SCHEMA ${sql.id(jobSchema)}`.execute(root);
    await sql`CREATE TABLE ${sql.id(jobSchema, 'version')} (version int)`.execute(root);
    await sql`INSERT INTO ${sql.id(jobSchema, 'version')} VALUES (24)`.execute(root);
    await sql`CREATE TABLE ${sql.id(jobSchema, 'job')} (id uuid DEFAULT gen_random_uuid(),
        name text, state text, data jsonb, created_on timestamptz DEFAULT now())`.execute(root);
    const job = (accountId: string, stream: string) =>
      JSON.stringify({ kind: 'sync', accountId, stream });
    await sql`INSERT INTO ${sql.id(jobSchema, 'job')} (name, state, data) VALUES
        ('telesync-account-MAOLD1', 'created', ${job('MAOLD1', 'endpoints')}::jsonb),
        ('telesync-account-MAOLD1', 'completed', ${job('MAOLD1', 'caller_ids')}::jsonb),
        ('telesync-account-MAOLD2', 'retry', ${job('MAOLD2', 'messages')}::jsonb),
        ('telesync-account-MAOLD2', 'created', ${job('MAOLD2', 'no_such_stream')}::jsonb)`.execute(
      root,
    );
    const installed = await installJobSchema({
      connectionString: url,
      schema: jobSchema,
      database: test.database,
      onError: () => undefined,
      streams: STREAM_NAMES,
    });
    expect(installed).toEqual({ remade: true, carriedOver: 2 });
    expect(
      (await findJobStateCounts(root, jobSchema, ACCOUNT_JOBS_QUEUE, ['MAOLD1', 'MAOLD2']))
        .map((row) => [row.account, row.state, row.count])
        .sort(),
    ).toEqual([
      ['MAOLD1', 'created', 1],
      ['MAOLD2', 'created', 1],
    ]);
    // Once made, it is current: installing again changes nothing.
    expect(
      await installJobSchema({
        connectionString: url,
        schema: jobSchema,
        database: test.database,
        onError: () => undefined,
        streams: STREAM_NAMES,
      }),
    ).toEqual({ remade: false, carriedOver: 0 });
  }, 60_000);
});

/**
 * Every queue enqueues a sync job for every account, all at once, each going through the accounts
 * from a different start (`stride` apart), as workers do; then every queue stops.
 */
async function enqueueEachAccountFromEach(
  queues: readonly JobQueue[],
  accounts: readonly string[],
  stride: number,
  stream: StreamName,
): Promise<void> {
  try {
    await Promise.all(
      queues.map((queue, index) =>
        queue.enqueue(
          accounts.map((_, step) => ({
            kind: 'sync' as const,
            accountId: accounts[(step + index * stride) % accounts.length]!,
            stream,
          })),
        ),
      ),
    );
  } finally {
    await Promise.all(queues.map((queue) => queue.stop()));
  }
}

function withDatabaseName(connectionString: string, name: string): string {
  const parsed = new URL(connectionString);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function deadlocksOnceIdle(root: Kysely<unknown>, name: string): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const { rows } = await sql<{ connected: number }>`
      SELECT count(*)::int AS connected FROM pg_stat_activity WHERE datname = ${name}`.execute(
      root,
    );
    if (rows[0]?.connected === 0) break;
    await sleep(100);
  }
  await sql`SELECT pg_stat_clear_snapshot()`.execute(root);
  const { rows } = await sql<{ deadlocks: number }>`
    SELECT deadlocks::int AS deadlocks FROM pg_stat_database WHERE datname = ${name}`.execute(root);
  return rows[0]?.deadlocks ?? -1;
}

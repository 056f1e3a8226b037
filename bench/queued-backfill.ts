/**
 * Queued backfill against one process: many small accounts, each held by the simulator
 * to the service's 300 requests per 5 s, backfilled for 90 days (a) by one `telesync backfill` at
 * its best account concurrency and (b) by `backfill --queue --wait` with two `telesync worker`s,
 * in one run, on one PostgreSQL (a database of its own, so its statistics count this run alone).
 * Also measured: what the two workers cost PostgreSQL while idle (transactions a second over 20 s)
 * and, per account, requests, transactions and CPU of the queued run. Every account's rows are
 * checked against the other run's, and no account may go over its budget.
 *
 *   npx tsx bench/queued-backfill.ts [--accounts 300] [--calls 270] [--days 90] [--results F.json]
 *
 * Targets: the queued run within 1.5× the wall time of the one process; idle ≤ 10 transactions/s.
 * Writes bench/results/queued-backfill.json.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql, type Kysely } from 'kysely';
import { openDatabase } from '../src/db/connect.js';
import { STREAMS } from '../src/sync/stream-registry.js';
import { scheduleVariable } from '../src/config/config-defaults.js';
import { startSimulator } from '../src/simulator/simulator-server.js';
import { sleep } from '../src/util/sleep.js';
import { findJobStateCounts } from '../src/db/repositories/job-queue-repository.js';
import { ACCOUNT_JOBS_QUEUE, openPgBossQueue } from '../src/jobs/pg-boss-queue.js';
import { jobSchemaName } from '../src/jobs/job-settings.js';
import { DEFAULT_DATABASE_URL } from './support/bench-database.js';
import { baseChildEnv, createScratchDir, RESULTS_DIR, TELESYNC_COMMAND } from './support/paths.js';
import { jsonLines } from './support/telesync-command.js';
import { oracleCalls } from '../test/support/simulator-oracle.js';

const { values } = parseArgs({
  options: {
    accounts: { type: 'string', default: '300' },
    calls: { type: 'string', default: '270' },
    days: { type: 'string', default: '90' },
    'one-process-concurrency': { type: 'string', default: '64' },
    'worker-concurrency': { type: 'string', default: '32' },
    results: { type: 'string', default: 'queued-backfill.json' },
  },
});
const ACCOUNTS = Number(values.accounts);
const CALLS = Number(values.calls);
const DAYS = Number(values.days);
const WALL_RATIO_TARGET = 1.5;
const IDLE_TARGET = 10;
const IDLE_MEASURE_MS = 20_000;

interface Measured {
  wallSeconds: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the telesync command to its end. */
function runCommand(args: readonly string[], env: Record<string, string>): Promise<Measured> {
  const started = process.hrtime.bigint();
  const child = spawn(TELESYNC_COMMAND, args, { env, cwd: scratch.path });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
      resolve({ wallSeconds, code, stdout, stderr });
    });
  });
}

/** CPU seconds (user + system) of a running process, from /proc. */
async function cpuOf(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(stat[11]) + Number(stat[12])) / 100;
}

async function databaseCounters(
  root: Kysely<unknown>,
  name: string,
): Promise<{ transactions: number }> {
  await sql`SELECT pg_stat_clear_snapshot()`.execute(root);
  const { rows } = await sql<{ total: string }>`
    SELECT (xact_commit + xact_rollback)::text AS total
    FROM pg_stat_database WHERE datname = ${name}`.execute(root);
  return { transactions: Number(rows[0]?.total ?? Number.NaN) };
}

/**
 * CPU seconds of the PostgreSQL backends connected to database `name`, by pid (the server may be
 * shared with other work: only this database's sessions are counted; a session that ends between
 * two readings is missed, which the workers' pooled sessions do not).
 */
async function backendCpu(root: Kysely<unknown>, name: string): Promise<Map<number, number>> {
  const { rows } = await sql<{ pid: number }>`
    SELECT pid FROM pg_stat_activity WHERE datname = ${name}`.execute(root);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      cpu.set(pid, await cpuOf(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return cpu;
}

function cpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

const scratch = createScratchDir('queued-backfill');
const accounts = Array.from({ length: ACCOUNTS }, (_, index) => ({
  authId: `MAQB${String(index + 1).padStart(4, '0')}`,
  authToken: `tok_queued_backfill_${index + 1}`,
}));
const configFile = join(scratch.path, 'telesync.json');
writeFileSync(
  configFile,
  JSON.stringify({
    accounts: accounts.map((a) => ({ auth_id: a.authId, auth_token: a.authToken })),
  }),
);

const adminUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
const admin = await openDatabase(
  { url: adminUrl, dataDir: '', schema: 'public' },
  { maxConnections: 1 },
);
const dbName = `telesync_bench_queue_${randomBytes(4).toString('hex')}`;
await sql`CREATE DATABASE ${sql.id(dbName)}`.execute(admin.root);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
const sim = await startSimulator({
  seed: 'bench-queued-backfill',
  calls: CALLS,
  accounts,
  rateLimit: '300/5s',
});

const envOf = (schema: string, extra: Record<string, string> = {}): Record<string, string> => ({
  ...baseChildEnv(),
  DATABASE_URL: url.toString(),
  TELESYNC_SCHEMA: schema,
  TELESYNC_CONFIG: configFile,
  TELESYNC_BASE_URL: sim.url,
  TELESYNC_MAX_RPS: '55',
  TELESYNC_HTTP_PORT: '0',
  TELESYNC_LOG_LEVEL: 'info',
  ...Object.fromEntries(
    STREAMS.map((s) => s.name).map((stream) => [scheduleVariable(stream), 'off']),
  ),
  ...extra,
});

const report: Record<string, unknown> = {
  benchmark: 'queued-backfill',
  date: new Date().toISOString(),
  machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}`,
  accounts: ACCOUNTS,
  callsPerAccount90Days: CALLS,
  days: DAYS,
};
const workers: ReturnType<typeof spawn>[] = [];
const overBudget = (stats: ReturnType<typeof sim.stats>): string[] =>
  Object.entries(stats.accounts)
    .filter(([, load]) => load.maxPerWindow > 300)
    .map(([id]) => id);
try {
  // Two workers, measured idle on a database nothing else has written to yet (autovacuum after a
  // bulk load would count in its statistics); they stay idle through the one process's run.
  const queued = envOf('bench_queued', {
    TELESYNC_ACCOUNT_CONCURRENCY: String(values['worker-concurrency']),
  });
  const migratedQueued = await runCommand(['migrate'], queued);
  if (migratedQueued.code !== 0) throw new Error(`migrate failed: ${migratedQueued.stderr}`);
  const logs: string[] = ['', ''];
  for (let index = 0; index < 2; index++) {
    const worker = spawn(TELESYNC_COMMAND, ['worker'], { env: queued, cwd: scratch.path });
    worker.stderr.on('data', (chunk: Buffer) => {
      logs[index] = (logs[index]! + chunk.toString()).slice(-200_000);
    });
    workers.push(worker);
  }
  for (let waited = 0; !logs.every((log) => /worker started/.test(log)); waited += 100) {
    if (waited > 60_000) throw new Error(`workers did not start: ${logs.join('\n')}`);
    await sleep(100);
  }
  await sleep(3_000);
  const idleBefore = await databaseCounters(admin.root, dbName);
  const idleCpuBefore = await backendCpu(admin.root, dbName);
  const idleStart = Date.now();
  await sleep(IDLE_MEASURE_MS);
  const idleSeconds = (Date.now() - idleStart) / 1_000;
  const idleTransactions =
    ((await databaseCounters(admin.root, dbName)).transactions - idleBefore.transactions) /
    idleSeconds;
  const idlePostgresCpu =
    cpuSince(idleCpuBefore, await backendCpu(admin.root, dbName)) / idleSeconds;

  // (a) One process, its best account concurrency (the workers idle meanwhile).
  const one = envOf('bench_one', {
    TELESYNC_ACCOUNT_CONCURRENCY: String(values['one-process-concurrency']),
  });
  const migratedOne = await runCommand(['migrate'], one);
  if (migratedOne.code !== 0) throw new Error(`migrate failed: ${migratedOne.stderr}`);
  sim.resetStats();
  const oneRun = await runCommand(['backfill', '--days', String(DAYS), '--json'], one);
  if (oneRun.code !== 0) throw new Error(`one-process backfill failed: ${oneRun.stderr}`);
  const oneStats = sim.stats();

  // (b) The queued backfill through the two workers.
  sim.resetStats();
  const workerCpuBefore = await Promise.all(workers.map((w) => cpuOf(w.pid!)));
  const pgCpuBefore = await backendCpu(admin.root, dbName);
  const xactBefore = await databaseCounters(admin.root, dbName);
  const queuedRun = await runCommand(
    ['backfill', '--days', String(DAYS), '--queue', '--wait', '--json'],
    queued,
  );
  if (queuedRun.code !== 0) throw new Error(`queued backfill failed: ${queuedRun.stderr}`);
  const workerCpu =
    (await Promise.all(workers.map((w) => cpuOf(w.pid!)))).reduce((a, b) => a + b, 0) -
    workerCpuBefore.reduce((a, b) => a + b, 0);
  const pgCpu = cpuSince(pgCpuBefore, await backendCpu(admin.root, dbName));
  const xact = (await databaseCounters(admin.root, dbName)).transactions - xactBefore.transactions;
  const queuedStats = sim.stats();

  // One scheduled tick of each stream for every account, a stream at a time, through the same
  // workers: what one account costs per scheduled run of each stream.
  const scheduled: Record<string, unknown> = {};
  const queuedDb = await openDatabase(
    { url: url.toString(), dataDir: '', schema: 'bench_queued' },
    { maxConnections: 2 },
  );
  const producer = await openPgBossQueue({
    connectionString: url.toString(),
    schema: jobSchemaName('bench_queued'),
    database: queuedDb,
    leaseSeconds: 60,
    retryLimit: 2,
    retryDelaySeconds: 5,
    maxConnections: 2,
    supervise: false,
    onError: () => undefined,
    streams: STREAMS.map((s) => s.name),
  });
  try {
    for (const stream of STREAMS.map((s) => s.name)) {
      sim.resetStats();
      const cpuBefore = await Promise.all(workers.map((w) => cpuOf(w.pid!)));
      const pgBefore = await backendCpu(admin.root, dbName);
      const xBefore = (await databaseCounters(admin.root, dbName)).transactions;
      const started = Date.now();
      await producer.enqueue(
        accounts.map((account) => ({ kind: 'sync', accountId: account.authId, stream }) as const),
      );
      for (;;) {
        await sleep(250);
        const counts = await findJobStateCounts(
          queuedDb.root,
          jobSchemaName('bench_queued'),
          ACCOUNT_JOBS_QUEUE,
          accounts.map((account) => account.authId),
        );
        if (!counts.some((row) => ['created', 'retry', 'active'].includes(row.state))) break;
      }
      const seconds = (Date.now() - started) / 1_000;
      const cpu =
        (await Promise.all(workers.map((w) => cpuOf(w.pid!)))).reduce((a, b) => a + b, 0) -
        cpuBefore.reduce((a, b) => a + b, 0);
      const pg = cpuSince(pgBefore, await backendCpu(admin.root, dbName));
      const x = (await databaseCounters(admin.root, dbName)).transactions - xBefore;
      const stats = sim.stats();
      scheduled[stream] = {
        wallSeconds: round(seconds),
        perAccount: {
          requests: round(stats.requests.total / ACCOUNTS),
          transactions: round(x / ACCOUNTS),
          workerCpuMs: round((cpu / ACCOUNTS) * 1_000),
          postgresCpuMs: round((pg / ACCOUNTS) * 1_000),
        },
        overBudget: overBudget(stats),
        rateLimited: stats.rateLimited,
      };
    }
  } finally {
    await producer.stop();
    await queuedDb.close();
  }

  // Every account's rows exactly the service's over the range each run covered (read from the
  // simulator in-process, outside the accounts' budgets), none over budget.
  const verify = await openDatabase(
    { url: url.toString(), dataDir: '', schema: 'bench_one' },
    { maxConnections: 1 },
  );
  const notExact: Record<string, string[]> = { oneProcess: [], queued: [] };
  const mismatches: Record<string, unknown>[] = [];
  let rowsChecked = 0;
  try {
    for (const [label, schema, stdout] of [
      ['oneProcess', 'bench_one', oneRun.stdout],
      ['queued', 'bench_queued', queuedRun.stdout],
    ] as const) {
      const line = jsonLines(stdout).find((json) => typeof json['covered_from'] === 'string');
      if (line === undefined) throw new Error(`${label}: no covered range in its output`);
      const [from, to] = [String(line['covered_from']), String(line['covered_to'])];
      const { rows } = await sql<{
        account_id: string;
        call_uuid: string;
        total_amount: string;
        end_time: string;
      }>`
        SELECT account_id, call_uuid, total_amount::text AS total_amount, end_time::text AS end_time
        FROM ${sql.id(schema, 'trunk_calls')}
        WHERE end_time >= ${from}::timestamptz AND end_time < ${to}::timestamptz
        ORDER BY account_id, call_uuid`.execute(verify.root);
      const stored = new Map<string, string[]>();
      for (const row of rows)
        stored.set(row.account_id, [
          ...(stored.get(row.account_id) ?? []),
          `${row.call_uuid} ${row.total_amount}`,
        ]);
      for (const [index, account] of accounts.entries()) {
        const oracle = oracleCalls(sim, Date.parse(from), Date.parse(to), index);
        const expected = oracle.map((call) => `${call.call_uuid} ${call.total_amount}`).sort();
        const mine = (stored.get(account.authId) ?? []).sort();
        rowsChecked += mine.length;
        if (mine.join('\n') !== expected.join('\n')) {
          notExact[label]!.push(account.authId);
          const endOf = new Map(oracle.map((call) => [call.call_uuid, call.end_time]));
          const storedEnd = new Map(
            rows
              .filter((row) => row.account_id === account.authId)
              .map((row) => [row.call_uuid, row.end_time]),
          );
          mismatches.push({
            run: label,
            account: account.authId,
            from,
            to,
            missing: expected
              .filter((key) => !mine.includes(key))
              .map((key) => `${key} ${endOf.get(key.split(' ')[0]!) ?? ''}`),
            extra: mine
              .filter((key) => !expected.includes(key))
              .map((key) => `${key} ${storedEnd.get(key.split(' ')[0]!) ?? ''}`),
          });
        }
      }
    }
  } finally {
    await verify.close();
  }
  const ratio = queuedRun.wallSeconds / oneRun.wallSeconds;
  Object.assign(report, {
    oneProcess: {
      accountConcurrency: Number(values['one-process-concurrency']),
      wallSeconds: round(oneRun.wallSeconds),
      requests: oneStats.requests.total,
      rateLimited: oneStats.rateLimited,
      overBudget: overBudget(oneStats),
    },
    queued: {
      workers: 2,
      workerConcurrency: Number(values['worker-concurrency']),
      wallSeconds: round(queuedRun.wallSeconds),
      requests: queuedStats.requests.total,
      rateLimited: queuedStats.rateLimited,
      overBudget: overBudget(queuedStats),
      workerCpuSeconds: round(workerCpu),
      postgresCpuSeconds: round(pgCpu),
      transactions: xact,
      perAccount: {
        requests: round(queuedStats.requests.total / ACCOUNTS),
        transactions: round(xact / ACCOUNTS),
        workerCpuMs: round((workerCpu / ACCOUNTS) * 1_000),
        postgresCpuMs: round((pgCpu / ACCOUNTS) * 1_000),
      },
    },
    idle: {
      transactionsPerSecond: round(idleTransactions),
      postgresCpuPerSecond: round(idlePostgresCpu),
      target: IDLE_TARGET,
      met: idleTransactions <= IDLE_TARGET,
    },
    wallRatio: round(ratio),
    wallRatioTarget: WALL_RATIO_TARGET,
    met: ratio <= WALL_RATIO_TARGET,
    scheduledRunOfEachStream: scheduled,
    rowsChecked,
    accountsNotExact: notExact,
    mismatches,
  });
  for (const worker of workers) worker.kill('SIGTERM');
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))));
} finally {
  for (const worker of workers) worker.kill('SIGKILL');
  await sim.close();
  await sql`DROP DATABASE IF EXISTS ${sql.id(dbName)} WITH (FORCE)`.execute(admin.root);
  await admin.close();
  scratch.remove();
}
writeFileSync(join(RESULTS_DIR, values.results), `${JSON.stringify(report, null, 2)}\n`);
console.log(JSON.stringify(report, null, 2));

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
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
import { startTcpProxy } from '../support/tcp-proxy.js';
import { harnessTarget } from '../support/test-database.js';
import { SCHEDULES_OFF } from '../support/schedules-off.js';

const ACCOUNTS = testAccounts('MA_WORK', 20);

interface QueueReport {
  jobs: { account: string; stream: string; waiting: number; active: number; failed: number }[];
  workers: { pid: number; heartbeat_at: string }[];
}
describe.skipIf(harnessTarget().kind !== 'postgres')(
  'three workers and twenty accounts through the job queue',
  () => {
    const cli = useCliFixture({
      service: () =>
        startSimulator({
          seed: 'e2e-workers',
          calls: 20_000,
          accounts: ACCOUNTS,
          rateLimit: `${SERVICE_BUDGET.requests}/5s`,
        }),
      env: {
        TELESYNC_MAX_RPS: '55',
        TELESYNC_CONCURRENCY: '4',
        TELESYNC_ACCOUNT_CONCURRENCY: '6',
        TELESYNC_JOB_LEASE_SECONDS: '15',
        TELESYNC_JOB_POLL_MS: '200',
        TELESYNC_HTTP_PORT: '0',
        TELESYNC_LOG_LEVEL: 'info',
        ...SCHEDULES_OFF,
      },
    });

    it('a worker killed mid-backfill loses nothing: every account exact, none over budget', async () => {
      const env = cli.envWith({ TELESYNC_CONFIG: writeAccountsConfig(ACCOUNTS) });
      const workers: TelesyncProcess[] = [0, 1, 2].map(() =>
        startTelesync(['worker'], env, { timeoutMs: 470_000 }),
      );
      try {
        const backfill = startTelesync(
          ['backfill', '--days', '10', '--queue', '--wait', '--json'],
          env,
          { timeoutMs: 460_000 },
        );
        // Once a worker has finished a window, kill it in the middle of its next ones (whichever
        // starts first: on a loaded machine the three do not come up in order).
        let killed = -1;
        await waitFor(
          () =>
            (killed = workers.findIndex((worker) => /job completed/.test(worker.stderr()))) >= 0,
          { timeoutMs: 300_000, what: 'a worker to complete a job' },
        );
        workers[killed]!.kill('SIGKILL');
        const killedAtMs = Date.now();
        const survivors = workers.filter((_, index) => index !== killed);

        const done = await backfill.exited;
        expect(done.code, done.stderr).toBe(0);
        // Its jobs came back soon after their 15 s lease (the heartbeat is checked every quarter
        // lease), not after pg-boss's default minute: 20-30 s from the kill, 69 s before.
        expect(Date.now() - killedAtMs).toBeLessThan(50_000);
        const outcome = lastJson(done.stdout);
        expect(outcome).toMatchObject({ status: 'succeeded', accounts: 20, failed_accounts: [] });
        await expectAccountsExact(
          cli.service,
          cli.database,
          String(outcome.covered_from),
          String(outcome.covered_to),
        );
        expectWithinBudget(cli.service);
        // Both survivors worked: accounts went to different workers.
        for (const survivor of survivors) expect(survivor.stderr()).toMatch(/job completed/);

        // status lists the queue: nothing waiting, active or failed, and the live workers.
        const status = await runTelesync(['status', '--json'], env);
        expect(status.code, status.stderr).toBe(0);
        const queue = (JSON.parse(status.stdout) as { queue: QueueReport }).queue;
        expect(queue.jobs.map((row) => row.account).sort()).toEqual(
          ACCOUNTS.map((account) => account.authId).sort(),
        );
        expect(queue.jobs.filter((row) => row.waiting + row.active + row.failed > 0)).toEqual([]);
        const live = queue.workers.map((worker) => worker.pid);
        expect(live).toEqual(expect.arrayContaining(survivors.map((worker) => worker.pid)));

        // SIGTERM drains: each survivor ends on its own, successfully.
        for (const worker of survivors) worker.kill('SIGTERM');
        for (const worker of survivors) {
          const ended = await worker.exited;
          expect(ended.code, ended.stderr.slice(-2_000)).toBe(0);
        }
      } finally {
        for (const worker of workers) worker.kill('SIGKILL');
      }
    }, 480_000);

    it('an account with wrong credentials fails its jobs with backoff and holds up no other', async () => {
      const database = await cli.addDatabase();
      const [good, bad] = [ACCOUNTS[2]!, ACCOUNTS[3]!];
      const env = cli.envFor(database, {
        TELESYNC_CONFIG: writeAccountsConfig([
          good,
          { authId: bad.authId, authToken: 'tok_wrong_for_this_test' },
        ]),
        TELESYNC_JOB_RETRY_LIMIT: '1',
        TELESYNC_JOB_RETRY_DELAY_SECONDS: '1',
      });
      const worker = startTelesync(['worker'], env, { timeoutMs: 200_000 });
      try {
        const done = await runTelesync(
          ['backfill', '--days', '2', '--queue', '--wait', '--json'],
          env,
          { timeoutMs: 180_000 },
        );
        expect(done.code, done.stderr).toBe(1);
        const outcome = lastJson(done.stdout);
        expect(outcome).toMatchObject({ status: 'failed', failed_accounts: [bad.authId] });
        await expectAccountsExact(
          cli.service,
          database,
          String(outcome.covered_from),
          String(outcome.covered_to),
          [good.authId],
        );
        const status = await runTelesync(['status', '--json'], env);
        const queue = (JSON.parse(status.stdout) as { queue: QueueReport }).queue;
        const failed = queue.jobs.filter((row) => row.failed > 0).map((row) => row.account);
        expect(failed).toEqual([bad.authId]);
        // The token never shows, in the worker's log or anywhere else.
        expect(worker.stderr()).not.toContain('tok_wrong_for_this_test');
      } finally {
        worker.kill('SIGKILL');
      }
    }, 240_000);

    it('a worker whose database connections are cut mid-backfill reconnects and finishes the work', async () => {
      const target = harnessTarget();
      if (target.kind !== 'postgres') throw new Error('the proxy needs the PostgreSQL harness');
      const database = await cli.addDatabase();
      const accounts = [ACCOUNTS[4]!, ACCOUNTS[5]!];
      const env = cli.envFor(database, {
        TELESYNC_CONFIG: writeAccountsConfig(accounts),
        TELESYNC_JOB_RETRY_DELAY_SECONDS: '1',
      });
      // The worker reaches PostgreSQL through a proxy that drops every connection at once, as a
      // network blip or a database restart would; the backfill command connects directly.
      const url = new URL(env.DATABASE_URL!);
      const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
      url.host = `127.0.0.1:${proxy.port}`;
      const worker = startTelesync(
        ['worker'],
        { ...env, DATABASE_URL: url.toString() },
        {
          timeoutMs: 200_000,
        },
      );
      try {
        // Cut while idle (its pools and pg-boss's hold connections), then again mid-backfill.
        await waitFor(() => /worker started/.test(worker.stderr()), {
          timeoutMs: 60_000,
          what: 'the worker to start',
        });
        expect(proxy.cut()).toBeGreaterThan(0);
        const backfill = startTelesync(
          ['backfill', '--days', '4', '--queue', '--wait', '--json'],
          env,
          { timeoutMs: 180_000 },
        );
        await waitFor(() => /job completed/.test(worker.stderr()), {
          timeoutMs: 120_000,
          what: 'the worker to complete a job after the first cut',
        });
        proxy.cut();

        const done = await backfill.exited;
        expect(done.code, done.stderr).toBe(0);
        const outcome = lastJson(done.stdout);
        expect(outcome).toMatchObject({ status: 'succeeded', accounts: 2, failed_accounts: [] });
        await expectAccountsExact(
          cli.service,
          database,
          String(outcome.covered_from),
          String(outcome.covered_to),
          accounts.map((account) => account.authId),
        );
        // The same worker did the work: it went on after the cuts, and drains cleanly.
        worker.kill('SIGTERM');
        const ended = await worker.exited;
        expect(ended.code, ended.stderr.slice(-2_000)).toBe(0);
      } finally {
        worker.kill('SIGKILL');
        await proxy.stop();
      }
    }, 240_000);

    it('on the embedded database, `worker` exits 2 and says it needs PostgreSQL', async () => {
      const result = await runTelesync(['worker'], {
        ...cli.env,
        DATABASE_URL: '',
        TELESYNC_DATA_DIR: '/nonexistent-telesync-test',
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/needs PostgreSQL/);
    });
  },
);

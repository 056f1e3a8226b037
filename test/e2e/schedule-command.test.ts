import { sql } from 'kysely';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scheduleVariable } from '../../src/config/load-config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { HealthReport } from '../../src/scheduler/health.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import type { StreamName } from '../../src/domain/streams.js';
import { STREAMS } from '../../src/sync/stream-registry.js';
import { parsePrometheusText, sumOf, type MetricSample } from '../support/prometheus-text.js';
import {
  runTelesync,
  startTelesync,
  type CommandResult,
  type TelesyncProcess,
} from '../support/run-telesync.js';
import { accountEnv, useCliFixture } from '../support/cli-fixture.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { freePort, waitFor } from '../support/telesync-process.js';
import { harnessTarget } from '../support/test-database.js';

const ACCOUNTS = {
  ticks: { authId: 'MA_SCHED_TICKS', authToken: 'tok_sched_ticks_secret' },
  overlap: { authId: 'MA_SCHED_OVERLAP', authToken: 'tok_sched_overlap_secret' },
  stop: { authId: 'MA_SCHED_STOP', authToken: 'tok_sched_stop_secret' },
  health: { authId: 'MA_SCHED_HEALTH', authToken: 'tok_sched_health_secret' },
  offline: { authId: 'MA_SCHED_OFFLINE', authToken: 'tok_sched_offline_secret' },
};
type Account = (typeof ACCOUNTS)[keyof typeof ACCOUNTS];

/** Every stream off: each test turns on the ones it needs. */
const ALL_OFF = Object.fromEntries(
  STREAMS.map((s) => s.name).map((stream) => [scheduleVariable(stream), 'off']),
);

/**
 * One simulator and one database for the file; each test has an account of its own, so their rows
 * stay apart. Not migrated by the fixture: the first check runs `schedule` before the migration.
 */
const cli = useCliFixture({
  service: () =>
    startSimulator({ seed: 'e2e-schedule', calls: 20_000, accounts: Object.values(ACCOUNTS) }),
  account: ACCOUNTS.ticks,
  // Ticks seconds apart need node-cron's seconds field, which telesync takes only when asked.
  env: { TELESYNC_SCHEDULE_TIMEZONE: 'UTC', ...ALL_OFF },
  migrate: false,
});
/** `telesync schedule` on that database before it was migrated. */
let unmigrated: CommandResult;
const processes: TelesyncProcess[] = [];

beforeAll(async () => {
  unmigrated = await runTelesync(
    ['schedule'],
    schedulerEnv(ACCOUNTS.ticks, 0, { TELESYNC_SCHEDULE_TRUNK_CALLS: '*/5 * * * *' }),
  );
  await cli.database.inspect(async (db) => {
    await migrateToLatest(db);
  });
});
afterEach(() => {
  cli.service.setFaults({});
  // A test that failed half-way must not leave its scheduler running.
  for (const running of processes.splice(0)) running.kill('SIGKILL');
});

/** The fixture's environment for `account`, serving /metrics and /healthz on `port` (0: off). */
function schedulerEnv(
  account: Account,
  port: number,
  extra: Record<string, string>,
): Record<string, string> {
  return cli.envWith({ ...accountEnv(account), TELESYNC_HTTP_PORT: String(port), ...extra });
}

/** Starts `telesync schedule` and waits until it says where it listens. */
async function startScheduler(env: Record<string, string>): Promise<TelesyncProcess> {
  const scheduler = startTelesync(['schedule'], env, { timeoutMs: 60_000 });
  processes.push(scheduler);
  await scheduler.waitForStdout(/^Metrics: /m, 20_000);
  return scheduler;
}

async function scrape(port: number): Promise<MetricSample[]> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  return parsePrometheusText(await response.text());
}

async function health(port: number): Promise<{ status: number; report: HealthReport }> {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`);
  return { status: response.status, report: (await response.json()) as HealthReport };
}

/** Sends SIGTERM and returns how the scheduler ended, and how long it took to. */
async function terminate(scheduler: TelesyncProcess) {
  const sent = Date.now();
  scheduler.kill('SIGTERM');
  const result = await scheduler.exited;
  return { ...result, stopMs: Date.now() - sent };
}

interface RunRow {
  id: number;
  stream: string;
  status: string;
  command: string;
  started_at: string;
  finished_at: string | null;
  error: string | null;
  requests: number;
  retries: number;
  records_fetched: number;
  records_upserted: number;
  records_changed: number;
  records_rejected: number;
  load_wait_ms: number;
}

async function syncRuns(account: Account): Promise<RunRow[]> {
  return cli.database.inspect(({ db }) =>
    db
      .selectFrom('sync_runs')
      .where('account_id', '=', account.authId)
      .select([
        'id',
        'stream',
        'status',
        'command',
        'started_at',
        'finished_at',
        'error',
        'requests',
        'retries',
        'records_fetched',
        'records_upserted',
        'records_changed',
        'records_rejected',
        'load_wait_ms',
      ])
      .orderBy('id')
      .execute(),
  );
}

/**
 * A cron that fires every second for `count` seconds, starting at least `leadMs` from now: a
 * handful of ticks, then none for the rest of the minute, so the counts settle and can be compared.
 */
function burstOfTicks(leadMs: number, count: number): { cron: string; lastTickMs: number } {
  const firstMs = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
  const seconds = Array.from({ length: count }, (_, i) =>
    new Date(firstMs + i * 1000).getUTCSeconds(),
  );
  return { cron: `${seconds.join(',')} * * * * *`, lastTickMs: firstMs + (count - 1) * 1000 };
}

describe('telesync schedule', () => {
  it('refuses a bad cron, naming its variable, and an unmigrated database (exit 2)', async () => {
    const base = schedulerEnv(ACCOUNTS.ticks, 0, {});

    const badCron = await runTelesync(['schedule'], {
      ...base,
      TELESYNC_SCHEDULE_TRUNK_CALLS: 'every five minutes',
    });
    expect(badCron.code).toBe(2);
    expect(badCron.stderr).toContain('TELESYNC_SCHEDULE_TRUNK_CALLS');
    expect(badCron.stderr).toContain('"every five minutes" is not a cron expression');

    expect(unmigrated.code).toBe(2);
    expect(unmigrated.stderr).toMatch(/is not migrated .*Run telesync migrate first/);
    expect(unmigrated.stdout).toBe('');

    const nothingScheduled = await runTelesync(['schedule'], base);
    expect(nothingScheduled.code).toBe(2);
    expect(nothingScheduled.stderr).toContain('every stream is "off"');
  });

  it('runs each scheduled stream on its ticks; /metrics matches sync_runs and /healthz says ok', async () => {
    const port = await freePort();
    const burst = burstOfTicks(6_000, 4);
    const scheduled: StreamName[] = ['trunk_calls', 'endpoints', 'caller_ids'];
    const scheduler = await startScheduler(
      schedulerEnv(ACCOUNTS.ticks, port, {
        ...Object.fromEntries(scheduled.map((stream) => [scheduleVariable(stream), burst.cron])),
      }),
    );
    expect(scheduler.stdout()).toContain('Scheduled 3 streams for account MA_SCHED_TICKS');
    expect(scheduler.stdout()).toMatch(/^ {2}trunk_calls +\S/m);
    expect(scheduler.stdout()).toContain('off: messages, powerpacks, call_streams');
    expect(scheduler.stdout()).toContain(`Health:  http://127.0.0.1:${port}/healthz`);

    const early = await health(port);
    expect(early.status).toBe(200);
    expect(early.report.streams.map((s) => s.stream)).toEqual(scheduled);

    // Past the last tick of the burst, and every run of it ended.
    await waitFor(() => Date.now() > burst.lastTickMs + 1_500, { what: 'the burst of ticks' });
    const metrics = await waitFor(
      async () => {
        const samples = await scrape(port);
        return sumOf(samples, 'telesync_runs_in_progress') === 0 ? samples : undefined;
      },
      { what: 'the runs of the burst to end', timeoutMs: 20_000 },
    );
    const healthy = await health(port);
    expect(healthy.status, JSON.stringify(healthy.report)).toBe(200);
    expect(healthy.report.streams.map((s) => [s.stream, s.state])).toEqual(
      scheduled.map((stream) => [stream, 'ok']),
    );
    const stopped = await terminate(scheduler);
    expect(stopped.code, stopped.stderr).toBe(0);

    const runs = await syncRuns(ACCOUNTS.ticks);
    expect(new Set(runs.map((run) => run.command))).toEqual(new Set(['schedule']));
    expect(runs.filter((run) => run.status === 'running')).toEqual([]);
    for (const stream of scheduled) {
      const ofStream = runs.filter((run) => run.stream === stream);
      expect(ofStream.filter((run) => run.status === 'succeeded').length).toBeGreaterThan(0);
      for (const status of ['succeeded', 'failed', 'skipped'])
        expect(
          sumOf(metrics, 'telesync_runs_total', {
            stream,
            account: ACCOUNTS.ticks.authId,
            status,
          }),
          `${stream} ${status}`,
        ).toBe(ofStream.filter((run) => run.status === status).length);
      const total = (column: keyof RunRow) =>
        ofStream.reduce((sum, run) => sum + Number(run[column]), 0);
      for (const [kind, column] of [
        ['fetched', 'records_fetched'],
        ['upserted', 'records_upserted'],
        ['changed', 'records_changed'],
        ['rejected', 'records_rejected'],
      ] as const)
        expect(sumOf(metrics, 'telesync_records_total', { stream, kind }), kind).toBe(
          total(column),
        );
      expect(sumOf(metrics, 'telesync_requests_total', { stream })).toBe(total('requests'));
      expect(sumOf(metrics, 'telesync_retries_total', { stream })).toBe(total('retries'));
      // The metric adds each run's wait as measured (a series per stream once it has run);
      // sync_runs keeps it in whole milliseconds.
      expect(
        metrics.some(
          (sample) =>
            sample.name === 'telesync_load_wait_seconds_total' && sample.labels.stream === stream,
        ),
      ).toBe(true);
      expect(
        Math.abs(
          1000 * sumOf(metrics, 'telesync_load_wait_seconds_total', { stream }) -
            total('load_wait_ms'),
        ),
      ).toBeLessThanOrEqual(0.5 * ofStream.length);
      expect(sumOf(metrics, 'telesync_run_duration_seconds_count', { stream })).toBe(
        ofStream.length,
      );
      // /healthz showed the latest run the database has.
      const latest = ofStream.at(-1)!;
      expect(healthy.report.streams.find((s) => s.stream === stream)?.last_finished_at).toBe(
        latest.finished_at,
      );
    }
    // The first trunk_calls run read a week of calls: the counters are not trivially zero.
    expect(
      sumOf(metrics, 'telesync_records_total', { stream: 'trunk_calls', kind: 'fetched' }),
    ).toBeGreaterThan(100);
    // Every answer of the service was a 200, one per request.
    expect(
      sumOf(metrics, 'telesync_api_responses_total', {
        account: ACCOUNTS.ticks.authId,
        status: '200',
      }),
    ).toBe(runs.reduce((sum, run) => sum + run.requests, 0));
    expect(
      sumOf(metrics, 'telesync_watermark_lag_seconds', { stream: 'trunk_calls' }),
    ).toBeGreaterThan(0);
    expect(metrics.some((sample) => sample.name === 'process_cpu_user_seconds_total')).toBe(true);
  });

  it('never overlaps a stream with itself under slow runs: the tick is skipped, logged and counted', async () => {
    const port = await freePort();
    // Every request takes 700 ms, so each run outlasts the one-second tick.
    cli.service.setFaults({ latencyMs: 700 });
    const scheduler = await startScheduler(
      schedulerEnv(ACCOUNTS.overlap, port, {
        TELESYNC_SCHEDULE_TRUNK_CALLS: '* * * * * *',
        TELESYNC_INITIAL_DAYS: '1',
      }),
    );
    const missing = await fetch(`http://127.0.0.1:${port}/nothing-here`);
    expect(missing.status).toBe(404);

    const metrics = await waitFor(
      async () => {
        const samples = await scrape(port);
        const succeeded = sumOf(samples, 'telesync_runs_total', { status: 'succeeded' });
        const overlaps = sumOf(samples, 'telesync_missed_ticks_total', {
          stream: 'trunk_calls',
          reason: 'overlap',
        });
        return succeeded >= 3 && overlaps >= 2 ? samples : undefined;
      },
      { what: 'three runs and two skipped ticks', timeoutMs: 40_000 },
    );
    const stopped = await terminate(scheduler);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toContain(
      'trunk_calls: tick skipped, the previous run of this stream is still going',
    );
    // The ticks never even reached the lock: no run was "skipped" for a busy lock.
    expect(sumOf(metrics, 'telesync_runs_total', { status: 'skipped' })).toBe(0);

    const runs = (await syncRuns(ACCOUNTS.overlap)).filter((run) => run.stream === 'trunk_calls');
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.filter((run) => run.status === 'running')).toEqual([]);
    const byStart = [...runs].sort((a, b) => a.started_at.localeCompare(b.started_at));
    for (let index = 1; index < byStart.length; index++) {
      const previous = byStart[index - 1]!;
      const current = byStart[index]!;
      expect(
        Date.parse(current.started_at),
        `run ${current.id} started before run ${previous.id} finished`,
      ).toBeGreaterThanOrEqual(Date.parse(previous.finished_at!));
    }
  });

  it('stops cleanly on SIGTERM mid-run: exit 0, no run left running, no complete window without its rows', async () => {
    const port = await freePort();
    const scheduler = await startScheduler(
      schedulerEnv(ACCOUNTS.stop, port, {
        TELESYNC_SCHEDULE_TRUNK_CALLS: '* * * * * *',
        // A month of calls, slowly: seconds of work to interrupt.
        TELESYNC_INITIAL_DAYS: '30',
        TELESYNC_MAX_RPS: '50',
        TELESYNC_CONCURRENCY: '4',
        TELESYNC_BATCH_SIZE: '100',
        TELESYNC_SHUTDOWN_TIMEOUT_SECONDS: '20',
      }),
    );
    await waitFor(
      async () =>
        sumOf(await scrape(port), 'telesync_runs_in_progress', { stream: 'trunk_calls' }) === 1,
      { what: 'the first run to start' },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const stopped = await terminate(scheduler);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stopMs).toBeLessThan(20_000);
    expect(stopped.stderr).toContain('stopping: no new ticks');

    // Read once: each opening of the embedded database costs a second or two.
    const { runs, windows } = await cli.database.inspect(async (db) => {
      const runRows = await db.db
        .selectFrom('sync_runs')
        .select([
          'stream',
          'status',
          'windows_planned',
          'windows_completed',
          'records_fetched',
          'records_upserted',
          'records_rejected',
        ])
        .where('account_id', '=', ACCOUNTS.stop.authId)
        .execute();
      const windowRows = await sql<{
        status: string;
        total_count: number | null;
        rows_stored: number | null;
        rows_in_table: number;
      }>`
        SELECT w.status, w.total_count, w.rows_stored,
               (SELECT count(*) FROM ${sql.table(`${db.schema}.trunk_calls`)} t
                 WHERE t.account_id = w.account_id AND t.end_time <@ w.time_range)::int AS rows_in_table
          FROM ${sql.table(`${db.schema}.sync_windows`)} w
         WHERE w.account_id = ${ACCOUNTS.stop.authId} AND w.stream = 'trunk_calls'
         ORDER BY w.time_range
      `.execute(db.root);
      return { runs: runRows, windows: windowRows.rows };
    });
    // Stopped mid-run (not after the work was done), and the run's row closed.
    expect(runs.map((run) => [run.stream, run.status])).toEqual([['trunk_calls', 'stopped']]);
    // A clean stop: what was fetched is stored, nothing more, nothing less.
    expect(runs[0]!.records_fetched).toBe(runs[0]!.records_upserted + runs[0]!.records_rejected);
    expect(runs[0]!.windows_completed).toBeLessThan(runs[0]!.windows_planned);
    const complete = windows.filter((window) => window.status === 'complete');
    expect(complete.length).toBeGreaterThan(0);
    expect(complete.length).toBeLessThan(31);
    for (const window of complete) {
      expect(window.rows_stored).toBe(window.total_count);
      expect(window.rows_in_table).toBe(window.rows_stored);
    }
    expect(
      windows.every((window) => ['complete', 'failed', 'planned'].includes(window.status)),
    ).toBe(true);

    // Started again, the scheduler does not hold the run cut short against itself before its
    // first tick.
    const restarted = await startScheduler(
      schedulerEnv(ACCOUNTS.stop, port, { TELESYNC_SCHEDULE_TRUNK_CALLS: '0 0 1 1 *' }),
    );
    const afterRestart = await health(port);
    expect(afterRestart.status).toBe(200);
    expect(afterRestart.report.streams).toEqual([
      expect.objectContaining({
        stream: 'trunk_calls',
        state: 'starting',
        last_status: 'stopped',
        healthy: true,
      }),
    ]);
    expect((await terminate(restarted)).code).toBe(0);
  });

  it('answers /healthz 503 after a failed run, and 200 again once a run succeeds', async () => {
    const port = await freePort();
    const scheduler = await startScheduler(
      schedulerEnv(ACCOUNTS.health, port, {
        TELESYNC_SCHEDULE_TRUNK_CALLS: '* * * * * *',
        TELESYNC_INITIAL_DAYS: '1',
        TELESYNC_MAX_RETRIES: '0',
      }),
    );
    await waitFor(async () => (await health(port)).report.streams[0]?.state === 'ok', {
      what: 'a first successful run',
    });

    cli.service.setFaults({ down: true });
    const down = await waitFor(
      async () => {
        const answer = await health(port);
        return answer.status === 503 ? answer : undefined;
      },
      { what: '/healthz to answer 503' },
    );
    expect(down.report).toMatchObject({ status: 'unhealthy', database: { ok: true } });
    expect(down.report.streams[0]).toMatchObject({
      account: ACCOUNTS.health.authId,
      stream: 'trunk_calls',
      state: 'failed',
      last_status: 'failed',
    });
    expect(down.report.streams[0]?.error).toMatch(/503/);
    const metrics = await scrape(port);
    expect(sumOf(metrics, 'telesync_runs_total', { status: 'failed' })).toBeGreaterThan(0);
    expect(sumOf(metrics, 'telesync_api_responses_total', { status: '503' })).toBeGreaterThan(0);

    cli.service.setFaults({});
    await waitFor(async () => (await health(port)).status === 200, {
      what: '/healthz to recover',
    });
    const stopped = await terminate(scheduler);
    expect(stopped.code, stopped.stderr).toBe(0);
    // The failure was logged; the scheduler went on.
    expect(stopped.stderr).toMatch(/trunk_calls: run failed: .*503/);
  });

  it.runIf(harnessTarget().kind === 'postgres')(
    'answers /healthz 503 when the database is unreachable',
    async () => {
      const target = harnessTarget();
      if (target.kind !== 'postgres') return;
      const url = new URL(target.url);
      const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
      url.host = `127.0.0.1:${proxy.port}`;
      const port = await freePort();
      const scheduler = await startScheduler(
        schedulerEnv(ACCOUNTS.offline, port, {
          DATABASE_URL: url.toString(),
          // Scheduled, but not within this test: the stream is "starting".
          TELESYNC_SCHEDULE_TRUNK_CALLS: '0 0 1 1 *',
        }),
      );
      const up = await health(port);
      expect(up.status).toBe(200);
      expect(up.report.streams[0]?.state).toBe('starting');

      await proxy.stop();
      const down = await health(port);
      expect(down.status).toBe(503);
      expect(down.report.database.ok).toBe(false);
      // Said with the fix, or as a ping that did not answer in time.
      expect(down.report.database.error).toMatch(
        /cannot use the database at .*check DATABASE_URL|the query of the database's clock did not answer within/,
      );
      expect(down.report.streams[0]?.state).toBe('unknown');
      const stopped = await terminate(scheduler);
      expect(stopped.code, stopped.stderr).toBe(0);
    },
  );
});

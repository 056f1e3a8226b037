import { describe, expect, it } from 'vitest';
import { SchedulerMetrics } from '../../src/scheduler/metrics.js';
import {
  createScheduler,
  type CreateCronTask,
  type CronTaskHandlers,
  type CronTaskSpec,
} from '../../src/scheduler/scheduler.js';
import { RunStats } from '../../src/sync/run-context.js';
import type { StreamName } from '../../src/domain/streams.js';
import type { SyncResult } from '../../src/sync/run-stream.js';
import { createLogger } from '../../src/util/logger.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');

/** Cron tasks that tick when the test says so. */
class FakeCron {
  readonly tasks = new Map<
    string,
    { spec: CronTaskSpec; handlers: CronTaskHandlers; started: boolean; stopped: boolean }
  >();
  readonly create: CreateCronTask = (spec, handlers) => {
    const task = { spec, handlers, started: false, stopped: false };
    this.tasks.set(spec.name.replace('telesync:', ''), task);
    return {
      start: () => void (task.started = true),
      stop: () => void (task.stopped = true),
      nextRuns: (count) => Array.from({ length: count }, (_, i) => new Date(NOW + i * 1000)),
    };
  };

  /** A tick of `stream`, as node-cron would fire it (only while started and not stopped). */
  tick(stream: StreamName): Promise<void> {
    const task = this.tasks.get(stream);
    if (task === undefined || !task.started || task.stopped) return Promise.resolve();
    return task.handlers.tick();
  }
}

/** A run the test ends when it wants, and the signal it was given. */
interface PendingRun {
  accountId: string;
  stream: StreamName;
  signal: AbortSignal;
  finish(status?: SyncResult['status'], error?: string): void;
}

function syncResult(
  accountId: string,
  stream: StreamName,
  status: SyncResult['status'],
  error?: string,
): SyncResult {
  const stats = new RunStats();
  stats.recordsFetched = 3;
  stats.recordsUpserted = 3;
  return {
    accountId,
    stream,
    status,
    runId: 1,
    stats,
    requests: { requests: 2, retries: 0, bytesReceived: 0, waitMs: 0, outcomes: { '200': 2 } },
    durationMs: 10,
    error,
  };
}

function setup(
  options: {
    streams?: StreamName[];
    accounts?: string[];
    accountConcurrency?: number;
    /** Default: every run waits for the test to finish it. */
    runStream?: (accountId: string, stream: StreamName, signal: AbortSignal) => Promise<SyncResult>;
  } = {},
) {
  const cron = new FakeCron();
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level: 'debug',
    secrets: [],
    pretty: false,
    write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  const metrics = new SchedulerMetrics({ now: () => NOW, processMetrics: false });
  const pending: PendingRun[] = [];
  const started: string[] = [];
  const runStream =
    options.runStream ??
    ((accountId: string, stream: StreamName, signal: AbortSignal) =>
      new Promise<SyncResult>((resolve) => {
        started.push(`${stream}/${accountId}`);
        pending.push({
          accountId,
          stream,
          signal,
          finish: (status = 'succeeded', error) =>
            resolve(syncResult(accountId, stream, status, error)),
        });
      }));
  const scheduler = createScheduler({
    streams: (options.streams ?? ['trunk_calls']).map((stream) => ({
      stream,
      cron: '* * * * * *',
    })),
    timezone: 'UTC',
    accountIds: options.accounts ?? ['MA_ONE'],
    ...(options.accountConcurrency === undefined
      ? {}
      : { accountConcurrency: options.accountConcurrency }),
    runStream,
    metrics,
    log,
    now: () => NOW,
    createCronTask: cron.create,
  });
  /** Finishes the oldest run still pending. */
  const finishNext = async (status?: SyncResult['status'], error?: string) => {
    await until(() => pending.length > 0);
    pending.shift()!.finish(status, error);
  };
  return { cron, scheduler, metrics, lines, pending, started, finishNext };
}

/** Lets promise callbacks run until `condition` holds (no timers: a few hundred turns at most). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !condition(); turn++) await Promise.resolve();
  if (!condition()) throw new Error('condition never held');
}

async function runsTotal(metrics: SchedulerMetrics): Promise<Record<string, number>> {
  const { values } = await metrics.registry.getSingleMetric('telesync_runs_total')!.get();
  return Object.fromEntries(
    values.map((v) => [`${v.labels.stream}/${v.labels.account}/${v.labels.status}`, v.value]),
  );
}

describe('the scheduler', () => {
  it('creates one cron task per scheduled stream, in the time zone given', () => {
    const { cron } = setup({ streams: ['trunk_calls', 'messages'] });
    expect([...cron.tasks.values()].map((task) => task.spec)).toEqual([
      { name: 'telesync:trunk_calls', cron: '* * * * * *', timezone: 'UTC' },
      { name: 'telesync:messages', cron: '* * * * * *', timezone: 'UTC' },
    ]);
  });

  it('runs every account in turn on each tick, and counts each run', async () => {
    const { cron, scheduler, metrics, started, finishNext } = setup({
      accounts: ['MA_ONE', 'MA_TWO'],
    });
    scheduler.start();
    const tick = cron.tick('trunk_calls');
    await until(() => started.length === 1);
    expect(started).toEqual(['trunk_calls/MA_ONE']);
    await finishNext();
    await until(() => started.length === 2);
    expect(started).toEqual(['trunk_calls/MA_ONE', 'trunk_calls/MA_TWO']);
    await finishNext();
    await tick;
    expect(await runsTotal(metrics)).toEqual({
      'trunk_calls/MA_ONE/succeeded': 1,
      'trunk_calls/MA_TWO/succeeded': 1,
    });
  });

  it('runs more accounts than accountConcurrency in waves of equal width', async () => {
    const accounts = ['MA_1', 'MA_2', 'MA_3', 'MA_4', 'MA_5'];
    const { cron, scheduler, pending, started, finishNext } = setup({
      accounts,
      accountConcurrency: 4,
    });
    scheduler.start();
    const ticked = cron.tick('trunk_calls');
    // Three and two, not four and one.
    await until(() => started.length === 3);
    for (let turn = 0; turn < 100; turn++) await Promise.resolve();
    expect(started).toHaveLength(3);
    let most = pending.length;
    for (let finished = 0; finished < accounts.length; finished++) {
      await finishNext();
      for (let turn = 0; turn < 20; turn++) await Promise.resolve();
      most = Math.max(most, pending.length);
    }
    await ticked;
    expect(most).toBe(3);
    expect(started).toEqual(accounts.map((account) => `trunk_calls/${account}`));
  });

  it('logs a failed run and goes on with the next account and the next tick', async () => {
    const { cron, scheduler, metrics, lines, started, finishNext } = setup({
      accounts: ['MA_ONE', 'MA_TWO'],
    });
    scheduler.start();
    const first = cron.tick('trunk_calls');
    await finishNext('failed', 'HTTP 503 from the service');
    await finishNext();
    await first;
    const second = cron.tick('trunk_calls');
    await finishNext();
    await finishNext();
    await second;
    expect(started).toHaveLength(4);
    expect(await runsTotal(metrics)).toEqual({
      'trunk_calls/MA_ONE/failed': 1,
      'trunk_calls/MA_ONE/succeeded': 1,
      'trunk_calls/MA_TWO/succeeded': 2,
    });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        stream: 'trunk_calls',
        account: 'MA_ONE',
        status: 'failed',
        error: 'HTTP 503 from the service',
      }),
    );
  });

  it('survives a run that throws instead of returning its result', async () => {
    let calls = 0;
    const { cron, scheduler, lines } = setup({
      accounts: ['MA_ONE', 'MA_TWO'],
      runStream: (accountId, stream) => {
        calls++;
        return accountId === 'MA_ONE'
          ? Promise.reject(new Error('boom'))
          : Promise.resolve(syncResult(accountId, stream, 'succeeded'));
      },
    });
    scheduler.start();
    await cron.tick('trunk_calls');
    expect(calls).toBe(2);
    const error = lines.find((line) => line.level === 'error' && line.account === 'MA_ONE');
    expect((error?.err as { message?: string } | undefined)?.message).toBe('boom');
  });

  it('skips, logs and counts a tick that comes while the previous run of its stream is going', async () => {
    const { cron, scheduler, metrics, lines, started, finishNext } = setup({
      streams: ['trunk_calls', 'messages'],
    });
    scheduler.start();
    const slow = cron.tick('trunk_calls');
    await until(() => started.length === 1);
    await cron.tick('trunk_calls');
    // Another stream is not held up by it.
    const other = cron.tick('messages');
    await until(() => started.length === 2);
    expect(started).toEqual(['trunk_calls/MA_ONE', 'messages/MA_ONE']);
    await finishNext();
    await finishNext();
    await Promise.all([slow, other]);

    const { values } = await metrics.registry.getSingleMetric('telesync_missed_ticks_total')!.get();
    expect(values).toEqual([
      expect.objectContaining({ labels: { stream: 'trunk_calls', reason: 'overlap' }, value: 1 }),
    ]);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'warn', stream: 'trunk_calls', reason: 'overlap' }),
    );
    // The next tick after the run ended does run.
    const next = cron.tick('trunk_calls');
    await finishNext();
    await next;
    expect(started).toHaveLength(3);
  });

  it('logs and counts a tick node-cron reports as missed', async () => {
    const { cron, scheduler, metrics, lines } = setup();
    scheduler.start();
    cron.tasks.get('trunk_calls')!.handlers.missed('missed', new Date(NOW - 5000));
    const { values } = await metrics.registry.getSingleMetric('telesync_missed_ticks_total')!.get();
    expect(values).toEqual([
      expect.objectContaining({ labels: { stream: 'trunk_calls', reason: 'missed' }, value: 1 }),
    ]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        stream: 'trunk_calls',
        reason: 'missed',
        slot: '2025-06-01T11:59:55.000Z',
      }),
    );
  });

  it('on stop: takes no more ticks, aborts the runs in hand and waits for them to end', async () => {
    const { cron, scheduler, pending, started, metrics } = setup({
      streams: ['trunk_calls', 'messages'],
      accounts: ['MA_ONE', 'MA_TWO'],
    });
    scheduler.start();
    const tick = cron.tick('trunk_calls');
    await until(() => pending.length === 1);
    const run = pending[0]!;
    expect(run.signal.aborted).toBe(false);

    let stopped = false;
    const stopping = scheduler.stop(60_000).then((outcome) => {
      stopped = true;
      return outcome;
    });
    expect(run.signal.aborted).toBe(true);
    expect([...cron.tasks.values()].every((task) => task.stopped)).toBe(true);
    await cron.tick('messages');
    await Promise.resolve();
    expect(stopped).toBe(false);

    // The run commits its batch in hand and returns; the second account is not started.
    run.finish('failed', 'stopped before the end (shutdown)');
    expect(await stopping).toEqual({ finished: true, pending: [] });
    await tick;
    expect(started).toEqual(['trunk_calls/MA_ONE']);
    expect(await runsTotal(metrics)).toEqual({ 'trunk_calls/MA_ONE/failed': 1 });
  });

  it('on stop: gives up on runs that outlive the timeout, and names them', async () => {
    const { cron, scheduler, pending } = setup({ accounts: ['MA_ONE', 'MA_TWO'] });
    scheduler.start();
    void cron.tick('trunk_calls');
    await until(() => pending.length === 1);
    // This run ignores its signal.
    expect(await scheduler.stop(20)).toEqual({
      finished: false,
      pending: [{ stream: 'trunk_calls', accountId: 'MA_ONE' }],
    });
    pending[0]!.finish();
  });

  it('--once runs every scheduled stream once, one after the other, in plan order', async () => {
    const { scheduler, started, finishNext } = setup({
      streams: ['trunk_calls', 'endpoints', 'messages'],
      accounts: ['MA_ONE', 'MA_TWO'],
    });
    const once = scheduler.runOnce();
    for (let run = 0; run < 6; run++) await finishNext(run === 1 ? 'failed' : 'succeeded');
    const results = await once;
    expect(started).toEqual([
      'trunk_calls/MA_ONE',
      'trunk_calls/MA_TWO',
      'endpoints/MA_ONE',
      'endpoints/MA_TWO',
      'messages/MA_ONE',
      'messages/MA_TWO',
    ]);
    expect(results.map((r) => `${r.stream}/${r.accountId}/${r.status}`)).toEqual([
      'trunk_calls/MA_ONE/succeeded',
      'trunk_calls/MA_TWO/failed',
      'endpoints/MA_ONE/succeeded',
      'endpoints/MA_TWO/succeeded',
      'messages/MA_ONE/succeeded',
      'messages/MA_TWO/succeeded',
    ]);
  });

  it('tells the next tick times of a stream', () => {
    const { scheduler } = setup();
    expect(scheduler.nextRuns('trunk_calls', 2)).toEqual([new Date(NOW), new Date(NOW + 1000)]);
    expect(scheduler.nextRuns('messages', 2)).toEqual([]);
  });
});

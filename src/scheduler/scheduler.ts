import { createTask, type Logger as CronLogger } from 'node-cron';
import type { StreamName } from '../domain/streams.js';
import type { SyncResult } from '../sync/run-stream.js';
import { coerceError } from '../util/coerce-error.js';
import { evenWaveWidth } from '../util/even-wave-width.js';
import { forEachConcurrently } from '../util/for-each-concurrently.js';
import type { Logger } from '../util/logger.js';
import type { MissedTickReason, SchedulerMetrics } from './metrics.js';
import type { ScheduledStream } from './schedule-plan.js';

/** What the scheduler needs of a cron task. node-cron's fit (createNodeCronTask); tests pass fakes. */
export interface CronTask {
  start(): void;
  /** Stops the ticks for good; a tick in hand goes on. */
  stop(): void;
  /** The next `count` tick times. */
  nextRuns(count: number): Date[];
}

export interface CronTaskSpec {
  readonly name: string;
  readonly cron: string;
  readonly timezone: string;
}

export interface CronTaskHandlers {
  /** Runs a tick; the task must not start another one before this settles. */
  tick(): Promise<void>;
  /** Told of a tick that did not start, and why. */
  missed(reason: MissedTickReason, slot: Date): void;
}

export type CreateCronTask = (
  spec: CronTaskSpec,
  handlers: CronTaskHandlers,
  log: Logger,
) => CronTask;

/**
 * A node-cron task with `noOverlap`: a tick that comes while the previous one is still running is
 * dropped and reported as an overlap; a tick the process was too busy to start within node-cron's
 * tolerance is reported as missed.
 */
export const createNodeCronTask: CreateCronTask = (spec, handlers, log) => {
  const task = createTask(spec.cron, () => handlers.tick(), {
    name: spec.name,
    timezone: spec.timezone,
    noOverlap: true,
    logger: nodeCronLogger(log),
  });
  task.on('execution:overlap', (context) => handlers.missed('overlap', context.date));
  task.on('execution:missed', (context) => handlers.missed('missed', context.date));
  return {
    start: () => void task.start(),
    stop: () => {
      void task.stop();
      // Also drops the task from node-cron's process-wide registry.
      void task.destroy();
    },
    nextRuns: (count) => task.getNextRuns(count),
  };
};

/** node-cron's own messages through our logger (never bare console lines). */
function nodeCronLogger(log: Logger): CronLogger {
  const cron = log.child({ component: 'node-cron' });
  return {
    info: (message) => cron.debug(message),
    // Its two warnings (overlap, missed) are the events we log ourselves, with the stream named.
    warn: (message) => cron.debug(message),
    error: (message, error) =>
      cron.error(
        { err: error ?? (message instanceof Error ? message : undefined) },
        String(message),
      ),
    debug: (message) => cron.debug(String(message)),
  };
}

export interface SchedulerOptions {
  /** The streams to run and their crons (planSchedule). */
  readonly streams: readonly ScheduledStream[];
  /** Time zone of the crons (IANA name). */
  readonly timezone: string;
  /** Every tick runs these accounts, in this order, `accountConcurrency` at once at most. */
  readonly accountIds: readonly string[];
  /** Accounts a tick runs at once (default 1: one after the other). */
  readonly accountConcurrency?: number;
  /**
   * Runs one account × one stream (runStream, bound to its dependencies, with `lockWaitMs: 0`).
   * Expected never to throw; a throw is logged as a bug and the scheduler goes on.
   */
  readonly runStream: (
    accountId: string,
    stream: StreamName,
    signal: AbortSignal,
  ) => Promise<SyncResult>;
  readonly metrics: SchedulerMetrics;
  readonly log: Logger;
  /** The clock, epoch milliseconds. */
  readonly now: () => number;
  /** Default: node-cron (createNodeCronTask). */
  readonly createCronTask?: CreateCronTask;
}

/** How a stop went. */
export interface StopOutcome {
  /** Every run in hand ended within the time allowed. */
  readonly finished: boolean;
  /** The runs still going when the time ran out. */
  readonly pending: readonly { readonly stream: StreamName; readonly accountId: string }[];
}

export interface Scheduler {
  /** Starts the cron ticks. */
  start(): void;
  /** Runs every scheduled stream once, in plan order, one after the other (`--once`). */
  runOnce(): Promise<SyncResult[]>;
  /**
   * Stops: no tick starts from now on, the runs in hand are told to stop after their batch (their
   * AbortSignal), and this waits up to `timeoutMs` for them to end.
   */
  stop(timeoutMs: number): Promise<StopOutcome>;
  /** The next `count` tick times of a scheduled stream. */
  nextRuns(stream: StreamName, count: number): Date[];
}

/**
 * The scheduler: a cron task per stream; each tick runs every account (`accountConcurrency` at once). Streams run
 * concurrently with each other, a stream never concurrently with itself (node-cron's noOverlap,
 * and a check here as well, so `runOnce` and a tick cannot meet either). A failed run is logged and
 * counted, never thrown.
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const { metrics, log } = options;
  const createCronTask = options.createCronTask ?? createNodeCronTask;
  const controller = new AbortController();
  /** The tick in hand of each stream, and the accounts it is at. */
  const inHand = new Map<
    StreamName,
    { state: { accountIds: Set<string> }; done: Promise<SyncResult[]> }
  >();
  let stopping = false;

  const reportMissed = (stream: StreamName, reason: MissedTickReason, slot: Date): void => {
    metrics.recordMissedTick(stream, reason);
    log.warn(
      { stream, slot: slot.toISOString(), reason },
      reason === 'overlap'
        ? `${stream}: tick skipped, the previous run of this stream is still going`
        : `${stream}: tick missed, the process was too busy to start it on time`,
    );
  };

  const runAccounts = async (
    stream: StreamName,
    state: { accountIds: Set<string> },
  ): Promise<SyncResult[]> => {
    const results: SyncResult[] = [];
    await forEachConcurrently(
      options.accountIds,
      // Waves of equal width: a first tick reads each account's whole horizon, as a backfill does.
      evenWaveWidth(options.accountIds.length, options.accountConcurrency ?? 1),
      async (accountId) => {
        if (controller.signal.aborted) return;
        state.accountIds.add(accountId);
        metrics.runStarted(stream);
        try {
          const result = await options.runStream(accountId, stream, controller.signal);
          metrics.recordRun(result, options.now());
          logResult(log, result, stopping);
          results.push(result);
        } catch (thrown) {
          log.error(
            { err: coerceError(thrown), stream, account: accountId },
            `${stream}: the run threw instead of returning its result (a bug); the scheduler goes on`,
          );
        } finally {
          state.accountIds.delete(accountId);
          metrics.runEnded(stream);
        }
      },
    );
    return results;
  };

  const tick = (stream: StreamName): Promise<SyncResult[]> => {
    if (stopping) return Promise.resolve([]);
    if (inHand.has(stream)) {
      reportMissed(stream, 'overlap', new Date(options.now()));
      return Promise.resolve([]);
    }
    const state = { accountIds: new Set<string>() };
    const done = runAccounts(stream, state).finally(() => inHand.delete(stream));
    inHand.set(stream, { state, done });
    return done;
  };

  const tasks = new Map<StreamName, CronTask>();
  for (const { stream, cron } of options.streams) {
    tasks.set(
      stream,
      createCronTask(
        { name: `telesync:${stream}`, cron, timezone: options.timezone },
        {
          tick: async () => {
            await tick(stream);
          },
          missed: (reason, slot) => reportMissed(stream, reason, slot),
        },
        log,
      ),
    );
  }

  return {
    start() {
      if (stopping) return;
      for (const task of tasks.values()) task.start();
    },
    async runOnce() {
      const results: SyncResult[] = [];
      for (const { stream } of options.streams) {
        if (stopping) break;
        results.push(...(await tick(stream)));
      }
      return results;
    },
    async stop(timeoutMs) {
      stopping = true;
      for (const task of tasks.values()) task.stop();
      controller.abort(new Error('the scheduler is stopping'));
      const ended = await settlesWithin(
        Promise.allSettled([...inHand.values()].map((entry) => entry.done)),
        timeoutMs,
      );
      return {
        finished: ended,
        pending: ended
          ? []
          : [...inHand.entries()].flatMap(([stream, entry]) =>
              [...entry.state.accountIds].map((accountId) => ({ stream, accountId })),
            ),
      };
    },
    nextRuns(stream, count) {
      return tasks.get(stream)?.nextRuns(count) ?? [];
    },
  };
}

function logResult(log: Logger, result: SyncResult, stopping: boolean): void {
  const fields = {
    stream: result.stream,
    account: result.accountId,
    run: result.runId,
    status: result.status,
    fetched: result.stats.recordsFetched,
    upserted: result.stats.recordsUpserted,
    changed: result.stats.recordsChanged,
    rejected: result.stats.recordsRejected,
    requests: result.requests.requests,
    retries: result.requests.retries,
    durationMs: result.durationMs,
  };
  if (result.status === 'failed' && stopping)
    // Asked to stop: the run committed what it had, and the next start continues from there.
    log.warn({ ...fields, error: result.error }, `${result.stream}: run stopped by the shutdown`);
  else if (result.status === 'failed')
    log.error(
      { ...fields, error: result.error },
      `${result.stream}: run failed: ${result.error ?? 'no reason given'}; the next tick tries again`,
    );
  else if (result.status === 'skipped')
    // Another process (a second scheduler, a manual sync) runs this account and stream right now.
    log.warn(fields, `${result.stream}: run skipped: ${result.error ?? ''}`);
  else log.info(fields, `${result.stream}: run succeeded`);
}

/** Whether `work` settles within `timeoutMs`. */
async function settlesWithin(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

import type { JobInsert, PgBoss } from 'pg-boss';
import type { StreamName } from '../domain/streams.js';
import type { AccountJob, JobQueue, QueueCounts } from './job-queue.js';
import {
  dropJobSchema,
  findJobSchemaVersion,
  findLegacyPendingJobs,
  hasWaitingJobAbove,
  type JobStateCount,
} from '../db/repositories/job-queue-repository.js';
import {
  listenForNotifications,
  notifyChannel,
  type NotificationListener,
} from '../db/notification-listener.js';
import { coerceError } from '../util/coerce-error.js';
import type { Database } from '../db/connect.js';
import { isMalformedJob, parseAccountJob } from './parse-account-job.js';

/**
 * The job queue on pg-boss 12, in the same PostgreSQL as the data, in a schema of its own. Every
 * account's jobs go to one queue, each job in its account's group; a fetch with
 * `groupConcurrency: 1` takes the next job of any account that has none active, whichever worker
 * holds that one. So one worker at a time owns an account, a busy account costs a fetch nothing,
 * and an idle worker's fetch is one statement however many accounts there are. Idle workers are
 * woken by a NOTIFY when jobs are enqueued, and otherwise look again only every `pollMs`.
 *
 * A job's lease is a heartbeat: the worker renews it while it works (`extend`), so a job may run
 * as long as its work takes, up to JOB_EXPIRE_SECONDS, while a killed worker's job goes to another
 * one lease after its last renewal.
 */

export interface PgBossQueueSettings {
  /** PostgreSQL connection string (DATABASE_URL). */
  readonly connectionString: string;
  /** The schema of pg-boss's tables. */
  readonly schema: string;
  /**
   * The streams a sync job and a schedule tick may name (the registry's, from the composition
   * root); a job of another stream is malformed, a tick of one not kept is unscheduled.
   */
  readonly streams: readonly StreamName[];
  /** telesync's database: the NOTIFY that wakes idle workers is sent through it. */
  readonly database: Database;
  /**
   * How long a worker holds a job after taking it or renewing its lease before pg-boss may give it
   * to another (a killed worker's job is retried after this); job handlers renew it or stop well
   * before it.
   */
  readonly leaseSeconds: number;
  /** Retries of a failed job, with exponential backoff from `retryDelaySeconds`. */
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  /** Connections of pg-boss's own pool. */
  readonly maxConnections: number;
  /**
   * Whether this process keeps the cron schedules, expires jobs and listens for new ones
   * (workers: yes; commands that only enqueue: no).
   */
  readonly supervise: boolean;
  /** Told of pg-boss's errors (a lost connection, say): it keeps going and reconnects. */
  readonly onError: (error: Error) => void;
  /**
   * The accounts this process runs jobs of (omitted: any). Workers configured with different
   * accounts share the one queue: a job of an account not served here goes back to the queue for
   * the others, and this process's fetches skip that account from then on.
   */
  readonly serves?: (accountId: string) => boolean;
}

/** The one queue of every account's jobs; the account is the job's group. */
export const ACCOUNT_JOBS_QUEUE = 'telesync-jobs';

/** The queue of the schedule's ticks: one schedule per stream, keyed by the stream. */
const TICKS_QUEUE = 'telesync-ticks';

/** pg-boss 12 migrates schemas from this version on; pg-boss 10 (telesync before) made 24. */
const FIRST_MIGRATABLE_VERSION = 25;

/** pg-boss, loaded on first use: commands that never touch the queue do not pay its start-up. */
async function loadPgBoss(): Promise<typeof PgBoss> {
  const loaded = await import('pg-boss');
  return loaded.PgBoss;
}

/**
 * pg-boss's `error` event. PgBoss is a typed EventEmitter, but its declarations import node:events
 * in a form this project's compiler settings (no esModuleInterop) do not read as one.
 */
function onBossError(boss: PgBoss, listener: (error: Error) => void): void {
  (boss as unknown as { on(event: 'error', listener: (error: Error) => void): void }).on(
    'error',
    listener,
  );
}

/** Sync jobs go before backfill jobs: the schedule must not starve. */
const SYNC_PRIORITY = 10;

/**
 * The longest one job holds its account, however often its lease is renewed (pg-boss's `expire`,
 * counted from the job's start): a job still running then stops and is put back, behind the
 * account's other jobs. Long enough that a large account's backfill is one job, and that the one
 * window its next turn reads again is nothing beside it.
 */
export const JOB_EXPIRE_SECONDS = 3_600;

/** The channel that wakes idle workers of one job schema (channels are database-wide). */
function wakeChannel(schema: string): string {
  return `telesync_jobs:${schema}`;
}

/** The channel a job's settling is told on: what `backfill --queue --wait` waits for. */
function settledChannel(schema: string): string {
  return `telesync_jobs_settled:${schema}`;
}

/** How an idle worker's wait for jobs ends: a NOTIFY, the poll, or the signal. */
interface Wakeup {
  wait(ms: number, signal: AbortSignal): Promise<void>;
  wake(): void;
}

function createWakeup(): Wakeup {
  let waiters: (() => void)[] = [];
  return {
    wait(ms, signal) {
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          waiters = waiters.filter((waiter) => waiter !== done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done, { once: true });
        waiters.push(done);
      });
    },
    wake() {
      for (const waiter of [...waiters]) waiter();
    },
  };
}

/**
 * Creates pg-boss's schema (or migrates it to this version) and the queues, and stops: what
 * `telesync migrate` runs on PostgreSQL. A schema of pg-boss 10, which pg-boss 12 cannot migrate,
 * is made anew: its jobs not yet done are carried over into the new queue (their runs continue
 * from their ledger, so a job run twice reads nothing twice) and its schedules are kept again by
 * the next worker to start. Returns how many jobs were carried over, when the schema was made anew.
 */
export async function installJobSchema(
  settings: Pick<
    PgBossQueueSettings,
    'connectionString' | 'schema' | 'onError' | 'database' | 'streams'
  >,
): Promise<{ remade: boolean; carriedOver: number }> {
  const root = settings.database.root;
  const version = await findJobSchemaVersion(root, settings.schema);
  let carried: AccountJob[] = [];
  const remade = version !== undefined && version < FIRST_MIGRATABLE_VERSION;
  if (remade) {
    carried = (await findLegacyPendingJobs(root, settings.schema))
      .map((data) => parseAccountJob(data, settings.streams))
      .filter((job): job is AccountJob => !isMalformedJob(job));
    await dropJobSchema(root, settings.schema);
  }
  const Boss = await loadPgBoss();
  const boss = new Boss({
    connectionString: settings.connectionString,
    schema: settings.schema,
    max: 2,
    supervise: false,
    schedule: false,
    migrate: true,
  });
  onBossError(boss, settings.onError);
  await boss.start();
  try {
    await ensureQueues(boss);
    if (carried.length > 0) await boss.insert(ACCOUNT_JOBS_QUEUE, carried.map(insertOf({})));
  } finally {
    await boss.stop({ graceful: false });
  }
  return { remade, carriedOver: carried.length };
}

async function ensureQueues(boss: PgBoss): Promise<void> {
  for (const name of [ACCOUNT_JOBS_QUEUE, TICKS_QUEUE]) {
    // Creating a queue that another process created meanwhile does nothing.
    if ((await boss.getQueue(name)) === null)
      await boss.createQueue(name, { policy: 'standard', notify: name === TICKS_QUEUE });
  }
}

/**
 * A job as pg-boss inserts it: in its account's group, with its retries, and its lease as a
 * heartbeat of `leaseSeconds` (pg-boss's heartbeatSeconds) bounded by JOB_EXPIRE_SECONDS.
 */
function insertOf(
  settings: Partial<Pick<PgBossQueueSettings, 'leaseSeconds' | 'retryLimit' | 'retryDelaySeconds'>>,
): (job: AccountJob) => JobInsert<AccountJob> {
  return (job) => ({
    data: job,
    group: { id: job.accountId },
    priority: job.kind === 'sync' ? SYNC_PRIORITY : 0,
    retryBackoff: true,
    ...(settings.leaseSeconds === undefined
      ? {}
      : {
          heartbeatSeconds: settings.leaseSeconds,
          expireInSeconds: Math.max(settings.leaseSeconds, JOB_EXPIRE_SECONDS),
        }),
    ...(settings.retryLimit === undefined ? {} : { retryLimit: settings.retryLimit }),
    ...(settings.retryDelaySeconds === undefined ? {} : { retryDelay: settings.retryDelaySeconds }),
  });
}

/** How often pg-boss's background passes run for a lease of `leaseSeconds`: a quarter, 1-30 s. */
function passSeconds(leaseSeconds: number): number {
  return Math.max(1, Math.min(30, Math.floor(leaseSeconds / 4)));
}

/** Starts pg-boss (its schema must exist: installJobSchema) and returns the queue over it. */
export async function openPgBossQueue(settings: PgBossQueueSettings): Promise<JobQueue> {
  const Boss = await loadPgBoss();
  const boss = new Boss({
    connectionString: settings.connectionString,
    schema: settings.schema,
    max: settings.maxConnections,
    supervise: settings.supervise,
    schedule: settings.supervise,
    migrate: false,
    // The schedule's ticks wake the worker that takes them (the tick queue notifies).
    useListenNotify: settings.supervise,
    // A killed worker's job is failed, and so retried, by the monitor pass (its heartbeat missed),
    // which the supervise timer runs: both every quarter lease, so that the job is retried soon after
    // its lease ends, not up to pg-boss's default minute later. Deleting old jobs (the maintenance
    // pass) keeps pg-boss's own cadence.
    superviseIntervalSeconds: passSeconds(settings.leaseSeconds),
    monitorIntervalSeconds: passSeconds(settings.leaseSeconds),
  });
  onBossError(boss, settings.onError);
  await boss.start();
  await ensureQueues(boss);

  const wakeup = createWakeup();
  const channel = wakeChannel(settings.schema);
  const listener = settings.supervise
    ? await listenForNotifications({
        connectionString: settings.connectionString,
        channel,
        onNotify: () => wakeup.wake(),
        onError: settings.onError,
        reconnectMs: 1_000,
      })
    : undefined;
  const settled = createWakeup();
  let settledListener: Promise<NotificationListener | undefined> | undefined;
  const toInsert = insertOf(settings);
  const workerIds: string[] = [];
  const notServed = new Set<string>();

  const queue: JobQueue = {
    async enqueue(jobs) {
      if (jobs.length === 0) return;
      await boss.insert(ACCOUNT_JOBS_QUEUE, jobs.map(toInsert));
      await notifyChannel(settings.database.root, channel);
    },

    async take() {
      for (;;) {
        const [job] = await boss.fetch<unknown>(ACCOUNT_JOBS_QUEUE, {
          batchSize: 1,
          groupConcurrency: 1,
          includeMetadata: true,
          ...(notServed.size > 0 ? { ignoreGroups: [...notServed] } : {}),
        });
        if (job === undefined) return undefined;
        const parsed = parseAccountJob(job.data, settings.streams, job.groupId);
        const attempt = { id: job.id, retryCount: job.retryCount };
        if (isMalformedJob(parsed)) {
          // Failed now, not left to its lease: the account's next job is taken at once. Its
          // retries would fail the same way: with retries left it is made due again with none,
          // so the next fetch fails it for good.
          await boss.fail(ACCOUNT_JOBS_QUEUE, attempt, { message: parsed.malformed });
          if (job.retryCount < job.retryLimit)
            await boss.update(ACCOUNT_JOBS_QUEUE, undefined, {
              id: job.id,
              retryLimit: 0,
              startAfter: new Date(0),
            });
          settings.onError(new Error(`job ${job.id} failed: ${parsed.malformed}`));
          continue;
        }
        if (settings.serves !== undefined && !settings.serves(parsed.accountId)) {
          notServed.add(parsed.accountId);
          await boss.insert(ACCOUNT_JOBS_QUEUE, [toInsert(parsed)]);
          await boss.complete(ACCOUNT_JOBS_QUEUE, attempt);
          await notifyChannel(settings.database.root, channel);
          continue;
        }
        // From this process's clock, not the database's: the fetch started the lease a moment ago.
        const takenAtMs = Date.now();
        const expireSeconds = job.expireInSeconds > 0 ? job.expireInSeconds : settings.leaseSeconds;
        // A job enqueued without a heartbeat (by an older telesync) holds its lease to the end.
        const renewSeconds = job.heartbeatSeconds ?? 0;
        return {
          id: job.id,
          retryCount: job.retryCount,
          job: parsed,
          priority: job.priority,
          leaseEndsAtMs:
            takenAtMs +
            (renewSeconds > 0 ? Math.min(renewSeconds, expireSeconds) : expireSeconds) * 1_000,
          renewSeconds,
          expiresAtMs: takenAtMs + expireSeconds * 1_000,
        };
      }
    },

    waitForWork: (ms, signal) => wakeup.wait(ms, signal),

    async extend(taken) {
      if (taken.renewSeconds <= 0) return false;
      const response = await boss.touch(ACCOUNT_JOBS_QUEUE, {
        id: taken.id,
        retryCount: taken.retryCount,
      });
      // touch() is fenced to this attempt: a job settled or given to another worker is not touched.
      return (response as { affected?: number }).affected === 1;
    },

    hasWorkAhead: (taken) =>
      hasWaitingJobAbove(
        settings.database.root,
        settings.schema,
        ACCOUNT_JOBS_QUEUE,
        taken.job.accountId,
        taken.priority,
        taken.id,
      ),

    async waitForSettled(ms, signal) {
      if (settledListener === undefined) {
        settledListener = listenForNotifications({
          connectionString: settings.connectionString,
          channel: settledChannel(settings.schema),
          onNotify: () => settled.wake(),
          onError: settings.onError,
          reconnectMs: 1_000,
        }).catch((error: unknown) => {
          // Without the notifications the wait is a poll every `ms`.
          settings.onError(coerceError(error));
          return undefined;
        });
        // What settled before the LISTEN is not told: the caller looks again at once.
        await settledListener;
        return;
      }
      await settled.wait(ms, signal);
    },

    async complete(taken) {
      await boss.complete(ACCOUNT_JOBS_QUEUE, { id: taken.id, retryCount: taken.retryCount });
      await notifySettled();
    },

    async fail(taken, reason) {
      await boss.fail(
        ACCOUNT_JOBS_QUEUE,
        { id: taken.id, retryCount: taken.retryCount },
        { message: reason },
      );
      await notifySettled();
    },

    async keepSchedules(schedules, timezone, accountIds) {
      // What the schedule ticks: every stream, and `telesync verify`.
      const tickNames: readonly (StreamName | 'verify')[] = [...settings.streams, 'verify'];
      for (const { stream, cron } of schedules) {
        await boss.schedule(TICKS_QUEUE, cron, { stream }, { tz: timezone, key: stream });
      }
      // A stream turned "off" since: its schedule goes, so stopping it in the config stops it.
      const kept = new Set(schedules.map((schedule) => schedule.stream));
      for (const stream of tickNames) {
        if (!kept.has(stream)) await boss.unschedule(TICKS_QUEUE, stream);
      }
      if (schedules.length === 0) return;
      workerIds.push(
        await boss.work<{ stream?: unknown }>(
          TICKS_QUEUE,
          { batchSize: 1, pollingIntervalSeconds: 10, notifyPollingIntervalSeconds: 60 },
          async ([tick]) => {
            const stream = tickNames.find((name) => name === tick?.data.stream);
            if (stream === undefined) return;
            await queue.enqueue(
              accountIds.map((accountId): AccountJob =>
                stream === 'verify'
                  ? { kind: 'verify', accountId }
                  : { kind: 'sync', accountId, stream },
              ),
            );
          },
        ),
      );
    },

    async stop() {
      wakeup.wake();
      settled.wake();
      await listener?.close();
      await (await settledListener)?.close();
      await boss.stop({ graceful: true, timeout: 10_000 });
    },
  };
  return queue;

  /** Tells a waiting `backfill --queue --wait` that a job settled; it counts the queue again. */
  async function notifySettled(): Promise<void> {
    await notifyChannel(settings.database.root, settledChannel(settings.schema)).catch(
      (error: unknown) => settings.onError(coerceError(error)),
    );
  }
}

/** The counts of each account's jobs, from the rows of findJobStateCounts. */
export function countAccountJobs(
  accountIds: readonly string[],
  rows: readonly JobStateCount[],
): QueueCounts[] {
  return accountIds.map((accountId) => {
    const of = (...states: string[]): number =>
      rows
        .filter((row) => row.account === accountId && states.includes(row.state))
        .reduce((sum, row) => sum + row.count, 0);
    return {
      accountId,
      waiting: of('created', 'retry'),
      active: of('active'),
      failed: of('failed'),
      completed: of('completed'),
    };
  });
}

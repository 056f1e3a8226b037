import type PgBoss from 'pg-boss';
import { STREAM_NAMES, type StreamName } from '../domain/streams.js';
import type { AccountJob, JobQueue, QueueCounts } from './job-queue.js';
import type { JobStateCount } from '../db/repositories/job-queue-repository.js';
import { withAdvisoryLock } from '../db/advisory-lock.js';
import type { Database } from '../db/connect.js';

/**
 * The job queue on pg-boss 10, in the same PostgreSQL as the data, in a schema of its own. Each
 * account has a queue of policy `singleton` (at most one job active in it, whichever worker holds
 * it): that is how one worker at a time owns an account. One queue per account rather than one
 * queue keyed by account because pg-boss fetches a queue's jobs in order and a fetch whose next job
 * is of an account already active returns nothing: one busy account would hold up the others.
 */

export interface PgBossQueueSettings {
  /** PostgreSQL connection string (DATABASE_URL). */
  readonly connectionString: string;
  /** The schema of pg-boss's tables. */
  readonly schema: string;
  /** telesync's database: its advisory lock lets one process at a time create queues. */
  readonly database: Database;
  /**
   * How long a worker holds a job before pg-boss may give it to another (a killed worker's job is
   * retried after this); job handlers stop well before it.
   */
  readonly leaseSeconds: number;
  /** Retries of a failed job, with exponential backoff from `retryDelaySeconds`. */
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  /** Connections of pg-boss's own pool. */
  readonly maxConnections: number;
  /** Whether this process keeps the cron schedules and expires jobs (workers: yes; commands: no). */
  readonly supervise: boolean;
  /** Told of pg-boss's errors (a lost connection, say): it keeps going and reconnects. */
  readonly onError: (error: Error) => void;
}

/** The queue of one account's jobs. */
export function accountQueueName(accountId: string): string {
  return `telesync-account-${accountId}`;
}

/** The queue of the cron ticks of one stream (pg-boss keeps one schedule per queue). */
function tickQueueName(stream: StreamName | 'verify'): string {
  return `telesync-tick-${stream}`;
}

/** pg-boss, loaded on first use: commands that never touch the queue do not pay its start-up. */
async function loadPgBoss(): Promise<typeof PgBoss> {
  // A CommonJS module (`export =`): imported from ESM, its exports are the namespace's default.
  const loaded = (await import('pg-boss')) as unknown as { default: typeof PgBoss };
  return loaded.default;
}

/** How long a process waits for another to finish creating a queue (each takes milliseconds). */
const QUEUE_CREATION_WAIT_MS = 60_000;

/** Sync jobs go before backfill windows of the same account: the schedule must not starve. */
const SYNC_PRIORITY = 10;

/**
 * Creates pg-boss's schema (or migrates it to this version) and stops: what `telesync migrate`
 * runs on PostgreSQL.
 */
export async function installJobSchema(
  settings: Pick<PgBossQueueSettings, 'connectionString' | 'schema' | 'onError'>,
): Promise<void> {
  const Boss = await loadPgBoss();
  const boss = new Boss({
    connectionString: settings.connectionString,
    schema: settings.schema,
    max: 2,
    supervise: false,
    schedule: false,
    migrate: true,
  });
  boss.on('error', settings.onError);
  await boss.start();
  await boss.stop({ graceful: false, wait: true });
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
    // Expired jobs are found by the maintenance pass: run it often so a killed worker's job is
    // retried soon after its lease ends.
    maintenanceIntervalSeconds: Math.max(1, Math.min(30, Math.floor(settings.leaseSeconds / 4))),
    expireInSeconds: settings.leaseSeconds,
  });
  boss.on('error', settings.onError);
  // pg-boss 10 creates a queue as a partition of its job table with a foreign key to its queue
  // table, taking those locks in opposite orders: two creations at once (a backfill enqueuing
  // while workers start) deadlock. So every creation in telesync's processes takes this lock:
  // ours below, and the one pg-boss makes itself when a process that keeps schedules starts (its
  // cron queue; pg-boss ignores that one's failure, so a deadlock there would go unseen).
  const oneCreationAtATime = <T>(create: () => Promise<T>): Promise<T> =>
    withAdvisoryLock(
      settings.database,
      `job-queue-creation:${settings.schema}`,
      { waitMs: QUEUE_CREATION_WAIT_MS, pollMs: 20 },
      create,
    );
  await (settings.supervise ? oneCreationAtATime(() => boss.start()) : boss.start());

  const known = new Set<string>();
  const ensureQueue = async (name: string): Promise<void> => {
    if (known.has(name)) return;
    if ((await boss.getQueue(name)) === null) {
      // Creating a queue that another process created meanwhile does nothing.
      await oneCreationAtATime(() =>
        boss.createQueue(name, {
          name,
          policy: 'singleton',
          retryLimit: settings.retryLimit,
          retryDelay: settings.retryDelaySeconds,
          retryBackoff: true,
          expireInSeconds: settings.leaseSeconds,
        }),
      );
    }
    known.add(name);
  };

  let rotation = 0;
  const workerIds: string[] = [];

  const queue: JobQueue = {
    async enqueue(jobs) {
      const byQueue = new Map<string, PgBoss.JobInsert[]>();
      for (const job of jobs) {
        const name = accountQueueName(job.accountId);
        const list = byQueue.get(name) ?? [];
        list.push({
          name,
          data: job,
          priority: job.kind === 'sync' ? SYNC_PRIORITY : 0,
          expireInSeconds: settings.leaseSeconds,
          retryLimit: settings.retryLimit,
          retryDelay: settings.retryDelaySeconds,
          retryBackoff: true,
        });
        byQueue.set(name, list);
      }
      for (const [name, list] of byQueue) {
        await ensureQueue(name);
        await boss.insert(list);
      }
    },

    async take(accountIds) {
      if (accountIds.length === 0) return undefined;
      const start = rotation++ % accountIds.length;
      for (let step = 0; step < accountIds.length; step++) {
        const name = accountQueueName(accountIds[(start + step) % accountIds.length]!);
        await ensureQueue(name);
        const [job] = await boss.fetch<AccountJob>(name, { batchSize: 1, includeMetadata: true });
        if (job === undefined) continue;
        const leaseSeconds = leaseOf(job.expireIn, settings.leaseSeconds);
        return {
          id: job.id,
          queue: name,
          job: job.data,
          // From this process's clock, not the database's: the fetch started the lease a moment ago.
          leaseEndsAtMs: Date.now() + leaseSeconds * 1_000,
        };
      }
      return undefined;
    },

    async complete(taken) {
      await boss.complete(taken.queue, taken.id);
    },

    async fail(taken, reason) {
      await boss.fail(taken.queue, taken.id, { message: reason });
    },

    async keepSchedules(schedules, timezone, accountIds) {
      for (const { stream, cron } of schedules) {
        const name = tickQueueName(stream);
        await ensureQueue(name);
        await boss.schedule(name, cron, {}, { tz: timezone });
        workerIds.push(
          await boss.work(name, { batchSize: 1 }, async () => {
            await queue.enqueue(
              accountIds.map((accountId): AccountJob =>
                stream === 'verify'
                  ? { kind: 'verify', accountId }
                  : { kind: 'sync', accountId, stream },
              ),
            );
          }),
        );
      }
      // A stream turned "off" since: its schedule goes, so stopping it in the config stops it.
      const kept = new Set(schedules.map((schedule) => schedule.stream));
      for (const stream of [...STREAM_NAMES, 'verify' as const]) {
        if (!kept.has(stream) && (await boss.getQueue(tickQueueName(stream))) !== null) {
          await boss.unschedule(tickQueueName(stream));
        }
      }
    },

    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: 10_000 });
    },
  };
  return queue;
}

/** The lease of a job in seconds, from pg-boss's interval. */
function leaseOf(interval: PgBoss.PostgresInterval, fallback: number): number {
  const seconds =
    (interval.days ?? 0) * 86_400 +
    (interval.hours ?? 0) * 3_600 +
    (interval.minutes ?? 0) * 60 +
    (interval.seconds ?? 0) +
    (interval.milliseconds ?? 0) / 1_000;
  return seconds > 0 ? seconds : fallback;
}

/** The counts of each account's queue, from the rows of findJobStateCounts. */
export function countAccountJobs(
  accountIds: readonly string[],
  rows: readonly JobStateCount[],
): QueueCounts[] {
  return accountIds.map((accountId) => {
    const name = accountQueueName(accountId);
    const of = (...states: string[]): number =>
      rows
        .filter((row) => row.queue === name && states.includes(row.state))
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

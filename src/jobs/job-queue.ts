import type { StreamName } from '../domain/streams.js';

/**
 * The job queue as telesync uses it (the port; pg-boss-queue.ts is the adapter). Work is owned by
 * account: at most one of an account's jobs is active anywhere at a time, so one worker at a time
 * holds an account and runs it under that account's one limiter.
 */

/**
 * One job: a sync of one stream of one account, or a backfill of its trunk calls over a range of
 * windows (a run reads the windows of the range its ledger does not hold yet).
 */
export type AccountJob =
  | { readonly kind: 'sync'; readonly accountId: string; readonly stream: StreamName }
  | {
      readonly kind: 'backfill-window';
      readonly accountId: string;
      /** ISO instants, microsecond text: [start, end). */
      readonly start: string;
      readonly end: string;
      /** The backfill this window belongs to (the `--queue` command that enqueued it). */
      readonly backfillId: string;
    }
  /** `telesync verify` of the account's whole retrievable range (TELESYNC_VERIFY_CRON). */
  | { readonly kind: 'verify'; readonly accountId: string };

/** A job taken from the queue, with what settling it needs. */
export interface TakenJob {
  readonly id: string;
  /** Which attempt this is: settling it leaves a later attempt (after the lease) alone. */
  readonly retryCount: number;
  readonly job: AccountJob;
  /** The job's priority in the queue: a job of the account with a higher one goes first. */
  readonly priority: number;
  /**
   * Epoch milliseconds after which the queue may give the job to another worker, unless `extend`
   * renews the lease first.
   */
  readonly leaseEndsAtMs: number;
  /** How far each `extend` moves the lease, in seconds; 0 when the lease cannot be renewed. */
  readonly renewSeconds: number;
  /** Epoch milliseconds after which the lease cannot be renewed any further. */
  readonly expiresAtMs: number;
}

/** Counts of one account's queue by state. */
export interface QueueCounts {
  readonly accountId: string;
  /** Created or waiting for a retry. */
  readonly waiting: number;
  readonly active: number;
  /** Out of retries. */
  readonly failed: number;
  readonly completed: number;
}

export interface JobQueue {
  /** Adds jobs (in order). */
  enqueue(jobs: readonly AccountJob[]): Promise<void>;
  /**
   * Takes the next job of any account that has no job active; undefined when none is ready. A job
   * whose data is malformed is failed with the reason on the way, never returned.
   */
  take(): Promise<TakenJob | undefined>;
  /**
   * Waits until jobs may have been enqueued (a notification) or `ms` passed, whichever is first;
   * returns at once when `signal` aborts.
   */
  waitForWork(ms: number, signal: AbortSignal): Promise<void>;
  /**
   * Renews the lease of a job in hand by its `renewSeconds` from now. False when the job is no
   * longer this attempt's (settled, or given to another worker after a lease that lapsed).
   */
  extend(taken: TakenJob): Promise<boolean>;
  /** Whether another job of the account waits that would go before this one if it were re-queued. */
  hasWorkAhead(taken: TakenJob): Promise<boolean>;
  /**
   * Waits until a job may have been settled by some worker (a notification) or `ms` passed,
   * whichever is first; returns at once when `signal` aborts.
   */
  waitForSettled(ms: number, signal: AbortSignal): Promise<void>;
  /** The job is done. */
  complete(taken: TakenJob): Promise<void>;
  /** The job failed: retried later with backoff, until its retries run out. */
  fail(taken: TakenJob, reason: string): Promise<void>;
  /**
   * Keeps one cron schedule per stream (deduplicated across every process that calls this): each
   * tick enqueues a sync job of that stream for every account `onTick` returns.
   */
  keepSchedules(
    schedules: readonly { readonly stream: StreamName | 'verify'; readonly cron: string }[],
    timezone: string,
    accountIds: readonly string[],
  ): Promise<void>;
  /** Stops listening and closes connections; jobs in hand must have been settled first. */
  stop(): Promise<void>;
}

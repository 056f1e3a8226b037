import type { JobQueue, TakenJob } from './job-queue.js';

/** Why a job in hand was told to stop. */
export type LeaseStop =
  /** Its lease could not be renewed (the database out of reach) and is about to end. */
  | 'lease-ending'
  /** The queue no longer holds the job for this attempt: another worker may have it. */
  | 'lease-lost'
  /** It has had its turn and other work waits for the account or for this worker's place. */
  | 'turn-over';

export interface LeaseKeeperOptions {
  readonly queue: Pick<JobQueue, 'extend'>;
  readonly taken: TakenJob;
  /** TELESYNC_JOB_LEASE_SECONDS: sets the margin kept before the lease ends (leaseMarginMs). */
  readonly leaseSeconds: number;
  /**
   * How long a job runs before it asks `shouldYield` at each renewal; a job the queue cannot
   * renew stops about then anyway.
   */
  readonly turnMs: number;
  /** Asked at each renewal once the turn is over: true stops the job, to be put back. */
  readonly shouldYield: () => Promise<boolean>;
  readonly now: () => number;
}

export interface LeaseKeeper {
  /** Aborts when the job must stop: `reason` then says why. */
  readonly signal: AbortSignal;
  readonly reason: () => LeaseStop | undefined;
  /** Stops renewing (the job has ended). */
  release(): void;
}

/** The part of the lease left unused, so the batch in hand commits before another worker may start. */
export function leaseMarginMs(leaseSeconds: number): number {
  return Math.max(5_000, leaseSeconds * 250);
}

/**
 * Holds a job's lease while it runs: renews it every quarter of a lease, so a job may take as long
 * as its work (re-reading nothing at a lease boundary) while a killed worker's job still goes to
 * another one lease after the last renewal. The job is stopped a margin before the lease it holds
 * ends (renewals failing, or a job whose lease cannot be renewed), at once when the queue says the
 * job is no longer this attempt's, and after its turn when other work waits (a sync of the account
 * goes before its backfill; a worker above its fair share lets an account go).
 */
export function keepLease(options: LeaseKeeperOptions): LeaseKeeper {
  const { taken, now } = options;
  const marginMs = leaseMarginMs(options.leaseSeconds);
  const startedAtMs = now();
  const controller = new AbortController();
  let reason: LeaseStop | undefined;
  let leaseEndsAtMs = taken.leaseEndsAtMs;
  let deadline: NodeJS.Timeout | undefined;
  let renewal: NodeJS.Timeout | undefined;
  let renewing = false;
  let released = false;

  const stop = (why: LeaseStop): void => {
    if (controller.signal.aborted) return;
    reason = why;
    release();
    controller.abort(new Error(`job ${taken.id}: ${why}`));
  };
  const armDeadline = (minimumMs: number): void => {
    clearTimeout(deadline);
    const endMs = Math.min(leaseEndsAtMs, taken.expiresAtMs) - marginMs;
    deadline = setTimeout(() => stop('lease-ending'), Math.max(minimumMs, endMs - now()));
  };
  const renew = async (): Promise<void> => {
    if (renewing || released) return;
    renewing = true;
    try {
      const askedAtMs = now();
      const held = await options.queue.extend(taken).catch(() => undefined);
      if (released) return;
      if (held === false) return stop('lease-lost');
      if (held === true) {
        leaseEndsAtMs = askedAtMs + taken.renewSeconds * 1_000;
        armDeadline(0);
      }
      if (now() - startedAtMs >= options.turnMs && (await options.shouldYield().catch(() => false)))
        stop('turn-over');
    } finally {
      renewing = false;
    }
  };
  function release(): void {
    released = true;
    clearTimeout(deadline);
    clearInterval(renewal);
  }

  // At least a second: a job taken late in its lease still gets to commit what it reads.
  armDeadline(1_000);
  if (taken.renewSeconds > 0) {
    renewal = setInterval(() => void renew(), Math.max(1_000, (taken.renewSeconds * 1_000) / 4));
  }
  return { signal: controller.signal, reason: () => reason, release };
}

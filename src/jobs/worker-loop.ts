import { coerceError, describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import { sleep } from '../util/sleep.js';
import type { JobQueue, TakenJob } from './job-queue.js';

export interface WorkerLoopOptions {
  readonly queue: JobQueue;
  /** Jobs (so accounts) in hand at once. */
  readonly concurrency: number;
  /**
   * The most jobs this worker should hold now, for the workers to share the accounts (see
   * FairShare); below `concurrency` when other workers are there to take the rest. Omitted: only
   * `concurrency` bounds it. A worker with nothing in hand always takes a job.
   */
  readonly fairShare?: () => Promise<number>;
  /** How long an idle worker waits for a notification of new jobs before it looks anyway. */
  readonly pollMs: number;
  /** Runs and settles one job; expected not to throw (a throw is logged). */
  readonly handle: (taken: TakenJob) => Promise<void>;
  /** Aborted to drain: no new job is taken, the loop returns when the jobs in hand end. */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/**
 * Takes jobs while there is room, up to `concurrency` (and `fairShare`) in hand. With none to take
 * it waits for new jobs to be enqueued, for one of its own to end (the account's next job may then
 * be due), or `pollMs`; when the queue cannot be reached (a lost database connection: pg-boss
 * reconnects) it waits `pollMs`. Returns once drained.
 */
export async function runWorkerLoop(options: WorkerLoopOptions): Promise<void> {
  const inHand = new Set<Promise<void>>();
  let queueDown = false;
  while (!options.signal.aborted) {
    if (inHand.size >= options.concurrency) {
      await Promise.race(inHand);
      continue;
    }
    if (inHand.size > 0 && options.fairShare !== undefined) {
      const share = await options.fairShare().catch(() => options.concurrency);
      if (inHand.size >= share) {
        // Another worker takes the next account; this one looks again when a job of its own ends
        // or after a poll, whichever comes first (a worker that stopped frees its share).
        await Promise.race([
          ...inHand,
          sleep(options.pollMs, options.signal).catch(() => undefined),
        ]);
        continue;
      }
    }
    let taken: TakenJob | undefined;
    try {
      taken = await options.queue.take();
      if (queueDown) options.log.info('the job queue answers again');
      queueDown = false;
    } catch (error) {
      if (!queueDown)
        options.log.warn(
          { err: coerceError(error) },
          `cannot take jobs (${describeError(error)}); retrying`,
        );
      queueDown = true;
    }
    if (taken === undefined) {
      await (queueDown
        ? sleep(options.pollMs, options.signal).catch(() => undefined)
        : Promise.race([...inHand, options.queue.waitForWork(options.pollMs, options.signal)]));
      continue;
    }
    const job = taken;
    const running: Promise<void> = options
      .handle(job)
      .catch((error: unknown) =>
        options.log.error(
          { err: coerceError(error), job: job.id },
          `job ${job.id} could not be settled (${describeError(error)}); the queue gives it out again when its lease ends`,
        ),
      )
      .finally(() => inHand.delete(running));
    inHand.add(running);
  }
  await Promise.allSettled([...inHand]);
}

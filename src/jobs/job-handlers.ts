import type { TelephonyClient } from '../api/telephony-client.js';
import { runStream, type SyncDependencies, type SyncResult } from '../sync/run-stream.js';
import { toEpochMicros } from '../util/micros.js';
import {
  planVerifyDays,
  retrievableRange,
  verifyTrunkCalls,
  type AccountVerification,
  type VerifyDependencies,
} from '../sync/verify-trunk-calls.js';
import type { AccountJob, JobQueue, TakenJob } from './job-queue.js';
import { keepLease, leaseMarginMs } from './lease-keeper.js';

/**
 * How a job ended, for the worker's log and counters. `released`: its lease was lost, so the
 * queue gives it out again and this worker leaves it alone.
 */
export type JobOutcome = 'completed' | 'failed' | 'requeued' | 'released';

/**
 * Runs one job, holding its lease (keepLease), and settles it in the queue: done → complete;
 * failed or skipped (the account's stream is held elsewhere) → fail, retried with backoff; stopped
 * (this worker is draining, the lease could not be renewed, or its turn is over while other work
 * waits) → enqueued again and completed, so a worker continues from the last committed batch at
 * once rather than after the lease.
 */
export async function handleAccountJob(
  deps: SyncDependencies,
  client: TelephonyClient,
  queue: JobQueue,
  taken: TakenJob,
  options: {
    readonly signal: AbortSignal;
    readonly leaseSeconds: number;
    /** Asked once the job has had a lease's turn: true puts it back behind other work. */
    readonly shouldYield: () => Promise<boolean>;
    readonly now: () => number;
  },
): Promise<{ outcome: JobOutcome; result: SyncResult }> {
  const lease = keepLease({
    queue,
    taken,
    leaseSeconds: options.leaseSeconds,
    turnMs: options.leaseSeconds * 1_000 - leaseMarginMs(options.leaseSeconds),
    shouldYield: options.shouldYield,
    now: options.now,
  });
  let result: SyncResult;
  try {
    result = await runJob(deps, client, taken.job, AbortSignal.any([options.signal, lease.signal]));
  } finally {
    lease.release();
  }
  if (lease.reason() === 'lease-lost') return { outcome: 'released', result };
  if (result.status === 'succeeded') {
    await queue.complete(taken);
    return { outcome: 'completed', result };
  }
  if (result.status === 'stopped') {
    await queue.enqueue([taken.job]);
    await queue.complete(taken);
    return { outcome: 'requeued', result };
  }
  await queue.fail(taken, result.error ?? result.status);
  return { outcome: 'failed', result };
}

/**
 * A verify job: every day of the account the service still counts. A day that differs is a
 * finding (kept in day_verifications, shown by status and /metrics), not a failure of the job;
 * a verify that could not run (the service, the database, another verify of the account) fails
 * it, and it is retried.
 */
export async function handleVerifyJob(
  deps: VerifyDependencies,
  client: TelephonyClient,
  queue: JobQueue,
  taken: TakenJob,
): Promise<AccountVerification> {
  const now = deps.clock();
  const days = planVerifyDays(now, retrievableRange(now), deps.settings);
  const verification = await verifyTrunkCalls(deps, client, days);
  if (verification.status === 'verified') await queue.complete(taken);
  else await queue.fail(taken, verification.error ?? verification.status);
  return verification;
}

function runJob(
  deps: SyncDependencies,
  client: TelephonyClient,
  job: AccountJob,
  signal: AbortSignal,
): Promise<SyncResult> {
  if (job.kind === 'verify') throw new Error('a verify job is handled by handleVerifyJob');
  if (job.kind === 'sync') {
    return runStream(deps, client, {
      stream: job.stream,
      command: 'worker',
      lockWaitMs: 0,
      signal,
    });
  }
  return runStream(deps, client, {
    stream: 'trunk_calls',
    command: 'worker backfill',
    backfill: { start: toEpochMicros(job.start), end: toEpochMicros(job.end) },
    lockWaitMs: 0,
    signal,
  });
}

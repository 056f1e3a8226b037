import type { TelephonyClient } from '../api/telephony-client.js';
import {
  planVerifyDays,
  retrievableRange,
  verifyTrunkCalls,
  type AccountVerification,
  type VerifyDependencies,
} from '../sync/verify-trunk-calls.js';
import type { Logger } from '../util/logger.js';
import { mapConcurrently } from '../util/map-concurrently.js';
import type { SchedulerMetrics } from './metrics.js';
import { createNodeCronTask, type CreateCronTask } from './scheduler.js';

/** `telesync verify` on a cron of its own (TELESYNC_VERIFY_CRON), beside the streams' ticks. */
export interface VerifySchedule {
  start(): void;
  /** No tick starts from now on; a verify in hand gives up its waits and gets `timeoutMs` to end. */
  stop(timeoutMs: number): Promise<void>;
}

export interface VerifyScheduleOptions {
  readonly cron: string;
  readonly timezone: string;
  readonly clients: readonly TelephonyClient[];
  /** Accounts verified at once. */
  readonly accountConcurrency: number;
  readonly deps: VerifyDependencies;
  readonly metrics: SchedulerMetrics;
  readonly log: Logger;
  readonly createCronTask?: CreateCronTask;
}

/**
 * Each tick verifies every account's retrievable range. Verify takes a lock of its own, never a
 * stream's: a tick neither waits for the syncs nor holds them up. Its findings go to
 * day_verifications, where status, the page and /metrics read them.
 */
export function createVerifySchedule(options: VerifyScheduleOptions): VerifySchedule {
  const { deps, log } = options;
  const stopping = new AbortController();
  let inHand: Promise<AccountVerification[]> | undefined;
  const tick = async (): Promise<void> => {
    const now = deps.clock();
    const days = planVerifyDays(now, retrievableRange(now), deps.settings);
    inHand = mapConcurrently(options.clients, options.accountConcurrency, (client) =>
      verifyTrunkCalls(deps, client, days, { stopSignal: stopping.signal }),
    );
    for (const verification of await inHand) {
      const differing = verification.days.filter((day) => day.result === 'differs');
      const fields = {
        account: verification.accountId,
        status: verification.status,
        days: verification.days.length,
        differing: differing.map((day) => day.day),
      };
      if (verification.status !== 'verified')
        log.warn(fields, `verify ${verification.status}: ${verification.error ?? ''}`);
      else if (differing.length > 0)
        log.warn(fields, `verify: ${differing.length} day(s) differ from the service`);
      else log.info(fields, `verify: ${verification.days.length} days agree`);
    }
  };
  const task = (options.createCronTask ?? createNodeCronTask)(
    { name: 'verify', cron: options.cron, timezone: options.timezone },
    {
      tick,
      missed: (reason, slot) => {
        options.metrics.recordMissedTick('verify', reason);
        log.warn({ slot: slot.toISOString(), reason }, `verify: tick ${reason}`);
      },
    },
    log,
  );
  return {
    start: () => task.start(),
    async stop(timeoutMs) {
      task.stop();
      stopping.abort();
      if (inHand === undefined) return;
      await Promise.race([
        inHand.catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, timeoutMs).unref()),
      ]);
    },
  };
}

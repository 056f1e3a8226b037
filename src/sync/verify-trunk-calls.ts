import type { RequestOptions } from '../api/transport.js';
import type { TelephonyClient } from '../api/telephony-client.js';
import { LockBusyError, withAdvisoryLock } from '../db/advisory-lock.js';
import type { Database } from '../db/connect.js';
import { findStoredDays, type StoredDay } from '../db/repositories/coverage-repository.js';
import {
  findVerifiedTotals,
  upsertDayVerifications,
  type VerifiedTotals,
} from '../db/repositories/day-verifications-repository.js';
import {
  planComparedDays,
  verifyResult,
  type ComparedDay,
  type DayComparison,
  type VerifyResult,
} from '../domain/verify-days.js';
import { describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import { mapConcurrently } from '../util/map-concurrently.js';
import { MICROS_PER_DAY, type EpochMicros } from '../util/micros.js';
import { windowFilters } from './streams/read-trunk-call-window.js';
import type { SyncSettings } from './sync-settings.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';
import { horizonStart, plannerSettings, settledEnd, type TimeWindow } from './window-planner.js';

/**
 * `telesync verify`: for each UTC day of an account, the service's count of the calls that ended
 * in it (one request with limit 1, as the incremental probe asks) beside the trunk_calls rows
 * stored for it. Reads only, but for its findings in day_verifications; it takes a lock of its own
 * (`<account>:verify`), never a stream's, so it neither waits for a sync nor holds one up.
 */

/** What verify needs from the process around it. */
export interface VerifyDependencies {
  readonly database: Database;
  readonly settings: SyncSettings;
  readonly log: Logger;
  /** Count requests of one account in flight at once (the transport's limiter sets the rate). */
  readonly requestConcurrency: number;
  readonly clock: () => EpochMicros;
}

/** One compared day with what it found. */
export interface VerifiedDay extends DayComparison {
  readonly result: VerifyResult;
}

export interface AccountVerification {
  readonly accountId: string;
  /** `skipped`: another verify of the account held its lock; `failed`: see error. */
  readonly status: 'verified' | 'skipped' | 'failed';
  readonly verifiedAt: EpochMicros;
  /** Every compared day, oldest first. */
  readonly days: readonly VerifiedDay[];
  /** The stored side of those days, summed exactly. */
  readonly totals: VerifiedTotals;
  readonly error?: string;
}

/**
 * The compared part of each UTC day `range` touches at `now`: from the 90-day cut-off (telesync's
 * horizon, whose margin keeps the count from being refused as too old) to now minus the settle lag.
 */
export function planVerifyDays(
  now: EpochMicros,
  range: TimeWindow,
  settings: SyncSettings,
): ComparedDay[] {
  return planComparedDays(range, horizonStart(now), settledEnd(now, plannerSettings(settings)));
}

/** Everything the service still counts at `now`: the last 90 days (cut by planVerifyDays). */
export function retrievableRange(now: EpochMicros): TimeWindow {
  return { start: now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY, end: now };
}

/**
 * Verifies `days` of the client's account and records the findings; never throws (a failure is
 * the result's status and error).
 */
export async function verifyTrunkCalls(
  deps: VerifyDependencies,
  client: TelephonyClient,
  days: readonly ComparedDay[],
  options: RequestOptions = {},
): Promise<AccountVerification> {
  const accountId = client.authId;
  const verifiedAt = deps.clock();
  const none = { calls: 0, amount: '0', billedSeconds: 0 };
  try {
    return await withAdvisoryLock(deps.database, `${accountId}:verify`, { waitMs: 0 }, async () => {
      const counts = await mapConcurrently(days, deps.requestConcurrency, (day) =>
        client.countTrunkCalls(windowFilters(day), options),
      );
      const first = days[0];
      const last = days.at(-1);
      // Counted after the service answered: a window a sync completes meanwhile is then stored.
      const stored: ReadonlyMap<string, StoredDay> | undefined =
        first === undefined || last === undefined
          ? undefined
          : (await findStoredDays(deps.database.db, [accountId], first.start, last.end)).get(
              accountId,
            );
      const compared: VerifiedDay[] = days.map((day, index) => {
        const mine = stored?.get(day.day);
        const comparison: DayComparison = {
          ...day,
          serviceCount: counts[index] ?? 0,
          storedCount: mine?.rows ?? 0,
          storedAmount: mine?.billedAmount ?? '0',
          billedSeconds: mine?.billedSeconds ?? 0,
        };
        return { ...comparison, result: verifyResult(comparison) };
      });
      await upsertDayVerifications(deps.database.db, accountId, compared, verifiedAt, (day) =>
        verifyResult(day),
      );
      const totals = await findVerifiedTotals(
        deps.database.db,
        accountId,
        compared.map((day) => day.day),
      );
      return { accountId, status: 'verified' as const, verifiedAt, days: compared, totals };
    });
  } catch (error) {
    if (error instanceof LockBusyError) {
      return {
        accountId,
        status: 'skipped',
        verifiedAt,
        days: [],
        totals: none,
        error: `another telesync verify of ${accountId} is running`,
      };
    }
    const message = describeError(error);
    deps.log.error({ account: accountId, err: error }, `verify failed: ${message}`);
    return { accountId, status: 'failed', verifiedAt, days: [], totals: none, error: message };
  }
}

/** What `--repair` did to the days that differed. */
export interface RepairOutcome {
  /** Rows the re-read added to those days. */
  readonly rowsAdded: number;
  /** Rows still stored on those days that the service no longer lists: kept, never deleted. */
  readonly noLongerListed: number;
  /** Days of the account that still differ after the repair. */
  readonly stillDiffering: readonly string[];
}

/**
 * Compares a day's findings before and after a repair: the rows it added, and the rows the
 * service no longer lists (stored beyond its count), which telesync keeps.
 */
export function repairOutcome(
  before: readonly VerifiedDay[],
  after: readonly VerifiedDay[],
): RepairOutcome {
  const earlier = new Map(before.map((day) => [day.day, day]));
  let rowsAdded = 0;
  let noLongerListed = 0;
  for (const day of after) {
    rowsAdded += Math.max(0, day.storedCount - (earlier.get(day.day)?.storedCount ?? 0));
    noLongerListed += Math.max(0, day.storedCount - day.serviceCount);
  }
  return {
    rowsAdded,
    noLongerListed,
    stillDiffering: after.filter((day) => day.result === 'differs').map((day) => day.day),
  };
}

import {
  findCoverageWindows,
  findStoredDays,
  findStoredRowsInParts,
  findTrackedFrom,
  type StoredDay,
} from '../db/repositories/coverage-repository.js';
import type { Tables } from '../db/schema.js';
import {
  countedParts,
  coverageSpan,
  planCoverageDays,
  unreadNearHorizon,
  type CoverageDay,
} from '../domain/coverage-days.js';
import { horizonStart } from '../sync/window-planner.js';
import { epochMicrosFromMillis, type EpochMicros } from '../util/micros.js';
import type { Kysely } from 'kysely';

/** The trunk-call coverage of one account, day by day. */
export interface AccountCoverage {
  readonly accountId: string;
  /** The oldest instant the service still serves, epoch microseconds. */
  readonly horizonStart: EpochMicros;
  /** {@link COVERAGE_DAYS} days, oldest first. */
  readonly days: readonly CoverageDay[];
  /** The billed amount stored per day (`YYYY-MM-DD` → exact decimal text), with `storedRows`. */
  readonly billedByDay: ReadonlyMap<string, string>;
}

/** The days of one account about to leave the horizon unread (the horizon alarm). */
export interface HorizonUnread {
  readonly accountId: string;
  /** `YYYY-MM-DD`, oldest first; empty when all is well. */
  readonly days: readonly string[];
}

/**
 * Reads the ledger (and, with `storedRows`, the rows stored per day: a scan of 90 days of
 * trunk_calls by index, which the status page needs and the alarm does not) and plans the
 * coverage days of each account at `nowMs`.
 */
export async function readCoverage(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  nowMs: number,
  options: { readonly storedRows: boolean },
): Promise<AccountCoverage[]> {
  const now = epochMicrosFromMillis(nowMs);
  const span = coverageSpan(now);
  const horizon = horizonStart(now);
  const [windows, trackedFrom, stored] = await Promise.all([
    findCoverageWindows(db, accountIds, span.start, span.end),
    findTrackedFrom(db, accountIds),
    options.storedRows
      ? findStoredDays(db, accountIds, span.start, span.end)
      : Promise.resolve(new Map<string, Map<string, StoredDay>>()),
  ]);
  // The oldest day's count starts at the cut-off as it was: only the rows in that part compare.
  const storedByDay = new Map<string, ReadonlyMap<string, number>>();
  if (options.storedRows)
    for (const accountId of accountIds) {
      const parts = countedParts(windows.get(accountId) ?? [], now);
      const whole = new Map(
        [...(stored.get(accountId) ?? new Map<string, StoredDay>())].map(([day, found]) => [
          day,
          found.rows,
        ]),
      );
      storedByDay.set(
        accountId,
        parts.length === 0
          ? whole
          : new Map([...whole, ...(await findStoredRowsInParts(db, accountId, parts))]),
      );
    }
  return accountIds.map((accountId) => {
    const days = [...(stored.get(accountId) ?? new Map<string, StoredDay>())];
    return {
      accountId,
      horizonStart: horizon,
      billedByDay: new Map(days.map(([day, found]) => [day, found.billedAmount])),
      days: planCoverageDays({
        windows: windows.get(accountId) ?? [],
        storedRowsByDay: storedByDay.get(accountId) ?? new Map(),
        trackedFrom: trackedFrom.get(accountId) ?? null,
        now,
        horizonStart: horizon,
      }),
    };
  });
}

/**
 * The horizon alarm of each account: its days within `alarmDays` of the horizon that are
 * incomplete, or unread although asked for (see unreadNearHorizon). `alarmDays` 0: none.
 */
export function horizonUnread(
  coverage: readonly AccountCoverage[],
  alarmDays: number,
): HorizonUnread[] {
  return coverage.map((account) => ({
    accountId: account.accountId,
    days: unreadNearHorizon(account.days, account.horizonStart, alarmDays).map((day) => day.day),
  }));
}

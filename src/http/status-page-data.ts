import type { Kysely } from 'kysely';
import { findWatermarks } from '../db/repositories/health-repository.js';
import { findRecentRuns, findRejectSummaries } from '../db/repositories/status-page-repository.js';
import type { Tables } from '../db/schema.js';
import { watermarkLagSeconds } from '../domain/freshness.js';
import { horizonUnread, readCoverage } from '../scheduler/read-coverage.js';
import { horizonStart } from '../sync/window-planner.js';
import { epochMicrosFromMillis, formatIsoMicros, toEpochMicros } from '../util/micros.js';
import type { StatusPageView, VerificationView } from './status-page.js';
import {
  findDayVerifications,
  type DayVerification,
} from '../db/repositories/day-verifications-repository.js';
import { retrievableSinceDay } from '../domain/verify-days.js';

/** Runs listed per stream on the status page. */
export const STATUS_PAGE_RUNS = 5;

export interface StatusPageSource {
  readonly db: Kysely<Tables>;
  readonly accountIds: readonly string[];
  /** The streams to show, each with its cron expression or "off", in display order. */
  readonly schedule: readonly { readonly stream: string; readonly cron: string }[];
  readonly horizonAlarmDays: number;
  readonly version: string;
}

/**
 * Reads what the status page shows at `nowMs` (epoch milliseconds): per account and stream the
 * watermark, its lag, the latest runs and the rejects; per account the trunk_calls coverage of
 * the last 90 UTC days and the horizon alarm's days.
 */
export async function readStatusPage(
  source: StatusPageSource,
  nowMs: number,
): Promise<StatusPageView> {
  const { db, accountIds } = source;
  const streams = source.schedule.map((entry) => entry.stream);
  const [watermarks, runs, rejects, coverage, verified] = await Promise.all([
    findWatermarks(db, accountIds),
    findRecentRuns(db, accountIds, streams, STATUS_PAGE_RUNS),
    findRejectSummaries(db, accountIds),
    readCoverage(db, accountIds, nowMs, { storedRows: true }),
    findDayVerifications(db, accountIds, retrievableSinceDay(epochMicrosFromMillis(nowMs))),
  ]);
  const key = (accountId: string, stream: string) => `${accountId}\u0000${stream}`;
  const watermarkOf = new Map(watermarks.map((row) => [key(row.accountId, row.stream), row]));
  const rejectsOf = new Map(rejects.map((row) => [key(row.accountId, row.stream), row]));
  const unread = new Map(
    horizonUnread(coverage, source.horizonAlarmDays).map((row) => [row.accountId, row.days]),
  );
  return {
    generatedAt: new Date(nowMs).toISOString(),
    horizonStart: formatIsoMicros(horizonStart(epochMicrosFromMillis(nowMs))),
    horizonAlarmDays: source.horizonAlarmDays,
    version: source.version,
    accounts: coverage.map((account) => ({
      accountId: account.accountId,
      coverage: account.days,
      billedByDay: account.billedByDay,
      unreadNearHorizon: unread.get(account.accountId) ?? [],
      ...verificationView(verified.get(account.accountId)),
      streams: source.schedule.map(({ stream, cron }) => {
        const watermark = watermarkOf.get(key(account.accountId, stream))?.watermark ?? null;
        const rejected = rejectsOf.get(key(account.accountId, stream));
        return {
          stream,
          schedule: cron,
          watermark,
          lagSeconds: watermark === null ? null : watermarkLagSeconds(watermark, nowMs),
          runs: runs.get(key(account.accountId, stream)) ?? [],
          rejects: rejected?.records ?? 0,
          lastRejectAt: rejected?.lastSeenAt ?? null,
        };
      }),
    })),
  };
}

/** The page's view of an account's verified days; nothing when none was verified. */
function verificationView(days: ReadonlyMap<string, DayVerification> | undefined): {
  verification?: VerificationView;
} {
  if (days === undefined || days.size === 0) return {};
  const all = [...days.values()];
  const last = all.reduce((latest, day) =>
    toEpochMicros(day.verifiedAt) > toEpochMicros(latest.verifiedAt) ? day : latest,
  );
  return {
    verification: {
      lastVerifiedAt: last.verifiedAt,
      days: Object.fromEntries(all.map((day) => [day.day, day.result])),
    },
  };
}

import { sql, type Kysely } from 'kysely';
import type { RunStatus, Tables } from '../schema.js';

/** The per-stream queries of the status page: recent runs and quarantined records. */

/** One run as the status page lists it. */
export interface RecentRun {
  readonly id: number;
  readonly command: string;
  readonly status: RunStatus;
  /** ISO text. */
  readonly startedAt: string;
  /** ISO text; null while the run goes on (or when its process died). */
  readonly finishedAt: string | null;
  readonly recordsFetched: number;
  readonly recordsChanged: number;
  readonly recordsRejected: number;
  readonly requests: number;
  /** Milliseconds its reading waited for its rows to be written (sync_runs.load_wait_ms). */
  readonly loadWaitMs: number;
  readonly error: string | null;
}

/** The quarantined records of one account × stream. */
export interface RejectSummary {
  readonly accountId: string;
  readonly stream: string;
  readonly records: number;
  /** When a rejected record was last seen (ISO text). */
  readonly lastSeenAt: string;
}

/**
 * The latest `limit` runs (newest first) of every account × stream given, keyed
 * `account\u0000stream`. One small query per pair, each a walk down sync_runs_recent_idx.
 */
export async function findRecentRuns(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  streams: readonly string[],
  limit: number,
): Promise<Map<string, RecentRun[]>> {
  const pairs = accountIds.flatMap((accountId) => streams.map((stream) => ({ accountId, stream })));
  const entries = await Promise.all(
    pairs.map(async ({ accountId, stream }) => {
      const rows = await db
        .selectFrom('sync_runs')
        .select([
          'id',
          'command',
          'status',
          'started_at',
          'finished_at',
          'records_fetched',
          'records_changed',
          'records_rejected',
          'requests',
          'load_wait_ms',
          'error',
        ])
        .where('account_id', '=', accountId)
        .where('stream', '=', stream)
        .orderBy('started_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      const runs = rows.map((row): RecentRun => ({
        id: row.id,
        command: row.command,
        status: row.status,
        startedAt: row.started_at,
        finishedAt: row.finished_at,
        recordsFetched: row.records_fetched,
        recordsChanged: row.records_changed,
        recordsRejected: row.records_rejected,
        requests: row.requests,
        loadWaitMs: row.load_wait_ms,
        error: row.error,
      }));
      return [`${accountId}\u0000${stream}`, runs] as const;
    }),
  );
  return new Map(entries);
}

/** How many records of each account × stream are quarantined in rejected_records. */
export async function findRejectSummaries(
  db: Kysely<Tables>,
  accountIds: readonly string[],
): Promise<RejectSummary[]> {
  if (accountIds.length === 0) return [];
  const rows = await db
    .selectFrom('rejected_records')
    .select([
      'account_id',
      'stream',
      sql<number>`count(*)`.as('records'),
      sql<string>`max(last_seen_at)`.as('last_seen_at'),
    ])
    .where('account_id', 'in', accountIds)
    .groupBy(['account_id', 'stream'])
    .orderBy('account_id')
    .orderBy('stream')
    .execute();
  return rows.map((row) => ({
    accountId: row.account_id,
    stream: row.stream,
    records: Number(row.records),
    lastSeenAt: row.last_seen_at,
  }));
}

import { sql, type Kysely } from 'kysely';
import type { RunStatus, Tables } from '../schema.js';

/** What a run reports about itself in its sync_runs row. */
export interface RunCounts {
  windowsPlanned: number;
  windowsCompleted: number;
  requests: number;
  retries: number;
  waitMs: number;
  /** Time the run's reading waited for the loader's room (LoadCounters.loadWaitMs). */
  loadWaitMs: number;
  recordsFetched: number;
  recordsUpserted: number;
  recordsChanged: number;
  recordsRejected: number;
}

export interface RunOutcome extends RunCounts {
  status: Exclude<RunStatus, 'running'>;
  error: string | null;
  windowStart: string | null;
  windowEnd: string | null;
  gapStart: string | null;
  gapEnd: string | null;
}

/** Who a run is: its account and stream, and the command and process that ran it. */
export interface RunOrigin {
  accountId: string;
  stream: string;
  command: string;
  pid: number;
  host: string;
}

/**
 * A run's end on the database's clock, as its start (`started_at DEFAULT now()`) is: workers on
 * several machines, or one whose clock is off, still give every run a start before its end.
 * clock_timestamp(), not now(): the row may be closed in a transaction that began earlier.
 */
const databaseClock = () => sql<string>`clock_timestamp()`;

/** Opens the sync_runs row of a run; returns its id. */
export async function insertRun(db: Kysely<Tables>, run: RunOrigin): Promise<number> {
  const row = await db
    .insertInto('sync_runs')
    .values(originColumns(run))
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

function originColumns(run: RunOrigin) {
  return {
    account_id: run.accountId,
    stream: run.stream,
    command: run.command,
    pid: run.pid,
    host: run.host,
  };
}

/**
 * Closes the rows of runs of this account and stream that never finished (the process was killed
 * or crashed). Call it holding the stream's lock: then no such run can still be alive.
 */
export async function closeAbandonedRuns(
  db: Kysely<Tables>,
  accountId: string,
  stream: string,
): Promise<number> {
  const result = await db
    .updateTable('sync_runs')
    .set({
      status: 'failed',
      finished_at: databaseClock(),
      error:
        'the process ended before the run finished (killed or crashed); the next run continued from its last commit',
    })
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Records a run that did not start because another one of the same account and stream held the
 * lock: operators see skipped ticks in sync_runs, not just in the logs.
 */
export async function insertSkippedRun(
  db: Kysely<Tables>,
  run: RunOrigin & { reason: string },
): Promise<number> {
  const row = await db
    .insertInto('sync_runs')
    .values({
      ...originColumns(run),
      status: 'skipped',
      finished_at: databaseClock(),
      error: run.reason,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Writes a run's counts so far (a long backfill shows progress in `telesync status`). */
export async function updateRunProgress(
  db: Kysely<Tables>,
  runId: number,
  counts: RunCounts,
): Promise<void> {
  await db.updateTable('sync_runs').set(countColumns(counts)).where('id', '=', runId).execute();
}

/** Closes the sync_runs row of a run with its outcome. */
export async function finishRun(
  db: Kysely<Tables>,
  runId: number,
  outcome: RunOutcome,
): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({
      ...countColumns(outcome),
      status: outcome.status,
      finished_at: databaseClock(),
      error: outcome.error,
      window_start: outcome.windowStart,
      window_end: outcome.windowEnd,
      gap_start: outcome.gapStart,
      gap_end: outcome.gapEnd,
    })
    .where('id', '=', runId)
    .execute();
}

function countColumns(counts: RunCounts) {
  return {
    windows_planned: counts.windowsPlanned,
    windows_completed: counts.windowsCompleted,
    requests: counts.requests,
    retries: counts.retries,
    wait_ms: Math.round(counts.waitMs),
    load_wait_ms: Math.round(counts.loadWaitMs),
    records_fetched: counts.recordsFetched,
    records_upserted: counts.recordsUpserted,
    records_changed: counts.recordsChanged,
    records_rejected: counts.recordsRejected,
  };
}

/** What the runs of a command added up to: counts, and the span from the first start to the last end. */
export interface RunTotals {
  runs: number;
  recordsFetched: number;
  recordsUpserted: number;
  recordsRejected: number;
  requests: number;
  /** Epoch milliseconds on the database's clock; null without runs. */
  firstStartedMs: number | null;
  lastFinishedMs: number | null;
}

/**
 * The totals of the runs of `command` for `accountIds` that started at or after `sinceMs` (epoch
 * milliseconds on the database's clock): what a queued backfill's jobs did, once they are done.
 */
export async function sumRunsSince(
  db: Kysely<Tables>,
  query: { accountIds: readonly string[]; command: string; sinceMs: number },
): Promise<RunTotals> {
  if (query.accountIds.length === 0)
    return {
      runs: 0,
      recordsFetched: 0,
      recordsUpserted: 0,
      recordsRejected: 0,
      requests: 0,
      firstStartedMs: null,
      lastFinishedMs: null,
    };
  const row = await db
    .selectFrom('sync_runs')
    .select([
      sql<string>`count(*)`.as('runs'),
      sql<string>`coalesce(sum(records_fetched), 0)`.as('fetched'),
      sql<string>`coalesce(sum(records_upserted), 0)`.as('upserted'),
      sql<string>`coalesce(sum(records_rejected), 0)`.as('rejected'),
      sql<string>`coalesce(sum(requests), 0)`.as('requests'),
      sql<string | null>`(extract(epoch FROM min(started_at)) * 1000)::text`.as('first_ms'),
      sql<string | null>`(extract(epoch FROM max(finished_at)) * 1000)::text`.as('last_ms'),
    ])
    .where('account_id', 'in', [...query.accountIds])
    .where('command', '=', query.command)
    .where(sql<boolean>`started_at >= to_timestamp(${query.sinceMs / 1000})`)
    .executeTakeFirstOrThrow();
  return {
    runs: Number(row.runs),
    recordsFetched: Number(row.fetched),
    recordsUpserted: Number(row.upserted),
    recordsRejected: Number(row.rejected),
    requests: Number(row.requests),
    firstStartedMs: row.first_ms === null ? null : Number(row.first_ms),
    lastFinishedMs: row.last_ms === null ? null : Number(row.last_ms),
  };
}

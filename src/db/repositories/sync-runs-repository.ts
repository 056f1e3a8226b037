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

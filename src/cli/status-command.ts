import type { Command } from 'commander';
import { WORKER_LIVE_SECONDS } from '../app/worker-app.js';
import { pingDatabase, type Database } from '../db/connect.js';
import {
  findLiveWorkers,
  findStreamJobCounts,
  type WorkerRow,
} from '../db/repositories/job-queue-repository.js';
import { jobSchemaName } from '../jobs/job-settings.js';
import { ACCOUNT_JOBS_QUEUE } from '../jobs/pg-boss-queue.js';
import {
  findKnownAccounts,
  findStreamStatus,
  type StreamStatus,
} from '../db/repositories/status-repository.js';
import { runAgeSeconds, watermarkLagSeconds, wholeSeconds } from '../domain/freshness.js';
import { heldByDatabaseMs } from '../domain/load-wait.js';
import { statusSource } from '../sync/stream-state.js';
import { retrievableSinceDay } from '../domain/verify-days.js';
import { findVerificationSummaries } from '../db/repositories/day-verifications-repository.js';
import { formatVerificationLine, verificationJson } from './verify-command.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { formatDuration } from './progress-reporter.js';
import { plural } from './plural.js';
import { epochMicrosFromMillis, fixIsoText, formatIsoFixed } from '../util/micros.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

const number = new Intl.NumberFormat('en-US');

export function registerStatusCommand(program: Command, context: CommandContext): void {
  program
    .command('status')
    .description('show, per account and stream, how far the database is in step with the service')
    .option('--json', 'print JSON for scripts')
    .addHelpText(
      'after',
      '\nShows the watermark and its lag behind now, the last run and its outcome, rows stored, rejected\n' +
        'records, pending lookups and any unrecoverable gap. Needs no credentials.\n\n' +
        'Examples:\n  $ telesync status\n  $ telesync status --json | jq \'.streams[] | select(.last_run.status == "failed")\'',
    )
    .action(async (options: { json?: boolean }) => {
      context.setExit(await runStatus(context, options.json === true));
    });
}

async function runStatus(context: CommandContext, json: boolean): Promise<ExitCode> {
  const app = context.app('status');
  return app.withMigratedDatabase(async (database) => {
    const accounts = [
      ...new Set([
        ...app.config.accounts.map((account) => account.authId),
        ...(await findKnownAccounts(database.db)),
      ]),
    ].sort();
    const statuses: StreamStatus[] = [];
    for (const accountId of accounts) {
      for (const stream of context.streams)
        statuses.push(
          await findStreamStatus(database.db, database.schema, accountId, statusSource(stream)),
        );
    }
    // The database's clock: runs are timed by it (sync_runs), whichever machine ran them.
    const now = await pingDatabase(database);
    const queue = await readQueueStatus(database, accounts);
    const verifications = await findVerificationSummaries(
      database.db,
      accounts,
      retrievableSinceDay(epochMicrosFromMillis(now)),
    );
    if (json) {
      context.io.out(
        JSON.stringify({
          database: database.location,
          schema: database.schema,
          generated_at: formatIsoFixed(epochMicrosFromMillis(now)),
          streams: statuses.map((status) => statusJson(status, now)),
          verifications: verifications.map(verificationJson),
          ...(queue === undefined ? {} : { queue }),
        }),
      );
      return EXIT.OK;
    }
    context.io.out(`telesync status: schema "${database.schema}" at ${database.location}`);
    if (accounts.length === 0) {
      context.io.out('No account has been synced yet, and none is configured (TELESYNC_AUTH_ID).');
      return EXIT.OK;
    }
    for (const accountId of accounts) {
      context.io.out(`\naccount ${accountId}`);
      context.io.out(
        formatStatusTable(
          statuses.filter((status) => status.accountId === accountId),
          now,
        ),
      );
      const verification = verifications.find((summary) => summary.accountId === accountId);
      if (verification !== undefined)
        context.io.out(`trunk_calls ${formatVerificationLine(verification)}`);
    }
    if (queue !== undefined) {
      context.io.out(`\njob queue (workers): ${queue.workers.length} live`);
      for (const worker of queue.workers) {
        context.io.out(
          `  worker ${worker.worker_id}  ${worker.in_hand}/${worker.concurrency} in hand  last heartbeat ${worker.heartbeat_at}`,
        );
      }
      for (const row of queue.jobs) {
        context.io.out(
          `  ${row.account.padEnd(24)} ${row.stream.padEnd(13)} waiting ${row.waiting}  active ${row.active}  failed ${row.failed}`,
        );
      }
    }
    return EXIT.OK;
  });
}

/** Whole seconds between the watermark and now; null without a watermark. */
function lagSeconds(status: StreamStatus, now: number): number | null {
  return status.watermark === null
    ? null
    : wholeSeconds(watermarkLagSeconds(status.watermark, now));
}

function statusJson(status: StreamStatus, now: number): Record<string, unknown> {
  return {
    account: status.accountId,
    stream: status.stream,
    watermark: fixIsoText(status.watermark),
    lag_seconds: lagSeconds(status, now),
    last_run: lastRunJson(status.lastRun),
    last_success_at: fixIsoText(status.lastSuccessAt),
    rows: status.rows,
    deleted_rows: status.deletedRows,
    rejected: status.rejected,
    lookups: status.lookups,
    windows: status.windows,
    gap:
      status.gap === null
        ? null
        : { start: fixIsoText(status.gap.start), end: fixIsoText(status.gap.end) },
  };
}

/** The last run in snake_case, like every other field of `status --json`. */
function lastRunJson(run: StreamStatus['lastRun']): Record<string, unknown> | null {
  if (run === null) return null;
  return {
    id: run.id,
    command: run.command,
    status: run.status,
    started_at: fixIsoText(run.startedAt),
    finished_at: fixIsoText(run.finishedAt),
    records_fetched: run.recordsFetched,
    records_changed: run.recordsChanged,
    records_rejected: run.recordsRejected,
    requests: run.requests,
    load_wait_ms: run.loadWaitMs,
    error: run.error,
  };
}

/**
 * `i trunk_calls: the last run spent 6.6s of its 18.8s waiting for the database …` when that run's
 * wait is worth acting on (heldByDatabaseMs); a run still in progress has no length yet.
 */
export function loadWaitNote(status: Pick<StreamStatus, 'stream' | 'lastRun'>): string | undefined {
  const run = status.lastRun;
  if (run === null) return undefined;
  const durationMs = heldByDatabaseMs(run);
  if (durationMs === undefined) return undefined;
  return (
    `  i ${status.stream}: the last run spent ${(run.loadWaitMs / 1000).toFixed(1)}s of its ` +
    `${(durationMs / 1000).toFixed(1)}s waiting for the database; more load connections ` +
    '(TELESYNC_LOAD_CONNECTIONS) or fewer accounts on this process may help (docs/scaling.md)'
  );
}

/** The per-stream table of one account, with warnings below it. Pure: for tests. */
function formatStatusTable(statuses: readonly StreamStatus[], now: number): string {
  const header = [
    'stream',
    'watermark',
    'lag',
    'last run',
    'rows',
    'rejected',
    'lookups / windows',
  ];
  const rows = statuses.map((status) => {
    const lag = lagSeconds(status, now);
    const run = status.lastRun;
    const lastRun =
      run === null
        ? 'never'
        : `${run.status} ${formatDuration(runAgeSeconds(run.finishedAt ?? run.startedAt, now))} ago (${number.format(run.recordsChanged)} new or changed)`;
    const rowsText = status.deletedRows
      ? `${number.format(status.rows)} (+${number.format(status.deletedRows)} deleted)`
      : number.format(status.rows);
    const extra = status.lookups
      ? Object.entries(status.lookups)
          .map(([key, n]) => `${n} ${key.replace('_', ' ')}`)
          .join(', ') || 'queue empty'
      : status.windows
        ? Object.entries(status.windows)
            .map(([key, n]) => `${n} ${key}`)
            .join(', ') || 'no windows yet'
        : '';
    return [
      status.stream,
      status.watermark?.replace(/\.\d+Z$/, 'Z') ?? '—',
      lag === null ? '—' : formatDuration(lag),
      lastRun,
      rowsText,
      number.format(status.rejected),
      extra,
    ];
  });
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: readonly string[]) =>
    `  ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')}`.trimEnd();
  const warnings: string[] = [];
  for (const status of statuses) {
    if (status.lastRun?.status === 'failed')
      warnings.push(
        `  ! ${status.stream}: the last run failed: ${status.lastRun.error ?? 'no error recorded'}`,
      );
    if (status.gap !== null) {
      warnings.push(
        `  ! ${status.stream}: unrecoverable gap ${status.gap.start} to ${status.gap.end}: those calls left the ${TRUNK_HISTORY_DAYS}-day horizon before they were synced`,
      );
    }
    if (status.stream === 'trunk_calls' && status.watermark === null && status.rows > 0)
      warnings.push(
        `  i ${status.stream}: no incremental sync yet, so no watermark: the rows come from a backfill, ` +
          'which leaves the watermark alone; telesync sync (or schedule) sets it',
      );
    const note = loadWaitNote(status);
    if (note !== undefined) warnings.push(note);
    if ((status.windows?.failed ?? 0) > 0)
      warnings.push(
        `  ! ${status.stream}: ${plural(status.windows?.failed ?? 0, 'window')} failed; the next run reads them again`,
      );
    if ((status.lookups?.failed ?? 0) > 0)
      warnings.push(
        `  ! ${status.stream}: ${plural(status.lookups?.failed ?? 0, 'lookup')} gave up after repeated failures (see last_error in the queue table)`,
      );
  }
  return [line(header), ...rows.map(line), ...warnings].join('\n');
}

interface QueueStatus {
  workers: WorkerRow[];
  jobs: { account: string; stream: string; waiting: number; active: number; failed: number }[];
}

/** The job queue's part of the status; undefined when there is no queue (embedded, or never migrated). */
async function readQueueStatus(
  database: Database,
  accounts: readonly string[],
): Promise<QueueStatus | undefined> {
  const jobSchema = jobSchemaName(database.schema);
  const counts = await findStreamJobCounts(database.root, jobSchema, ACCOUNT_JOBS_QUEUE, accounts);
  const workers = await findLiveWorkers(database.root, jobSchema, WORKER_LIVE_SECONDS);
  if (counts.length === 0 && workers.length === 0) return undefined;
  const jobs: QueueStatus['jobs'] = [];
  for (const account of accounts) {
    for (const stream of new Set(
      counts.filter((row) => row.account === account).map((row) => row.stream),
    )) {
      const of = (...states: string[]): number =>
        counts
          .filter(
            (row) => row.account === account && row.stream === stream && states.includes(row.state),
          )
          .reduce((sum, row) => sum + row.count, 0);
      jobs.push({
        account,
        stream,
        waiting: of('created', 'retry'),
        active: of('active'),
        failed: of('failed'),
      });
    }
  }
  return { workers, jobs };
}

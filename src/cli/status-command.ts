import type { Command } from 'commander';
import { pendingMigrations } from '../db/migrate.js';
import {
  findKnownAccounts,
  findStreamStatus,
  type StreamStatus,
} from '../db/repositories/status-repository.js';
import { STREAM_NAMES } from '../sync/streams.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { formatDuration } from './progress-reporter.js';

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
  const config = context.config();
  return context.withDatabase('status', async (database) => {
    const pending = await pendingMigrations(database);
    if (pending.length > 0) {
      context.io.err(
        `The schema "${database.schema}" at ${database.location} is not up to date (${pending.length} migration(s) pending): run telesync migrate.`,
      );
      return EXIT.FAILED;
    }
    const accounts = [
      ...new Set([
        ...config.accounts.map((account) => account.authId),
        ...(await findKnownAccounts(database.db)),
      ]),
    ].sort();
    const statuses: StreamStatus[] = [];
    for (const accountId of accounts) {
      for (const stream of STREAM_NAMES)
        statuses.push(await findStreamStatus(database.db, database.schema, accountId, stream));
    }
    const now = Date.now();
    if (json) {
      context.io.out(
        JSON.stringify({
          database: database.location,
          schema: database.schema,
          generated_at: new Date(now).toISOString(),
          streams: statuses.map((status) => statusJson(status, now)),
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
    }
    return EXIT.OK;
  });
}

/** Seconds between the watermark and now; null without a watermark. */
function lagSeconds(status: StreamStatus, now: number): number | null {
  return status.watermark === null
    ? null
    : Math.max(0, Math.round((now - Date.parse(status.watermark)) / 1000));
}

function statusJson(status: StreamStatus, now: number): Record<string, unknown> {
  return {
    account: status.accountId,
    stream: status.stream,
    watermark: status.watermark,
    lag_seconds: lagSeconds(status, now),
    last_run: status.lastRun,
    last_success_at: status.lastSuccessAt,
    rows: status.rows,
    deleted_rows: status.deletedRows,
    rejected: status.rejected,
    lookups: status.lookups,
    windows: status.windows,
    gap: status.gap,
  };
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
        : `${run.status} ${formatDuration((now - Date.parse(run.finishedAt ?? run.startedAt)) / 1000)} ago (${number.format(run.recordsChanged)} new or changed)`;
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
        `  ! ${status.stream}: unrecoverable gap ${status.gap.start} to ${status.gap.end}: those calls left the 90-day horizon before they were synced`,
      );
    }
    if ((status.windows?.failed ?? 0) > 0)
      warnings.push(
        `  ! ${status.stream}: ${status.windows?.failed} window(s) failed; the next run reads them again`,
      );
    if ((status.lookups?.failed ?? 0) > 0)
      warnings.push(
        `  ! ${status.stream}: ${status.lookups?.failed} lookup(s) gave up after repeated failures (see last_error in the queue table)`,
      );
  }
  return [line(header), ...rows.map(line), ...warnings].join('\n');
}

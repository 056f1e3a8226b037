import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { pingDatabase } from '../db/connect.js';
import { findJobStateCounts } from '../db/repositories/job-queue-repository.js';
import { sumRunsSince } from '../db/repositories/sync-runs-repository.js';
import type { AccountJob, QueueCounts } from '../jobs/job-queue.js';
import { jobSchemaName } from '../jobs/job-settings.js';
import { ACCOUNT_JOBS_QUEUE, countAccountJobs } from '../jobs/pg-boss-queue.js';
import type { SyncResult } from '../sync/run-stream.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';
import {
  horizonStart,
  lastDays,
  planBackfill,
  planLeftOut,
  plannerSettings,
  type BackfillPlan,
  type TimeWindow,
} from '../sync/window-planner.js';
import {
  epochMicrosFromMillis,
  formatIsoFixed,
  formatIsoMicros,
  MICROS_PER_SECOND,
} from '../util/micros.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { previewBackfill } from '../sync/run-preview.js';
import { formatPreview, formatRunLine, previewJson, runJson } from './run-report.js';
import { onShutdownSignal } from './shutdown.js';
import { createMultiProgressReporter } from './progress-reporter.js';
import { INSTANT_FORMS, parseUserInstant, parseWholeNumber } from './user-input.js';
import { writeNotice } from './notice.js';
import { plural } from './plural.js';

const number = new Intl.NumberFormat('en-US');

interface BackfillOptions {
  days?: string;
  from?: string;
  to?: string;
  account?: string;
  wait?: boolean;
  json?: boolean;
  dryRun?: boolean;
  queue?: boolean;
}

/**
 * What a backfill covered, and what it left out and why, in a line or two. A stopped backfill says
 * how far it got, not the range it was asked for.
 */
export function formatBackfillCoverage(result: SyncResult, plan: BackfillPlan): string[] {
  if (plan.covered === undefined)
    return ['  nothing to read: the range is too recent (settle lag)'];
  const done = result.stats.windowsCompleted;
  if (result.status === 'stopped' || result.status === 'failed') {
    const last = plan.windows[Math.min(done, plan.windows.length) - 1];
    const how = result.status === 'stopped' ? 'stopped' : 'failed';
    return [
      last === undefined
        ? `  ${how} before any of the ${plan.windows.length} windows was read; run the same command again to resume`
        : `  ${how} after ${done} of ${plan.windows.length} windows (${formatIsoMicros(plan.covered.start)} to ` +
          `${formatIsoMicros(last.end)}); run the same command again to resume`,
    ];
  }
  const lines = [
    `  covered ${formatIsoMicros(plan.covered.start)} to ${formatIsoMicros(plan.covered.end)} (${plural(plan.windows.length, 'window')})`,
  ];
  const { windowsResumed, windowsRereadComplete } = result.stats;
  if (windowsResumed > 0)
    lines.push(
      `  resumed: ${plural(windowsResumed, 'window')} read before by this unfinished backfill ${windowsResumed === 1 ? 'was' : 'were'} skipped`,
    );
  if (windowsRereadComplete > 0)
    lines.push(
      `  read again: ${plural(windowsRereadComplete, 'window')} the ledger already held complete (a backfill re-reads its ` +
        'whole range; `telesync sync` alone keeps complete days current)',
    );
  const notRead = planLeftOut(plan)
    .filter((part) => part.why !== 'beyond-horizon')
    .map((part) =>
      part.why === 'horizon-margin'
        ? `the oldest ${spanText(part)} (a margin inside the ${TRUNK_HISTORY_DAYS}-day horizon, so no request is refused as too old)`
        : `calls that ended in the last ${spanText(part)} (settle lag: the next sync reads them)`,
    );
  if (notRead.length > 0) lines.push(`  not read: ${notRead.join('; ')}`);
  return lines;
}

/** `10 minutes`, `40 seconds`: the length of a left-out part, for people. */
function spanText(part: TimeWindow): string {
  const seconds = Math.round((part.end - part.start) / MICROS_PER_SECOND);
  return seconds < 120 ? `${seconds} seconds` : `${Math.round(seconds / 60)} minutes`;
}

export function registerBackfillCommand(program: Command, context: CommandContext): void {
  program
    .command('backfill')
    .description(
      `re-read trunk call records of any part of the last ${TRUNK_HISTORY_DAYS} days (resumable)`,
    )
    .option('--days <n>', `the last n days, 1 to ${TRUNK_HISTORY_DAYS}`)
    .option('--from <time>', `start of the range (${INSTANT_FORMS})`)
    .option('--to <time>', 'end of the range, exclusive (default: now)')
    .option('--account <auth_id>', 'only this configured account')
    .option(
      '--wait',
      'wait for a trunk_calls run in progress elsewhere, instead of skipping (with --queue: until the workers are done)',
    )
    .option(
      '--queue',
      'enqueue the backfill for the workers (telesync worker) instead of running it here',
    )
    .option('--json', 'print the outcome as JSON')
    .option('--dry-run', 'print the windows it would read and what that costs; change nothing')
    .addHelpText(
      'after',
      '\nWhole UTC days are read (the window slices), oldest first. Stopped with Ctrl-C or killed, the same\n' +
        'command resumes: windows it already read are skipped; a backfill of another range keeps that resume\n' +
        'point. A finished range asked for again is read again, and the run says how much of it the ledger\n' +
        'held complete. The incremental watermark never moves back.\n\n' +
        `Examples:\n  $ telesync backfill --days ${TRUNK_HISTORY_DAYS}\n  $ telesync backfill --from 2026-10-01 --to 2026-10-08\n  $ telesync backfill --days ${TRUNK_HISTORY_DAYS} --dry-run`,
    )
    .action(async (options: BackfillOptions) => {
      context.setExit(
        await (options.queue === true
          ? runQueuedBackfill(context, options)
          : runBackfill(context, options)),
      );
    });
}

/** The range the flags name; exactly one of --days or --from must be given. */
export function backfillRange(options: BackfillOptions, nowMillis: number): TimeWindow {
  const now = epochMicrosFromMillis(nowMillis);
  if (options.days !== undefined) {
    if (options.from !== undefined || options.to !== undefined) {
      throw new UsageError('give either --days or --from/--to, not both');
    }
    return lastDays(now, parseWholeNumber(options.days, '--days', 1, TRUNK_HISTORY_DAYS));
  }
  if (options.from === undefined) {
    throw new UsageError(
      `say what to backfill: --days N (1 to ${TRUNK_HISTORY_DAYS}), or --from TIME [--to TIME]`,
    );
  }
  const start = parseUserInstant(options.from, '--from');
  if (options.to === undefined && start >= now)
    throw new UsageError(
      `--from (${formatIsoMicros(start)}) is in the future: give a time before now (${formatIsoMicros(now)}), or --days N`,
    );
  const end = options.to === undefined ? now : parseUserInstant(options.to, '--to');
  if (end <= start)
    throw new UsageError(
      `--to (${formatIsoMicros(end)}) must be after --from (${formatIsoMicros(start)})`,
    );
  return { start, end };
}

async function runBackfill(context: CommandContext, options: BackfillOptions): Promise<ExitCode> {
  const range = backfillRange(options, Date.now());
  const app = context.app('backfill');
  const accounts = app.selectAccounts(options.account);
  const horizon = horizonStart(epochMicrosFromMillis(Date.now()));
  if (range.end <= horizon) {
    throw new UsageError(
      `${formatIsoMicros(range.start)} to ${formatIsoMicros(range.end)} is entirely older than the service's ` +
        `${TRUNK_HISTORY_DAYS}-day horizon: those calls can no longer be read. The oldest time that can be: --from ${formatIsoMicros(horizon)}`,
    );
  }
  if (options.dryRun === true) {
    const now = epochMicrosFromMillis(Date.now());
    const maxRps = app.config.api.maxRps;
    return app.withMigratedDatabase(async (database) => {
      if (options.json !== true)
        writeNotice(
          context.io,
          'info',
          'dry run: nothing is sent to the service and nothing is written',
        );
      for (const [index, account] of accounts.entries()) {
        const planned = await previewBackfill(
          database,
          account.authId,
          range,
          app.config.sync,
          now,
        );
        const preview =
          planned.backfill === undefined
            ? planned
            : { ...planned, backfill: withoutClockDrift(planned.backfill, options) };
        if (index === 0 && options.json !== true && preview.backfill !== undefined)
          noteBeyondHorizon(context, preview.backfill);
        context.io.out(
          options.json === true
            ? JSON.stringify(previewJson(preview, maxRps))
            : formatPreview(preview, maxRps),
        );
      }
      return EXIT.OK;
    });
  }
  return app.withSync(accounts, async ({ clients, runStream, forEachAccount }) => {
    const shutdown = onShutdownSignal(() =>
      writeNotice(
        context.io,
        'warn',
        'stopping after the batch in hand; run the same command again to resume',
      ),
    );
    let results: SyncResult[];
    const progress = createMultiProgressReporter(
      context.io,
      'backfill',
      clients.map((client) => client.authId),
    );
    try {
      // Every account at once, up to TELESYNC_ACCOUNT_CONCURRENCY: the service's budget is per
      // account, so ten accounts take about the time of one. More accounts than that go in waves
      // of equal width, so that no small last wave leaves the writer idle.
      results = await forEachAccount((client) =>
        runStream(client, {
          stream: 'trunk_calls',
          command: 'backfill',
          backfill: range,
          lockWaitMs: options.wait === true ? 6 * 60 * 60 * 1000 : 0,
          signal: shutdown.signal,
          onWait: () =>
            writeNotice(
              context.io,
              'info',
              `trunk_calls of ${client.authId}: another run is in progress; waiting for it (--wait)`,
            ),
          onProgress: (stats) => progress.reporter(client.authId).update(stats),
        }),
      );
    } finally {
      progress.finish();
      shutdown.dispose();
    }
    reportBackfill(context, results, options);
    const failed = results.some(
      (result) => result.status === 'failed' || result.status === 'skipped',
    );
    return failed || shutdown.signal.aborted ? EXIT.FAILED : EXIT.OK;
  });
}

/** Prints each account's outcome, in the order of the accounts. */
function reportBackfill(
  context: CommandContext,
  results: readonly SyncResult[],
  options: BackfillOptions,
): void {
  const json = options.json === true;
  let horizonNoted = false;
  for (const result of results) {
    const plan =
      result.backfill === undefined ? undefined : withoutClockDrift(result.backfill, options);
    const leftOut = plan === undefined ? [] : planLeftOut(plan);
    if (plan !== undefined && !json && !horizonNoted)
      horizonNoted = noteBeyondHorizon(context, plan);
    if (json) {
      context.io.out(
        JSON.stringify({
          ...runJson(result),
          covered_from: plan?.covered ? formatIsoFixed(plan.covered.start) : null,
          covered_to: plan?.covered ? formatIsoFixed(plan.covered.end) : null,
          left_out: leftOut.map((part) => ({
            from: formatIsoFixed(part.start),
            to: formatIsoFixed(part.end),
            reason: part.why.replace(/-/g, '_'),
          })),
        }),
      );
    } else {
      context.io.out(formatRunLine(result));
      if (plan !== undefined)
        for (const line of formatBackfillCoverage(result, plan)) context.io.out(line);
    }
    if (result.status === 'skipped') {
      // Nothing was read: exit 1, as for a failure, so a script does not take it for a backfill.
      writeNotice(
        context.io,
        'warn',
        `backfill of ${result.accountId} not run: another trunk_calls run held the lock; run the same command again later, or with --wait`,
      );
    }
  }
}

/**
 * `--days N` names the last N days, never more than the service keeps: a part of it beyond the
 * horizon is only the clock moving between reading the flag and planning, however long start-up
 * took on a busy machine, and is not said to be left out.
 */
function withoutClockDrift(plan: BackfillPlan, options: BackfillOptions): BackfillPlan {
  return options.days === undefined ? plan : { ...plan, beyondService: undefined };
}

/**
 * Says once, when the range reaches past the service's horizon, what cannot be read (the real run
 * and its dry run alike). Returns whether it said so.
 */
function noteBeyondHorizon(context: CommandContext, plan: BackfillPlan): boolean {
  const beyond = planLeftOut(plan).find((part) => part.why === 'beyond-horizon');
  if (beyond === undefined) return false;
  writeNotice(
    context.io,
    'warn',
    `note: ${formatIsoMicros(beyond.start)} to ${formatIsoMicros(beyond.end)} is older than the ` +
      `service's ${TRUNK_HISTORY_DAYS}-day horizon and cannot be read; the backfill starts at the horizon`,
  );
  return true;
}

/**
 * How often `--queue --wait` reads the queue when no worker told it a job settled (workers
 * NOTIFY each settling, and the wait counts again at once: it ends when the last job does).
 */
const QUEUE_PROGRESS_MS = 2_000;

/**
 * Enqueues one job per account over all its windows (per stretch of adjacent windows) and, with
 * --wait, shows the queue draining until none of those accounts has work left. A job is worth its
 * bookkeeping (a fetch, a run row, its settling) only when it carries many windows: one per window
 * made a queued backfill of small accounts many times slower than one process. A worker renews a
 * job's lease while it works, so a large account's backfill is one job that reads no page twice;
 * a killed worker's job goes to another one lease after its last renewal and goes on from the
 * windows its ledger holds, so a killed worker still loses at most one lease of work.
 */
async function runQueuedBackfill(
  context: CommandContext,
  options: BackfillOptions,
): Promise<ExitCode> {
  const nowMicros = epochMicrosFromMillis(Date.now());
  const range = backfillRange(options, Date.now());
  const app = context.app('backfill');
  const accounts = app.selectAccounts(options.account);
  // The windows a backfill run here would read (whole slots, within the horizon, settled).
  const plan = planBackfill(nowMicros, range, plannerSettings(app.config.sync));
  const windows = plan.windows;
  const backfillId = randomUUID();
  const stretches = adjacentStretches(windows);
  const jobs: AccountJob[] = accounts.flatMap((account) =>
    stretches.map((stretch) => ({
      kind: 'backfill-window' as const,
      accountId: account.authId,
      start: formatIsoMicros(stretch.start),
      end: formatIsoMicros(stretch.end),
      backfillId,
    })),
  );
  return app.withJobQueue(async (queue, database) => {
    // The database's clock: the workers' runs of these jobs start after it.
    const enqueuedAtMs = await pingDatabase(database);
    await queue.enqueue(jobs);
    const summary = {
      backfill_id: backfillId,
      accounts: accounts.length,
      windows: windows.length,
      jobs: jobs.length,
      covered_from: plan.covered ? formatIsoFixed(plan.covered.start) : null,
      covered_to: plan.covered ? formatIsoFixed(plan.covered.end) : null,
    };
    if (options.wait !== true) {
      context.io.out(
        options.json === true
          ? JSON.stringify({ ...summary, status: 'queued' })
          : `queued ${plural(jobs.length, 'job')} (${plural(windows.length, 'window')} of each of ${plural(accounts.length, 'account')}) for the workers`,
      );
      return EXIT.OK;
    }
    const shutdown = onShutdownSignal(() =>
      writeNotice(context.io, 'info', 'stopped waiting; the workers go on with the backfill'),
    );
    const accountIds = accounts.map((account) => account.authId);
    const readCounts = async (): Promise<QueueCounts[]> =>
      countAccountJobs(
        accountIds,
        await findJobStateCounts(
          database.root,
          jobSchemaName(database.schema),
          ACCOUNT_JOBS_QUEUE,
          accountIds,
        ),
      );
    // Listening before the first count: a job settled after it is told.
    await queue.waitForSettled(0, shutdown.signal);
    let counts = await readCounts();
    try {
      for (;;) {
        const left = counts.reduce((sum, row) => sum + row.waiting + row.active, 0);
        const failed = counts.reduce((sum, row) => sum + row.failed, 0);
        writeNotice(
          context.io,
          'info',
          `backfill ${backfillId.slice(0, 8)}: ${Math.max(0, jobs.length - left)}/${jobs.length} jobs done` +
            `${failed > 0 ? `, ${failed} failed` : ''}, ${plural(counts.filter((row) => row.active > 0).length, 'account')} in hand`,
        );
        if (left === 0 || shutdown.signal.aborted) break;
        await queue.waitForSettled(QUEUE_PROGRESS_MS, shutdown.signal);
        counts = await readCounts();
      }
    } finally {
      shutdown.dispose();
    }
    const failed = counts.filter((row) => row.failed > 0);
    const totals = await sumRunsSince(database.db, {
      accountIds,
      command: 'worker backfill',
      sinceMs: enqueuedAtMs,
    });
    // Timed from the first job's start, not from the enqueue: waiting for a worker is not reading.
    const workMs =
      totals.firstStartedMs === null || totals.lastFinishedMs === null
        ? 0
        : Math.max(0, totals.lastFinishedMs - totals.firstStartedMs);
    const callsPerSecond = workMs > 0 ? Math.round((totals.recordsFetched * 1000) / workMs) : null;
    const totalsText =
      `${number.format(totals.recordsFetched)} calls fetched, ${number.format(totals.recordsUpserted)} stored, ` +
      `${number.format(totals.recordsRejected)} rejected, ${plural(totals.requests, 'request')}` +
      (workMs > 0
        ? `; ${(workMs / 1000).toFixed(1)}s from the first job's start` +
          (callsPerSecond === null ? '' : ` (${number.format(callsPerSecond)} calls/s)`)
        : '');
    context.io.out(
      options.json === true
        ? JSON.stringify({
            ...summary,
            status: shutdown.signal.aborted ? 'queued' : failed.length > 0 ? 'failed' : 'succeeded',
            failed_accounts: failed.map((row) => row.accountId),
            records_fetched: totals.recordsFetched,
            records_upserted: totals.recordsUpserted,
            records_rejected: totals.recordsRejected,
            requests: totals.requests,
            work_ms: workMs,
            calls_per_second: callsPerSecond,
          })
        : shutdown.signal.aborted
          ? `stopped waiting after ${totalsText}`
          : failed.length > 0
            ? `done, but jobs failed for ${failed.map((row) => row.accountId).join(', ')} (see telesync status): ${totalsText}`
            : `done: ${plural(jobs.length, 'job')}; ${totalsText}`,
    );
    return failed.length > 0 || shutdown.signal.aborted ? EXIT.FAILED : EXIT.OK;
  });
}

/** Windows that follow each other without a gap, merged: the ranges a job of each account covers. */
export function adjacentStretches(
  windows: readonly { readonly start: number; readonly end: number }[],
): { start: number; end: number }[] {
  const stretches: { start: number; end: number }[] = [];
  for (const window of windows) {
    const last = stretches.at(-1);
    if (last !== undefined && last.end === window.start) last.end = window.end;
    else stretches.push({ start: window.start, end: window.end });
  }
  return stretches;
}

import type { Command } from 'commander';
import { runStream } from '../sync/sync-runner.js';
import { HORIZON_DAYS, lastDays, type TimeWindow } from '../sync/window-planner.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../util/micros.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { formatRunLine, runJson } from './run-report.js';
import {
  createAccountClients,
  createCliLogger,
  selectAccounts,
  syncDependencies,
} from './service-context.js';
import { onShutdownSignal } from './shutdown.js';
import { createProgressReporter } from './progress-reporter.js';
import { INSTANT_FORMS, parseUserInstant, parseWholeNumber } from './user-input.js';

interface BackfillOptions {
  days?: string;
  from?: string;
  to?: string;
  account?: string;
  wait?: boolean;
  json?: boolean;
}

export function registerBackfillCommand(program: Command, context: CommandContext): void {
  program
    .command('backfill')
    .description('re-read trunk call records of any part of the last 90 days (resumable)')
    .option('--days <n>', `the last n days, 1 to ${HORIZON_DAYS}`)
    .option('--from <time>', `start of the range (${INSTANT_FORMS})`)
    .option('--to <time>', 'end of the range, exclusive (default: now)')
    .option('--account <auth_id>', 'only this configured account')
    .option('--wait', 'wait for a trunk_calls run in progress elsewhere, instead of skipping')
    .option('--json', 'print the outcome as JSON')
    .addHelpText(
      'after',
      '\nWhole UTC days are read (the window slices), oldest first. Stopped with Ctrl-C or killed, the same\n' +
        'command resumes: windows it already read are skipped. The incremental watermark never moves back.\n\n' +
        'Examples:\n  $ telesync backfill --days 90\n  $ telesync backfill --from 2026-10-01 --to 2026-10-08',
    )
    .action(async (options: BackfillOptions) => {
      context.setExit(await runBackfill(context, options));
    });
}

/** The range the flags name; exactly one of --days or --from must be given. */
export function backfillRange(options: BackfillOptions, nowMillis: number): TimeWindow {
  const now = epochMicrosFromMillis(nowMillis);
  if (options.days !== undefined) {
    if (options.from !== undefined || options.to !== undefined) {
      throw new UsageError('give either --days or --from/--to, not both');
    }
    return lastDays(now, parseWholeNumber(options.days, '--days', 1, HORIZON_DAYS));
  }
  if (options.from === undefined) {
    throw new UsageError('say what to backfill: --days N (1 to 90), or --from TIME [--to TIME]');
  }
  const start = parseUserInstant(options.from, '--from');
  const end = options.to === undefined ? now : parseUserInstant(options.to, '--to');
  if (end <= start)
    throw new UsageError(
      `--to (${formatIsoMicros(end)}) must be after --from (${formatIsoMicros(start)})`,
    );
  return { start, end };
}

async function runBackfill(context: CommandContext, options: BackfillOptions): Promise<ExitCode> {
  const range = backfillRange(options, Date.now());
  const config = context.config();
  const accounts = selectAccounts(config, options.account);
  return context.withDatabase('backfill', async (database) => {
    const log = createCliLogger(config, context.io);
    const { clients, close } = createAccountClients(config, accounts, log);
    const shutdown = onShutdownSignal(() =>
      context.io.err('stopping after the batch in hand; run the same command again to resume'),
    );
    let failed = false;
    try {
      for (const client of clients) {
        if (shutdown.signal.aborted) break;
        const progress = createProgressReporter(context.io, `backfill ${client.authId}`);
        const result = await runStream(syncDependencies(config, database, log), client, {
          stream: 'trunk_calls',
          command: 'backfill',
          backfill: range,
          lockWaitMs: options.wait === true ? 6 * 60 * 60 * 1000 : 0,
          signal: shutdown.signal,
          onWait: () =>
            context.io.err('trunk_calls: another run is in progress; waiting for it (--wait)'),
          onProgress: (stats) => progress.update(stats),
        });
        progress.finish();
        const plan = result.backfill;
        if (plan?.beyondService !== undefined && options.json !== true) {
          context.io.err(
            `note: ${formatIsoMicros(plan.beyondService.start)} to ${formatIsoMicros(plan.beyondService.end)} is older than the ` +
              "service's 90-day horizon and cannot be read; the backfill starts at the horizon",
          );
        }
        if (options.json === true) {
          context.io.out(
            JSON.stringify({
              ...runJson(result),
              covered_from: plan?.covered ? formatIsoMicros(plan.covered.start) : null,
              covered_to: plan?.covered ? formatIsoMicros(plan.covered.end) : null,
            }),
          );
        } else {
          context.io.out(formatRunLine(result));
          if (plan?.covered !== undefined) {
            context.io.out(
              `  covered ${formatIsoMicros(plan.covered.start)} to ${formatIsoMicros(plan.covered.end)} (${plan.windows.length} windows)`,
            );
          }
        }
        failed ||= result.status === 'failed';
      }
    } finally {
      shutdown.dispose();
      await close();
    }
    return failed || shutdown.signal.aborted ? EXIT.FAILED : EXIT.OK;
  });
}

import type { Command } from 'commander';
import { openSchedulerApp, type SchedulerApp } from '../app/scheduler-app.js';
import { CONFIG_DEFAULTS, scheduleVariable } from '../config/config-defaults.js';
import type { RunningHttpServer } from '../http/http-server.js';
import { longestTickGapMinutes } from '../scheduler/schedule-plan.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import { SCHEDULE_OFF } from '../scheduler/schedule-settings.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { formatRunLine } from './run-report.js';
import { onShutdownSignal } from './shutdown.js';
import { writeNotice } from './notice.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

/** Ticks sampled to find the longest pause of a cron (a day of hourly ticks, a week of daily ones). */
const TICK_SAMPLE = 200;

/** How long closing the transports and the database may take after runs outlived the timeout. */
const CLOSE_AFTER_TIMEOUT_MS = 2_000;

export interface ScheduleCommandHooks {
  /**
   * Ends the process when runs outlive TELESYNC_SHUTDOWN_TIMEOUT_SECONDS: their pending work would
   * otherwise keep it alive. Default: process.exit.
   */
  forceExit?: (code: ExitCode) => void;
}

export function registerScheduleCommand(
  program: Command,
  context: CommandContext,
  hooks: ScheduleCommandHooks = {},
): void {
  const cronHelp = context.streams
    .map(
      (stream) =>
        `  ${scheduleVariable(stream.name).padEnd(32)}default "${stream.defaultSchedule}"`,
    )
    .join('\n');
  program
    .command('schedule')
    .description(
      'run every stream on its cron schedule until stopped (SIGTERM, Ctrl-C), serving /healthz and /metrics',
    )
    .option(
      '--once',
      'run each scheduled stream once, in order, then exit (hosts without a scheduler)',
    )
    .addHelpText(
      'after',
      `\nWhen each stream runs (a cron expression, 5 fields or 6 with seconds first, or "off"):\n${cronHelp}\n` +
        `  ${'TELESYNC_SCHEDULE_TIMEZONE'.padEnd(32)}time zone of the crons (default ${CONFIG_DEFAULTS.scheduleTimezone})\n\n` +
        'Service:\n' +
        `  TELESYNC_HTTP_HOST, TELESYNC_HTTP_PORT   where /healthz and /metrics listen (default ${CONFIG_DEFAULTS.httpHost}:${CONFIG_DEFAULTS.httpPort}; port 0: off)\n` +
        `  TELESYNC_PUBLIC_URL                      the address the service reaches that server at; set, it also receives\n` +
        `                                           stream callbacks at TELESYNC_STREAM_CALLBACK_PATH (default ${CONFIG_DEFAULTS.streamCallbackPath})\n` +
        `  TELESYNC_SHUTDOWN_TIMEOUT_SECONDS        on SIGTERM, time for runs to finish their batch (default ${CONFIG_DEFAULTS.shutdownTimeoutSeconds})\n` +
        `  TELESYNC_HEALTH_MAX_AGE_MINUTES          /healthz fails when a stream's last success is older (default ${CONFIG_DEFAULTS.healthMaxAgeMinutes})\n` +
        `  TELESYNC_HORIZON_ALARM_DAYS              /healthz fails on trunk_calls days this close to the ${TRUNK_HISTORY_DAYS}-day horizon not read in full (default ${CONFIG_DEFAULTS.horizonAlarmDays}; 0: off)\n\n` +
        'The database must be migrated first (telesync migrate). Ticks of a stream never overlap: a tick\n' +
        'that comes while the previous run is still going is skipped, logged and counted.\n\n' +
        'Examples:\n' +
        "  $ TELESYNC_SCHEDULE_TRUNK_CALLS='*/5 * * * *' TELESYNC_SCHEDULE_MESSAGES=off telesync schedule\n" +
        '  $ curl -s http://127.0.0.1:9464/healthz      # 200 when healthy, 503 when not\n' +
        '  $ telesync schedule --once                   # from a system crontab instead',
    )
    .action(async (options: { once?: boolean }) => {
      context.setExit(await runSchedule(context, options.once === true, hooks));
    });
}

async function runSchedule(
  context: CommandContext,
  once: boolean,
  hooks: ScheduleCommandHooks,
): Promise<ExitCode> {
  const { io } = context;
  // A schema behind the code is told by runCli, once, like every command's.
  const app: SchedulerApp = await openSchedulerApp(context.config(), {
    logSink: context.logSink,
    streams: context.streams,
    processMetrics: !once,
  });
  const { log, scheduler, settings } = app;
  const shutdown = onShutdownSignal(() =>
    writeNotice(
      io,
      'warn',
      'stopping: no new ticks; runs in hand finish their batch… (press Ctrl-C again to force)',
    ),
  );
  let stuck = false;
  try {
    if (once) return await runEveryStreamOnce(context, app, shutdown.signal);

    const server = await app.serveHttp();
    scheduler.start();
    for (const line of describeSchedule(app, server)) io.out(line);
    for (const warning of slowScheduleWarnings(app)) log.warn(warning);

    await aborted(shutdown.signal);
    const timeoutSeconds = settings.shutdownTimeoutSeconds;
    const outcome = await scheduler.stop(timeoutSeconds * 1000);
    if (!outcome.finished) {
      stuck = true;
      log.error(
        { pending: outcome.pending },
        `runs still going after ${timeoutSeconds} s (TELESYNC_SHUTDOWN_TIMEOUT_SECONDS): ` +
          `${outcome.pending.map((run) => `${run.stream} of ${run.accountId}`).join(', ')}; ` +
          'exiting without them (the next start continues from their last commit)',
      );
      return EXIT.FAILED;
    }
    writeNotice(io, 'info', 'stopped: every run in hand ended.');
    return EXIT.OK;
  } finally {
    const closing = app.close();
    if (stuck) {
      await Promise.race([
        closing,
        new Promise((resolve) => setTimeout(resolve, CLOSE_AFTER_TIMEOUT_MS).unref()),
      ]);
      // Stuck runs would keep the process alive past the timeout the operator set.
      (hooks.forceExit ?? ((code) => process.exit(code)))(EXIT.FAILED);
    } else {
      await closing;
    }
    shutdown.dispose();
  }
}

async function runEveryStreamOnce(
  context: CommandContext,
  app: SchedulerApp,
  signal: AbortSignal,
): Promise<ExitCode> {
  const { scheduler, settings } = app;
  const onAbort = (): void => void scheduler.stop(settings.shutdownTimeoutSeconds * 1000);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const results = await scheduler.runOnce();
    for (const result of results) context.io.out(formatRunLine(result));
    if (signal.aborted) return EXIT.FAILED;
    return results.some((result) => result.status === 'failed') ? EXIT.FAILED : EXIT.OK;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** What the command prints once it runs: the plan, the accounts, the endpoints. */
function describeSchedule(
  app: Pick<SchedulerApp, 'plan' | 'settings' | 'accountIds' | 'scheduler' | 'streamCallbacks'>,
  server: Pick<RunningHttpServer, 'url' | 'callbacksUrl'> | undefined,
): string[] {
  const { plan, accountIds, scheduler } = app;
  const width = Math.max(...plan.scheduled.map((entry) => entry.cron.length));
  const lines = [
    `Scheduled ${plan.scheduled.length} stream${plan.scheduled.length === 1 ? '' : 's'} for ` +
      `${accountIds.length === 1 ? 'account' : `${accountIds.length} accounts:`} ${accountIds.join(', ')} ` +
      `(crons in ${app.settings.timezone}):`,
    ...plan.scheduled.map((entry) => {
      const next = scheduler.nextRuns(entry.stream, 1)[0];
      return `  ${entry.stream.padEnd(13)}${entry.cron.padEnd(width)}  next ${next?.toISOString() ?? '-'}`;
    }),
  ];
  if (plan.off.length > 0) lines.push(`  off: ${plan.off.join(', ')}`);
  lines.push(
    app.settings.verifyCron === SCHEDULE_OFF
      ? '  verify       off (TELESYNC_VERIFY_CRON)'
      : `  verify       ${app.settings.verifyCron} (every account's ${TRUNK_HISTORY_DAYS} days against the service: telesync verify)`,
  );
  if (server === undefined) {
    lines.push('HTTP server off (TELESYNC_HTTP_PORT=0): no /healthz, no /metrics.');
  } else {
    lines.push(
      `Status:  ${server.url}/`,
      `Health:  ${server.url}/healthz`,
      `Metrics: ${server.url}/metrics`,
    );
  }
  const callbacks = app.streamCallbacks;
  lines.push(
    callbacks.on && server !== undefined
      ? `Stream callbacks: ${callbacks.callbackUrl} (served at ${server.callbacksUrl ?? server.url}${callbacks.path})`
      : `Stream callbacks off: ${callbacks.on ? 'no HTTP server' : callbacks.reason}.`,
  );
  lines.push('Stop with SIGTERM or Ctrl-C.');
  return lines;
}

/** Streams that wait longer between ticks than /healthz allows, so they would read as stale. */
function slowScheduleWarnings(
  app: Pick<SchedulerApp, 'plan' | 'settings'> & { scheduler: Pick<Scheduler, 'nextRuns'> },
): string[] {
  const maxAge = app.settings.healthMaxAgeMinutes;
  return app.plan.scheduled.flatMap(({ stream, cron }) => {
    const gap = longestTickGapMinutes(app.scheduler.nextRuns(stream, TICK_SAMPLE));
    return gap > maxAge
      ? [
          `${stream}: "${cron}" leaves up to ${Math.round(gap)} minutes between ticks, more than ` +
            `TELESYNC_HEALTH_MAX_AGE_MINUTES=${maxAge}; /healthz will call it stale between runs`,
        ]
      : [];
  });
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}

import type { Command } from 'commander';
import { ConfigError } from '../config/config-errors.js';
import type { TelesyncConfig } from '../config/config-types.js';
import { CONFIG_DEFAULTS, scheduleVariable } from '../config/load-config.js';
import { openDatabase } from '../db/connect.js';
import { pendingMigrations } from '../db/migrate.js';
import { createHealthCheck, HEALTH_DATABASE_TIMEOUT_MS } from '../scheduler/health-check.js';
import { findWatermarks, withTimeout } from '../scheduler/health-repository.js';
import {
  startHttpServer,
  type HttpRoutes,
  type RunningHttpServer,
} from '../scheduler/http-server.js';
import { SchedulerMetrics } from '../scheduler/metrics.js';
import {
  longestTickGapMinutes,
  planSchedule,
  type SchedulePlan,
} from '../scheduler/schedule-plan.js';
import { createScheduler, type Scheduler } from '../scheduler/scheduler.js';
import { STREAM_NAMES } from '../sync/streams.js';
import { runStream, type SyncDependencies } from '../sync/sync-runner.js';
import { describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { formatRunLine } from './run-report.js';
import {
  createAccountClients,
  createCliLogger,
  selectAccounts,
  syncDependencies,
} from './service-context.js';
import { onShutdownSignal } from './shutdown.js';

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
  const cronHelp = STREAM_NAMES.map(
    (stream) =>
      `  ${scheduleVariable(stream).padEnd(32)}default "${CONFIG_DEFAULTS.crons[stream]}"`,
  ).join('\n');
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
        `  TELESYNC_SHUTDOWN_TIMEOUT_SECONDS        on SIGTERM, time for runs to finish their batch (default ${CONFIG_DEFAULTS.shutdownTimeoutSeconds})\n` +
        `  TELESYNC_HEALTH_MAX_AGE_MINUTES          /healthz fails when a stream's last success is older (default ${CONFIG_DEFAULTS.healthMaxAgeMinutes})\n\n` +
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
  const config = context.config();
  const accounts = selectAccounts(config, undefined);
  const plan = planSchedule(config.schedule.crons);
  if (plan.scheduled.length === 0) {
    throw new ConfigError([
      {
        key: scheduleVariable(STREAM_NAMES[0]),
        message: `every stream is "off" (${STREAM_NAMES.map(scheduleVariable).join(', ')}); give at least one a cron expression`,
      },
    ]);
  }

  const log = createCliLogger(config, io);
  const database = await openDatabase(config.database, {
    command: 'telesync schedule',
    // Each run in hand holds a connection for its lock and uses more for its batches; /healthz
    // must not queue behind them, or a busy scheduler would read as a dead database.
    maxConnections: Math.max(10, plan.scheduled.length * 3 + 2),
    onIdleError: (error) =>
      log.warn({ err: error }, `an idle database connection failed: ${describeError(error)}`),
  });
  const { clients, close: closeClients } = createAccountClients(config, accounts, log);
  const shutdown = onShutdownSignal(() =>
    io.err(
      'stopping: no new ticks; runs in hand finish their batch… (press Ctrl-C again to force)',
    ),
  );
  let stuck = false;
  try {
    const pending = await pendingMigrations(database);
    if (pending.length > 0) {
      io.err(
        `The schema "${database.schema}" at ${database.location} is not migrated ` +
          `(${pending.length} migration${pending.length === 1 ? '' : 's'} pending: ${pending.map((m) => m.name).join(', ')}). ` +
          'Run telesync migrate first.',
      );
      return EXIT.USAGE;
    }

    const deps: SyncDependencies = syncDependencies(config, database, log);
    const clientOf = new Map(clients.map((client) => [client.authId, client]));
    const accountIds = accounts.map((account) => account.authId);
    const metrics = new SchedulerMetrics({
      now: () => Date.now(),
      processMetrics: !once,
      readWatermarks: () =>
        withTimeout(
          findWatermarks(database.db, accountIds),
          HEALTH_DATABASE_TIMEOUT_MS,
          'the query of the watermarks',
        ),
      onCollectError: (error) =>
        log.warn({ err: error }, `/metrics: watermarks not read: ${describeError(error)}`),
    });
    metrics.initialize(
      plan.scheduled.map((entry) => entry.stream),
      accountIds,
    );
    const scheduler = createScheduler({
      streams: plan.scheduled,
      timezone: config.schedule.timezone,
      accountIds,
      runStream: (accountId, stream, signal) =>
        runStream(deps, clientOf.get(accountId)!, {
          stream,
          command: 'schedule',
          // A run of this stream elsewhere (another scheduler, a manual sync): skip, do not queue.
          lockWaitMs: 0,
          signal,
        }),
      metrics,
      log,
      now: () => Date.now(),
    });

    if (once) return await runEveryStreamOnce(context, scheduler, shutdown.signal, config);

    const startedAtMs = Date.now();
    const server = await startServer(
      config,
      {
        healthz: createHealthCheck({
          database,
          accountIds,
          streams: plan.scheduled.map((entry) => entry.stream),
          maxAgeMinutes: config.schedule.healthMaxAgeMinutes,
          startedAtMs,
          now: () => Date.now(),
        }),
        metrics: () => metrics.render(),
      },
      log,
    );
    try {
      scheduler.start();
      for (const line of describeSchedule(plan, config, accountIds, scheduler, server))
        io.out(line);
      for (const warning of slowScheduleWarnings(plan, config, scheduler)) log.warn(warning);

      await aborted(shutdown.signal);
      const timeoutSeconds = config.schedule.shutdownTimeoutSeconds;
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
      io.err('stopped: every run in hand ended.');
      return EXIT.OK;
    } finally {
      await server?.close();
    }
  } finally {
    const closing = Promise.allSettled([closeClients(), database.close()]);
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
  scheduler: Scheduler,
  signal: AbortSignal,
  config: TelesyncConfig,
): Promise<ExitCode> {
  const onAbort = (): void => void scheduler.stop(config.schedule.shutdownTimeoutSeconds * 1000);
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

/** The HTTP server, or undefined when TELESYNC_HTTP_PORT is 0; a port in use is a configuration problem. */
async function startServer(
  config: TelesyncConfig,
  routes: HttpRoutes,
  log: Logger,
): Promise<RunningHttpServer | undefined> {
  const { httpHost: host, httpPort: port } = config.schedule;
  if (port === 0) return undefined;
  try {
    return await startHttpServer({ host, port, routes, log });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const portProblem = code === 'EADDRINUSE' || code === 'EACCES';
    throw new ConfigError([
      {
        key: portProblem ? 'TELESYNC_HTTP_PORT' : 'TELESYNC_HTTP_HOST',
        message:
          `cannot listen on ${host}:${port} for /healthz and /metrics (${code ?? describeError(error)}); ` +
          `choose ${portProblem ? 'a free port' : 'an address of this host'}, or set TELESYNC_HTTP_PORT=0 to serve neither`,
      },
    ]);
  }
}

/** What the command prints once it runs: the plan, the accounts, the endpoints. */
function describeSchedule(
  plan: SchedulePlan,
  config: TelesyncConfig,
  accountIds: readonly string[],
  scheduler: Pick<Scheduler, 'nextRuns'>,
  server: Pick<RunningHttpServer, 'url'> | undefined,
): string[] {
  const width = Math.max(...plan.scheduled.map((entry) => entry.cron.length));
  const lines = [
    `Scheduled ${plan.scheduled.length} stream${plan.scheduled.length === 1 ? '' : 's'} for ` +
      `${accountIds.length === 1 ? 'account' : `${accountIds.length} accounts:`} ${accountIds.join(', ')} ` +
      `(crons in ${config.schedule.timezone}):`,
    ...plan.scheduled.map((entry) => {
      const next = scheduler.nextRuns(entry.stream, 1)[0];
      return `  ${entry.stream.padEnd(13)}${entry.cron.padEnd(width)}  next ${next?.toISOString() ?? '-'}`;
    }),
  ];
  if (plan.off.length > 0) lines.push(`  off: ${plan.off.join(', ')}`);
  if (server === undefined) {
    lines.push('HTTP server off (TELESYNC_HTTP_PORT=0): no /healthz, no /metrics.');
  } else {
    lines.push(`Health:  ${server.url}/healthz`, `Metrics: ${server.url}/metrics`);
  }
  lines.push('Stop with SIGTERM or Ctrl-C.');
  return lines;
}

/** Streams that wait longer between ticks than /healthz allows, so they would read as stale. */
function slowScheduleWarnings(
  plan: SchedulePlan,
  config: TelesyncConfig,
  scheduler: Pick<Scheduler, 'nextRuns'>,
): string[] {
  const maxAge = config.schedule.healthMaxAgeMinutes;
  return plan.scheduled.flatMap(({ stream, cron }) => {
    const gap = longestTickGapMinutes(scheduler.nextRuns(stream, TICK_SAMPLE));
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

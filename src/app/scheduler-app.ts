import { ConfigError } from '../config/config-errors.js';
import { scheduleVariable } from '../config/config-defaults.js';
import type { TelesyncConfig } from '../config/config-types.js';
import { openDatabase } from '../db/connect.js';
import type { RunningHttpServer } from '../http/http-server.js';
import { planSchedule, type SchedulePlan } from '../scheduler/schedule-plan.js';
import { SCHEDULE_OFF, type ScheduleSettings } from '../scheduler/schedule-settings.js';
import { createVerifySchedule } from '../scheduler/verify-schedule.js';
import { createScheduler, type Scheduler } from '../scheduler/scheduler.js';
import { runStream } from '../sync/run-stream.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { STREAMS } from '../sync/stream-registry.js';
import type { Logger } from '../util/logger.js';
import {
  createAccountClients,
  createAppLogger,
  createConnectionWarner,
  createSyncDependencies,
  createVerifyDependencies,
  databasePoolSize,
  requireMigrated,
  selectAccounts,
  type LogSink,
} from './app-services.js';
import { createServedRoutes } from './served-routes.js';
import type { StreamCallbackService } from './stream-callback-service.js';

/**
 * The composition root of `telesync schedule`: the database, a client per account, the sync
 * services, the metrics, the scheduler and its HTTP server (/ the status page, /healthz, /metrics,
 * and the stream callbacks when TELESYNC_PUBLIC_URL is set), each built once. (The worker of the
 * scale-out work is the next root: a worker-app.ts beside this one, built from app-services.ts and
 * stream-callback-service.ts the same way and mounting its routes on src/http.)
 */
export interface SchedulerApp {
  readonly log: Logger;
  readonly settings: ScheduleSettings;
  readonly plan: SchedulePlan;
  readonly accountIds: readonly string[];
  readonly scheduler: Scheduler;
  /** The stream callback route: served with the HTTP server, or off and why. */
  readonly streamCallbacks: StreamCallbackService;
  /**
   * Starts the HTTP server with the status page, /healthz, /metrics and the callback route when it
   * is on; undefined when TELESYNC_HTTP_PORT is 0. An
   * address it cannot listen on is a ConfigError naming the variable to change.
   */
  serveHttp(): Promise<RunningHttpServer | undefined>;
  /** Closes the HTTP server, then the clients and the database. Never rejects. */
  close(): Promise<void>;
}

export interface SchedulerAppOptions {
  readonly logSink: LogSink;
  /** The streams to schedule (default: the registry); `config` read their schedule variables. */
  readonly streams?: readonly StreamDefinition[];
  /** Node's process metrics on /metrics too (a long-running scheduler, not `--once`). */
  readonly processMetrics: boolean;
}

/** Streams × accounts in hand could ask for more than a PostgreSQL server allows one client. */
const MAX_SCHEDULER_CONNECTIONS = 40;

/**
 * Builds the scheduler application from the configuration. Throws ConfigError when no account is
 * configured or every stream is "off", and SchemaNotMigratedError (having closed what it opened)
 * when the database is not migrated.
 */
export async function openSchedulerApp(
  config: TelesyncConfig,
  options: SchedulerAppOptions,
): Promise<SchedulerApp> {
  const accounts = selectAccounts(config, undefined);
  const definitions = options.streams ?? STREAMS;
  const plan = planSchedule(config.schedule.crons, definitions);
  if (plan.scheduled.length === 0) {
    const variables = definitions.map((stream) => scheduleVariable(stream.name));
    throw new ConfigError([
      {
        key: variables[0] ?? 'TELESYNC_SCHEDULE_<STREAM>',
        message: `every stream is "off" (${variables.join(', ')}); give at least one a cron expression`,
      },
    ]);
  }
  const log = createAppLogger(config, options.logSink);
  const warnConnection = createConnectionWarner(log);
  const database = await openDatabase(config.database, {
    command: 'telesync schedule',
    // Every stream of every account in hand may run at once, each a run using a connection now and
    // then (their locks share one); /healthz must not queue behind them, or a busy scheduler would
    // read as a dead database.
    maxConnections: Math.min(
      MAX_SCHEDULER_CONNECTIONS,
      databasePoolSize(
        plan.scheduled.length * Math.min(accounts.length, config.accountConcurrency),
        config.sync.loadConnections,
      ),
    ),
    onIdleError: (error) => warnConnection('an idle database connection failed', error),
  });
  const { clients, close: closeClients } = createAccountClients(config.api, accounts, log);
  const closeServices = async (): Promise<void> => {
    await Promise.allSettled([closeClients(), database.close()]);
  };

  try {
    await requireMigrated(database);
  } catch (error) {
    await closeServices();
    throw error;
  }

  // Trunk-call runs (the ones that load in lanes) at once: one per account.
  const deps = createSyncDependencies(
    config,
    database,
    log,
    Math.min(accounts.length, config.accountConcurrency),
    definitions,
  );
  const clientOf = new Map(clients.map((client) => [client.authId, client]));
  const accountIds = accounts.map((account) => account.authId);
  const streams = plan.scheduled.map((entry) => entry.stream);
  const served = createServedRoutes({
    config,
    accounts,
    database,
    log,
    streams,
    plan,
    processMetrics: options.processMetrics,
  });
  const { metrics, streamCallbacks } = served;
  const streamScheduler = createScheduler({
    streams: plan.scheduled,
    timezone: config.schedule.timezone,
    accountIds,
    accountConcurrency: config.accountConcurrency,
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

  const verifyCron = config.schedule.verifyCron;
  const verifySchedule =
    verifyCron === SCHEDULE_OFF
      ? undefined
      : createVerifySchedule({
          cron: verifyCron,
          timezone: config.schedule.timezone,
          clients,
          accountConcurrency: config.accountConcurrency,
          deps: createVerifyDependencies(config, database, log),
          metrics,
          log,
        });
  // The streams' ticks and verify's own, started and stopped together.
  const scheduler: Scheduler = {
    ...streamScheduler,
    start() {
      streamScheduler.start();
      verifySchedule?.start();
    },
    async stop(timeoutMs) {
      const [outcome] = await Promise.all([
        streamScheduler.stop(timeoutMs),
        verifySchedule?.stop(timeoutMs),
      ]);
      return outcome;
    },
  };

  let server: RunningHttpServer | undefined;
  return {
    log,
    settings: config.schedule,
    plan,
    accountIds,
    scheduler,
    streamCallbacks,
    async serveHttp() {
      server = await served.serve();
      return server;
    },
    async close() {
      await server?.close();
      await closeServices();
    },
  };
}

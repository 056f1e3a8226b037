import type { AccountConfig, TelesyncConfig } from '../config/config-types.js';
import type { Database } from '../db/connect.js';
import { findWatermarks } from '../db/repositories/health-repository.js';
import { findVerificationSummaries } from '../db/repositories/day-verifications-repository.js';
import { retrievableSinceDay } from '../domain/verify-days.js';
import { epochMicrosFromMillis } from '../util/micros.js';
import type { StreamName } from '../domain/streams.js';
import type { SchedulePlan } from '../scheduler/schedule-plan.js';
import { ConfigError } from '../config/config-errors.js';
import { createHealthzRoute } from '../http/healthz-route.js';
import { startHttpServer, type RunningHttpServer } from '../http/http-server.js';
import type { HttpSettings } from '../http/http-settings.js';
import type { HttpRoute } from '../http/http-route.js';
import { createMetricsRoute } from '../http/metrics-route.js';
import { readStatusPage } from '../http/status-page-data.js';
import { createStatusPageRoute } from '../http/status-page-route.js';
import {
  createHealthCheck,
  HEALTH_DATABASE_TIMEOUT_MS,
  readDatabaseClock,
} from '../scheduler/health-check.js';
import { SchedulerMetrics } from '../scheduler/metrics.js';
import { horizonUnread, readCoverage } from '../scheduler/read-coverage.js';
import { describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import { shareInFlight } from '../util/share-in-flight.js';
import { withTimeout } from '../util/with-timeout.js';
import { TELESYNC_VERSION } from '../version.js';
import {
  createStreamCallbackService,
  type StreamCallbackService,
} from './stream-callback-service.js';

export interface ServedRoutesInput {
  readonly config: TelesyncConfig;
  readonly accounts: readonly AccountConfig[];
  readonly database: Database;
  readonly log: Logger;
  /** The streams this process runs (their run metrics and health). */
  readonly streams: readonly StreamName[];
  /** Every stream's cron or "off", for the status page's schedule lines. */
  readonly plan: SchedulePlan;
  /** Node's process metrics on /metrics too. */
  readonly processMetrics: boolean;
  /**
   * Whether a taken default port moves the server to a free one (a host runs several workers)
   * rather than stop the process; a port given in TELESYNC_HTTP_PORT is always kept. Default false.
   */
  readonly nextFreePort?: boolean;
}

/** What a long-running process (`schedule`, `worker`) serves, built once. */
export interface ServedRoutes {
  readonly metrics: SchedulerMetrics;
  readonly streamCallbacks: StreamCallbackService;
  /**
   * Serves the status page, /healthz, /metrics and the callback route (when it is on) on
   * TELESYNC_HTTP_HOST:PORT from now; undefined when the port is 0.
   */
  serve(): Promise<RunningHttpServer | undefined>;
}

/**
 * The HTTP side shared by the scheduler and the worker: one set of metrics (watermark lag and the
 * horizon gauge read from the database), the health check, the status page and the stream
 * callbacks, so both processes answer the same routes the same way.
 */
export function createServedRoutes(input: ServedRoutesInput): ServedRoutes {
  const { config, accounts, database, log, streams } = input;
  const accountIds = accounts.map((account) => account.authId);
  const { alarmDays } = config.horizonAlarm;
  // Workers may run on machines whose clocks disagree: what is served is aged on the database's
  // clock, read when it is served. The gauges of one scrape ask at once and share one query.
  const databaseNow = shareInFlight(() => readDatabaseClock(database));
  // The ledger only (no scan of trunk_calls): cheap enough for every scrape and probe.
  const readHorizonUnread = async () =>
    horizonUnread(
      await readCoverage(database.db, accountIds, await databaseNow(), { storedRows: false }),
      alarmDays,
    );
  const metrics = new SchedulerMetrics({
    now: databaseNow,
    processMetrics: input.processMetrics,
    readWatermarks: () =>
      withTimeout(
        findWatermarks(database.db, accountIds),
        HEALTH_DATABASE_TIMEOUT_MS,
        'the query of the watermarks',
      ),
    readHorizonUnread: () =>
      withTimeout(
        readHorizonUnread(),
        HEALTH_DATABASE_TIMEOUT_MS,
        'the query of the window ledger',
      ),
    // Two gauges of a scrape read the verifications: one query for both.
    readVerifications: shareInFlight(async () =>
      withTimeout(
        findVerificationSummaries(
          database.db,
          accountIds,
          retrievableSinceDay(epochMicrosFromMillis(await databaseNow())),
        ),
        HEALTH_DATABASE_TIMEOUT_MS,
        'the query of the verifications',
      ),
    ),
    onCollectError: (error) =>
      log.warn({ err: error }, `/metrics: a gauge was not read: ${describeError(error)}`),
  });
  metrics.initialize(streams, accountIds);
  // The page sums every stored call of the strip's 90 days: viewers who ask while it is being read
  // share that read, so that however many ask at once the database serves one.
  const readPage = shareInFlight(async () =>
    readStatusPage(
      {
        db: database.db,
        accountIds,
        schedule: input.plan.every,
        horizonAlarmDays: alarmDays,
        version: TELESYNC_VERSION,
      },
      await databaseNow(),
    ),
  );
  const streamCallbacks = createStreamCallbackService({
    config,
    accounts,
    database,
    log,
    metrics,
    serving: config.schedule.httpPort !== 0,
  });
  return {
    metrics,
    streamCallbacks,
    serve: async () => {
      const own = streamCallbacks.on ? streamCallbacks.listen : undefined;
      const main = await listen(
        {
          host: config.schedule.httpHost,
          port: config.schedule.httpPort,
          orNextFree: input.nextFreePort === true && !config.schedule.httpPortGiven,
        },
        routes(Date.now(), own === undefined),
        log,
      );
      if (main === undefined || own === undefined || !streamCallbacks.on) return main;
      let callbacks: RunningHttpServer | undefined;
      try {
        callbacks = await listen(own, streamCallbacks.routes, log, CALLBACK_LISTENER_KEYS);
      } catch (error) {
        await main.close();
        throw error;
      }
      return {
        ...main,
        callbacksUrl: callbacks?.url,
        close: async () => {
          await Promise.all([main.close(), callbacks?.close()]);
        },
      };
    },
  };

  function routes(startedAtMs: number, withCallbacks: boolean): HttpRoute[] {
    return [
      createHealthzRoute(
        createHealthCheck({
          database,
          accountIds,
          streams,
          maxAgeMinutes: config.schedule.healthMaxAgeMinutes,
          startedAtMs,
          now: () => Date.now(),
          horizon: { alarmDays, read: readHorizonUnread },
        }),
      ),
      createMetricsRoute(() => metrics.render()),
      createStatusPageRoute(readPage),
      ...(streamCallbacks.on && withCallbacks ? streamCallbacks.routes : []),
    ];
  }
}

/** The settings a listener's address comes from, for the message when it cannot listen. */
interface ListenerKeys {
  readonly host: string;
  readonly port: string;
  readonly serves: string;
}

const MAIN_LISTENER_KEYS: ListenerKeys = {
  host: 'TELESYNC_HTTP_HOST',
  port: 'TELESYNC_HTTP_PORT',
  serves: '/healthz, /metrics and callbacks',
};

const CALLBACK_LISTENER_KEYS: ListenerKeys = {
  host: 'TELESYNC_CALLBACK_HOST',
  port: 'TELESYNC_CALLBACK_PORT',
  serves: 'stream callbacks',
};

/** Ports tried after a taken one (settings.orNextFree) before any free port the system picks. */
const NEXT_PORTS_TRIED = 16;

/**
 * The HTTP server, or undefined when the port is 0; a port in use is a configuration problem,
 * unless `settings.orNextFree`: then the next free port of the following few, or any free one.
 */
export async function listen(
  settings: HttpSettings,
  routes: readonly HttpRoute[],
  log: Logger,
  keys: ListenerKeys = MAIN_LISTENER_KEYS,
): Promise<RunningHttpServer | undefined> {
  const { host, port } = settings;
  if (port === 0) return undefined;
  try {
    if (settings.orNextFree === true) return await listenOnNextFree(host, port, routes, log);
    return await startHttpServer({ host, port, routes, log });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const portProblem = code === 'EADDRINUSE' || code === 'EACCES';
    throw new ConfigError([
      {
        key: portProblem ? keys.port : keys.host,
        message:
          `cannot listen on ${host}:${port} for ${keys.serves} (${code ?? describeError(error)}); ` +
          `choose ${portProblem ? 'a free port' : 'an address of this host'}, or ${keys === MAIN_LISTENER_KEYS ? 'set TELESYNC_HTTP_PORT=0 to serve none' : 'unset TELESYNC_CALLBACK_PORT to serve them on TELESYNC_HTTP_PORT'}`,
      },
    ]);
  }
}

async function listenOnNextFree(
  host: string,
  port: number,
  routes: readonly HttpRoute[],
  log: Logger,
): Promise<RunningHttpServer> {
  const candidates = [
    ...Array.from({ length: NEXT_PORTS_TRIED + 1 }, (_, index) => port + index).filter(
      (candidate) => candidate <= 65_535,
    ),
    0,
  ];
  for (const candidate of candidates) {
    try {
      return await startHttpServer({ host, port: candidate, routes, log });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || candidate === 0) throw error;
    }
  }
  throw new Error('unreachable: port 0 either listens or throws');
}

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError } from '../config/config-errors.js';
import {
  createWorkersTable,
  deleteWorker,
  findWorkToShare,
  upsertWorkerHeartbeat,
} from '../db/repositories/job-queue-repository.js';
import type { TelesyncConfig } from '../config/config-types.js';
import { openDatabase } from '../db/connect.js';
import type { RunningHttpServer } from '../http/http-server.js';
import { handleAccountJob, handleVerifyJob } from '../jobs/job-handlers.js';
import { SCHEDULE_OFF } from '../scheduler/schedule-settings.js';
import type { JobQueue } from '../jobs/job-queue.js';
import { jobSchemaName } from '../jobs/job-settings.js';
import { FairShare } from '../jobs/fair-share.js';
import { ACCOUNT_JOBS_QUEUE, openPgBossQueue } from '../jobs/pg-boss-queue.js';
import { runWorkerLoop } from '../jobs/worker-loop.js';
import { planSchedule } from '../scheduler/schedule-plan.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { STREAMS } from '../sync/stream-registry.js';
import { describeError } from '../util/coerce-error.js';
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

/** How often a worker records that it is alive. */
export const WORKER_HEARTBEAT_MS = 10_000;

/**
 * A worker is live while its last heartbeat is at most three heartbeats old: status lists those,
 * and the fair share counts them. A killed worker stops counting within 30 s, before the jobs it
 * held come back (the lease, 60 s by default).
 */
export const WORKER_LIVE_SECONDS = (3 * WORKER_HEARTBEAT_MS) / 1_000;

/**
 * The composition root of `telesync worker`: the database, a client per account, the job queue
 * (pg-boss, in the same PostgreSQL), the schedule kept in the queue, the loop that takes jobs, and
^ * the same HTTP routes as schedule (status page, /healthz, /metrics, stream callbacks). Every worker serves every configured account; pg-boss gives each account
 * to one worker at a time.
 */
export interface WorkerApp {
  readonly log: Logger;
  readonly accountIds: readonly string[];
  readonly concurrency: number;
  /** Starts the HTTP server with the same routes as `schedule` (undefined when TELESYNC_HTTP_PORT is 0). */
  serveHttp(): Promise<RunningHttpServer | undefined>;
  /** Takes jobs until `signal` aborts, then lets the jobs in hand finish their batch. */
  run(signal: AbortSignal): Promise<void>;
  /** Closes the queue, the HTTP server, the clients and the database. Never rejects. */
  close(): Promise<void>;
}

export interface WorkerAppOptions {
  readonly logSink: LogSink;
  /**
   * The streams whose jobs it runs and whose ticks it keeps (default: the registry); `config`
   * read their schedule variables.
   */
  readonly streams?: readonly StreamDefinition[];
  /** Accounts in hand at once (--concurrency); default TELESYNC_ACCOUNT_CONCURRENCY. */
  readonly concurrency?: number;
}

/**
 * Builds the worker. A ConfigError naming DATABASE_URL when the database is the embedded one
 * (workers on several machines share PostgreSQL); SchemaNotMigratedError when not migrated.
 */
export async function openWorkerApp(
  config: TelesyncConfig,
  options: WorkerAppOptions,
): Promise<WorkerApp> {
  const connectionString = config.database.url;
  if (connectionString === undefined) {
    throw new ConfigError([
      {
        key: 'DATABASE_URL',
        message:
          'telesync worker needs PostgreSQL: workers share their jobs through it. Set DATABASE_URL ' +
          '(postgres://user:password@host:5432/dbname), run `telesync migrate`, then start workers; ' +
          'on the embedded database, run `telesync schedule` instead',
      },
    ]);
  }
  const accounts = selectAccounts(config, undefined);
  const accountIds = accounts.map((account) => account.authId);
  const concurrency = options.concurrency ?? config.accountConcurrency;
  const definitions = options.streams ?? STREAMS;
  const plan = planSchedule(config.schedule.crons, definitions);
  const log = createAppLogger(config, options.logSink).child({ component: 'worker' });
  const warnConnection = createConnectionWarner(log);
  const database = await openDatabase(config.database, {
    command: 'telesync worker',
    maxConnections: databasePoolSize(concurrency, config.sync.loadConnections),
    onIdleError: (error) => warnConnection('an idle database connection failed', error),
  });
  const { clients, close: closeClients } = createAccountClients(config.api, accounts, log);
  let queue: JobQueue | undefined;
  const closeServices = async (): Promise<void> => {
    await Promise.allSettled([queue?.stop(), closeClients()]);
    await database.close().catch(() => undefined);
  };

  try {
    // The schema check and pg-boss's start are independent round trips: side by side, the worker
    // takes its first job sooner. A schema behind the code is still refused before any job runs.
    const opening = openPgBossQueue({
      connectionString,
      schema: jobSchemaName(config.database.schema),
      database,
      leaseSeconds: config.jobs.leaseSeconds,
      retryLimit: config.jobs.retryLimit,
      retryDelaySeconds: config.jobs.retryDelaySeconds,
      maxConnections: 4,
      supervise: true,
      streams: definitions.map((stream) => stream.name),
      onError: (error) => warnConnection('job queue (it reconnects by itself)', error),
      serves: (accountId) => accountIds.includes(accountId),
    });
    const [migrated, opened] = await Promise.allSettled([requireMigrated(database), opening]);
    if (opened.status === 'fulfilled') queue = opened.value;
    if (migrated.status === 'rejected') throw migrated.reason;
    if (opened.status === 'rejected') throw opened.reason;
    queue = opened.value;
    const verify = config.schedule.verifyCron;
    const scheduling = queue.keepSchedules(
      verify === SCHEDULE_OFF
        ? plan.scheduled
        : [...plan.scheduled, { stream: 'verify', cron: verify }],
      config.schedule.timezone,
      accountIds,
    );
    await Promise.all([
      scheduling,
      createWorkersTable(database.root, jobSchemaName(config.database.schema)).catch(
        () => undefined,
      ),
    ]);
  } catch (error) {
    await closeServices();
    throw error;
  }
  const jobs = queue;
  const jobSchema = jobSchemaName(config.database.schema);
  const workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let inHand = 0;
  /** Jobs in hand told to end their turn and not ended yet: they no longer count to the share. */
  let yielding = 0;
  const heartbeat = (): Promise<void> =>
    upsertWorkerHeartbeat(database.root, jobSchema, {
      worker_id: workerId,
      host: hostname(),
      pid: process.pid,
      concurrency,
      in_hand: inHand,
      queues: accountIds,
    }).catch((error: unknown) =>
      log.warn({ err: error }, `worker heartbeat not recorded: ${describeError(error)}`),
    );
  await heartbeat();
  const heartbeatTimer = setInterval(() => void heartbeat(), WORKER_HEARTBEAT_MS);
  heartbeatTimer.unref();

  const fairShare = new FairShare(
    () =>
      findWorkToShare(
        database.root,
        jobSchema,
        ACCOUNT_JOBS_QUEUE,
        accountIds,
        WORKER_LIVE_SECONDS,
      ),
    { cacheMs: 1_000, now: () => Date.now() },
  );

  const deps = createSyncDependencies(config, database, log, concurrency, definitions);
  const verifyDeps = createVerifyDependencies(config, database, log);
  const clientOf = new Map(clients.map((client) => [client.authId, client]));
  const streams = plan.scheduled.map((entry) => entry.stream);
  const served = createServedRoutes({
    config,
    accounts,
    database,
    log,
    streams,
    plan,
    processMetrics: true,
    nextFreePort: true,
  });
  const { metrics } = served;

  let server: RunningHttpServer | undefined;
  return {
    log,
    accountIds,
    concurrency,
    async serveHttp() {
      server = await served.serve();
      return server;
    },
    run: (signal) =>
      runWorkerLoop({
        queue: jobs,
        concurrency,
        fairShare: () => fairShare.current(),
        pollMs: config.jobs.pollMs,
        signal,
        log,
        handle: async (taken) => {
          const client = clientOf.get(taken.job.accountId);
          if (client === undefined) {
            await jobs.fail(
              taken,
              `account ${taken.job.accountId} is not configured on this worker`,
            );
            return;
          }
          if (taken.job.kind === 'verify') {
            const verified = await handleVerifyJob(verifyDeps, client, jobs, taken);
            log.info(
              { job: taken.id, account: verified.accountId, status: verified.status },
              `verify job: ${verified.days.filter((day) => day.result === 'differs').length} day(s) differ`,
            );
            return;
          }
          const stream = taken.job.kind === 'sync' ? taken.job.stream : 'trunk_calls';
          metrics.runStarted(stream);
          inHand++;
          try {
            let yielded = false;
            // A sync of the account goes before the rest of its backfill; a worker above its share
            // (it took accounts before the others started) lets one go to a worker with room.
            const shouldYield = async (): Promise<boolean> => {
              const ahead =
                (await jobs.hasWorkAhead(taken)) || inHand - yielding > (await fairShare.current());
              if (ahead && !yielded) {
                yielded = true;
                yielding++;
              }
              return ahead;
            };
            const { outcome, result } = await handleAccountJob(deps, client, jobs, taken, {
              signal,
              leaseSeconds: config.jobs.leaseSeconds,
              shouldYield,
              now: () => Date.now(),
            }).finally(() => {
              if (yielded) yielding--;
            });
            metrics.recordRun(result, Date.now());
            const fields = {
              job: taken.id,
              account: result.accountId,
              stream,
              outcome,
              fetched: result.stats.recordsFetched,
              requests: result.requests.requests,
              durationMs: result.durationMs,
            };
            if (outcome === 'failed')
              log.warn(
                { ...fields, error: result.error },
                `job failed; retried with backoff: ${result.error ?? ''}`,
              );
            else log.info(fields, `job ${outcome}`);
          } finally {
            inHand--;
            metrics.runEnded(stream);
          }
        },
      }),
    async close() {
      clearInterval(heartbeatTimer);
      await deleteWorker(database.root, jobSchema, workerId).catch(() => undefined);
      await server?.close().catch(() => undefined);
      await closeServices();
    },
  };
}

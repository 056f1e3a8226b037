import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { isCredentialsRefused } from '../api/api-errors.js';
import { RequestMeter, type RequestMeterSnapshot } from '../api/request-meter.js';
import type { TelephonyClient } from '../api/telephony-client.js';
import { LockBusyError, withAdvisoryLock } from '../db/advisory-lock.js';
import type { Database } from '../db/connect.js';
import type { LoadGate } from '../load/load-gate.js';
import {
  closeAbandonedRuns,
  finishRun,
  insertSkippedRun,
  insertRun,
  updateRunProgress,
  type RunCounts,
} from '../db/repositories/sync-runs-repository.js';
import { coerceError, describeError } from '../util/coerce-error.js';
import type { SyncSettings } from './sync-settings.js';
import type { Logger } from '../util/logger.js';
import { epochMicrosFromMillis, formatIsoMicros, type EpochMicros } from '../util/micros.js';
import { redactSecrets } from '../util/redact.js';
import { RunStats, type RunContext } from './run-context.js';
import { runUnits } from './run-units.js';
import type { StreamDefinition } from './stream-definition.js';
import { findStream, STREAMS } from './stream-registry.js';
import type { StreamName } from '../domain/streams.js';
import type { BackfillPlan, TimeWindow } from './window-planner.js';

/** What a run needs from the process around it (built once, in the command). */
export interface SyncDependencies {
  readonly database: Database;
  readonly settings: SyncSettings;
  readonly log: Logger;
  /** Pages or lookups of one run in flight at once. */
  readonly pageConcurrency: number;
  /** Transactions of one run's loader in flight at once (see loadLanesFor). */
  readonly loadLanes: number;
  /** The process's way to the database, shared by every run's loader. */
  readonly loadGate: LoadGate;
  /** Texts to remove from anything stored or printed (tokens, passwords). */
  readonly secrets: readonly string[];
  readonly clock?: () => EpochMicros;
  /** The streams a run may name (default: STREAMS, the registry). */
  readonly streams?: readonly StreamDefinition[];
}

export interface RunRequest {
  readonly stream: StreamName;
  /** What started the run, for sync_runs: `sync`, `backfill`, `schedule`, `demo`… */
  readonly command: string;
  /** A trunk-call backfill of this range instead of an incremental run. */
  readonly backfill?: TimeWindow;
  /** How long to wait for another run of the same account and stream; 0 skips at once. */
  readonly lockWaitMs: number;
  readonly signal?: AbortSignal;
  /** Told when the run waits for another one to finish. */
  readonly onWait?: () => void;
  /** Told every few seconds with the run's progress. */
  readonly onProgress?: (stats: RunStats, meter: RequestMeterSnapshot) => void;
  /**
   * The stream in which the service refused the account's credentials earlier in this command:
   * the run reads nothing and is recorded as skipped, saying so (result.credentialsRefused).
   */
  readonly credentialsRefusedIn?: StreamName;
}

export interface SyncResult {
  readonly accountId: string;
  readonly stream: StreamName;
  /** `stopped`: asked to stop (shutdown) before the end; what it fetched is stored. */
  readonly status: 'succeeded' | 'failed' | 'skipped' | 'stopped';
  readonly runId: number | undefined;
  readonly stats: RunStats;
  readonly requests: RequestMeterSnapshot;
  readonly durationMs: number;
  /** Why the run failed or was skipped. */
  readonly error: string | undefined;
  readonly backfill?: BackfillPlan;
  /**
   * The service refused the account's credentials (401), in this run or an earlier one of the
   * account (then the run was skipped): its other streams cannot succeed.
   */
  readonly credentialsRefused?: true;
}

const PROGRESS_INTERVAL_MS = 3_000;

/**
 * One run: one account × one stream. Takes the stream's lock for the account (a second process
 * waits or skips, and says which), records the run in sync_runs, runs the stream, and closes the
 * row with the counts and the outcome. Never throws: the outcome is the result.
 */
export async function runStream(
  deps: SyncDependencies,
  client: TelephonyClient,
  request: RunRequest,
): Promise<SyncResult> {
  const started = performance.now();
  const accountId = client.authId;
  const stats = new RunStats();
  const meter = new RequestMeter();
  const clock = deps.clock ?? (() => epochMicrosFromMillis(Date.now()));
  const log = deps.log.child({ account: accountId, stream: request.stream });
  const result = (
    status: SyncResult['status'],
    runId: number | undefined,
    error: string | undefined,
    backfill?: BackfillPlan,
    credentialsRefused = false,
  ): SyncResult => ({
    accountId,
    stream: request.stream,
    status,
    runId,
    stats,
    requests: meter.snapshot(),
    durationMs: Math.round(performance.now() - started),
    error: error === undefined ? undefined : redactSecrets(error, deps.secrets),
    ...(backfill ? { backfill } : {}),
    ...(credentialsRefused ? { credentialsRefused: true as const } : {}),
  });
  const skip = async (message: string, credentialsRefused = false): Promise<SyncResult> => {
    const runId = await insertSkippedRun(deps.database.db, {
      accountId,
      stream: request.stream,
      command: request.command,
      pid: process.pid,
      host: hostname(),
      reason: message,
    }).catch(() => undefined);
    return result('skipped', runId, message, undefined, credentialsRefused);
  };

  const definition = findStream(deps.streams ?? STREAMS, request.stream);
  if (definition === undefined) return result('failed', undefined, `no stream ${request.stream}`);

  if (request.credentialsRefusedIn !== undefined) {
    const message =
      // The advice is said once, by the run that met the refusal.
      `skipped: the service refused the credentials of account ${accountId} (401) in ` +
      `${request.credentialsRefusedIn}`;
    // The caller prints the skip; the refusal itself was logged by the run that met it.
    log.debug(message);
    return skip(message, true);
  }

  try {
    return await withAdvisoryLock(
      deps.database,
      `${accountId}:${request.stream}`,
      {
        waitMs: request.lockWaitMs,
        ...(request.onWait ? { onWait: request.onWait } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
      },
      async (lockLost, verifyLock) => {
        const abandoned = await closeAbandonedRuns(deps.database.db, accountId, request.stream);
        if (abandoned > 0)
          log.warn(
            { abandoned },
            'closed runs left unfinished by a process that was killed or crashed',
          );
        const runId = await insertRun(deps.database.db, {
          accountId,
          stream: request.stream,
          command: request.command,
          pid: process.pid,
          host: hostname(),
        });
        const context: RunContext = {
          database: deps.database,
          client,
          accountId,
          runId,
          settings: deps.settings,
          pageConcurrency: deps.pageConcurrency,
          loadLanes: deps.loadLanes,
          loadGate: deps.loadGate,
          now: clock,
          log: log.child({ run: runId }),
          meter,
          stats,
          // A lost lock stops the run as a shutdown would, then fails it (below).
          signal: runSignal(request.signal, lockLost),
          lockLost,
        };
        const progress = setInterval(() => {
          request.onProgress?.(stats, meter.snapshot());
          updateRunProgress(deps.database.db, runId, counts(stats, meter)).catch(() => undefined);
        }, PROGRESS_INTERVAL_MS);
        progress.unref();

        let backfill: BackfillPlan | undefined;
        let error: string | undefined;
        let credentialsRefused = false;
        try {
          backfill = await runUnits(
            context,
            definition,
            request.backfill === undefined
              ? { kind: 'sync' }
              : { kind: 'backfill', window: request.backfill },
          );
          if (lockLost.aborted) error = describeError(lockLost.reason);
          else if (stats.failures.length > 0) error = stats.failures.join('; ');
          else if (stats.recordsFetched !== stats.recordsUpserted + stats.recordsRejected) {
            error =
              `records do not add up: ${stats.recordsFetched} fetched but ${stats.recordsUpserted} stored and ` +
              `${stats.recordsRejected} quarantined; this is a bug in telesync, please report it`;
          }
        } catch (thrown) {
          // A failure may be the first sign of a lost session (the lock's own is checked each
          // second): when the lock is gone, that is what the run reports, with what failed first.
          credentialsRefused = isCredentialsRefused(thrown);
          const first = describeError(thrown);
          error =
            lockLost.aborted || !(await verifyLock())
              ? `${describeError(lockLost.reason)} (first failure: ${first})`
              : first;
          log.error({ err: coerceError(thrown) }, `run failed: ${error}`);
        } finally {
          clearInterval(progress);
        }
        request.onProgress?.(stats, meter.snapshot());

        const status: SyncResult['status'] =
          error !== undefined ? 'failed' : stats.stopped ? 'stopped' : 'succeeded';
        if (status === 'stopped') {
          error =
            'stopped on request (shutdown) after the batch in hand; the next run continues from there';
          log.warn(error);
        }
        try {
          await finishRun(deps.database.db, runId, {
            ...counts(stats, meter),
            status,
            error: error === undefined ? null : redactSecrets(error, deps.secrets),
            windowStart: stats.span ? formatIsoMicros(stats.span.start) : null,
            windowEnd: stats.span ? formatIsoMicros(stats.span.end) : null,
            gapStart: stats.gap ? formatIsoMicros(stats.gap.start) : null,
            gapEnd: stats.gap ? formatIsoMicros(stats.gap.end) : null,
          });
        } catch (finishError) {
          // The database may be what failed; the result still says how the run went.
          log.warn(
            { err: coerceError(finishError) },
            'could not record the end of the run in sync_runs',
          );
        }
        return result(status, runId, error, backfill, credentialsRefused);
      },
    );
  } catch (thrown) {
    if (thrown instanceof LockBusyError) {
      const message = `skipped: another telesync run of ${request.stream} for account ${accountId} is in progress`;
      log.info(message);
      return skip(message);
    }
    const message = describeError(thrown);
    log.error({ err: coerceError(thrown) }, `run could not start: ${message}`);
    return result('failed', undefined, message);
  }
}

/**
 * The signal a run's loops and waits watch: the caller's stop request or a lost lock. Every request
 * waiting for its turn listens to it, so it takes any number of listeners.
 */
function runSignal(stop: AbortSignal | undefined, lockLost: AbortSignal): AbortSignal {
  const signal = stop ? AbortSignal.any([stop, lockLost]) : lockLost;
  setMaxListeners(0, signal);
  return signal;
}

function counts(stats: RunStats, meter: RequestMeter): RunCounts {
  return {
    windowsPlanned: stats.windowsPlanned,
    windowsCompleted: stats.windowsCompleted,
    requests: meter.requests,
    retries: meter.retries,
    waitMs: meter.waitMs,
    loadWaitMs: stats.loadWaitMs,
    recordsFetched: stats.recordsFetched,
    recordsUpserted: stats.recordsUpserted,
    recordsChanged: stats.recordsChanged,
    recordsRejected: stats.recordsRejected,
  };
}

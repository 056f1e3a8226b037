import { toEpochMicros } from '../util/micros.js';

/**
 * The verdict of /healthz, as a pure function of what the database said and the clock. The I/O
 * that gathers the rows lives in health-check.ts.
 */

/** The latest runs of one account × stream, as the database has them. */
export interface LatestRuns {
  readonly accountId: string;
  readonly stream: string;
  /** The latest finished run; undefined when none. */
  readonly last:
    | {
        readonly status: string;
        /** ISO text. */
        readonly finishedAt: string;
        readonly error: string | null;
      }
    | undefined;
  /** When the latest successful run finished (ISO text); undefined when none ever did. */
  readonly lastSuccessAt: string | undefined;
}

/** What the database answered: its latest runs, or why it could not. */
export type DatabaseAnswer =
  | { readonly ok: true; readonly runs: readonly LatestRuns[] }
  | { readonly ok: false; readonly error: string };

export interface HealthInput {
  /** Now, epoch milliseconds. */
  readonly nowMs: number;
  /** When the scheduler started, epoch milliseconds. */
  readonly startedAtMs: number;
  /** A stream whose latest success is older than this is stale (TELESYNC_HEALTH_MAX_AGE_MINUTES). */
  readonly maxAgeMinutes: number;
  readonly accountIds: readonly string[];
  /** The scheduled streams; streams that are "off" are not judged. */
  readonly streams: readonly string[];
  readonly database: DatabaseAnswer;
}

/**
 * - `ok`: the latest run did not fail and the latest success is recent enough;
 * - `starting`: within the grace period, no run finished since the scheduler started;
 * - `failed`: the latest finished run failed;
 * - `stale`: the latest success is older than the maximum age;
 * - `never_ran`: no run ever succeeded;
 * - `unknown`: the database did not answer.
 */
export type StreamHealthState = 'ok' | 'starting' | 'failed' | 'stale' | 'never_ran' | 'unknown';

/** One account × stream in the /healthz body (snake_case: it is a public JSON shape). */
export interface StreamHealth {
  readonly account: string;
  readonly stream: string;
  readonly state: StreamHealthState;
  readonly healthy: boolean;
  readonly last_status: string | null;
  readonly last_finished_at: string | null;
  /** Seconds since the latest finished run ended. */
  readonly age_seconds: number | null;
  readonly last_success_at: string | null;
  readonly last_success_age_seconds: number | null;
  readonly error: string | null;
}

/** The /healthz body. */
export interface HealthReport {
  readonly status: 'ok' | 'unhealthy';
  readonly healthy: boolean;
  readonly checked_at: string;
  readonly started_at: string;
  readonly max_age_minutes: number;
  readonly database: { readonly ok: boolean; readonly error: string | null };
  readonly streams: readonly StreamHealth[];
}

/**
 * Judges the scheduler's health: healthy when the database answered and every scheduled stream of
 * every account is `ok` or `starting`.
 *
 * During the grace period (`maxAgeMinutes` after the start) a stream is judged only by the runs
 * that finished since the start: until its first one it is `starting`, whatever happened before.
 * A stream that has never run must not fail before its first tick, and neither may one whose
 * last run was cut short by the previous process's shutdown, or whose last success predates a
 * long stop: a liveness probe would otherwise restart the scheduler in a loop. Runs since the
 * start are judged strictly, and after the grace period all runs are.
 */
export function evaluateHealth(input: HealthInput): HealthReport {
  const maxAgeMs = input.maxAgeMinutes * 60_000;
  const inGrace = input.nowMs - input.startedAtMs < maxAgeMs;
  const byKey = new Map<string, LatestRuns>();
  if (input.database.ok)
    for (const runs of input.database.runs)
      byKey.set(`${runs.accountId}\u0000${runs.stream}`, runs);

  const streams: StreamHealth[] = [];
  for (const account of input.accountIds) {
    for (const stream of input.streams) {
      const runs = byKey.get(`${account}\u0000${stream}`);
      const finishedMs = runs?.last === undefined ? undefined : epochMs(runs.last.finishedAt);
      const successMs = runs?.lastSuccessAt === undefined ? undefined : epochMs(runs.lastSuccessAt);
      const ageSeconds = (ms: number | undefined) =>
        ms === undefined ? null : Math.max(0, Math.round((input.nowMs - ms) / 1000));

      const lastFailed = runs?.last?.status === 'failed';
      const ranSinceStart = finishedMs !== undefined && finishedMs >= input.startedAtMs;
      let state: StreamHealthState;
      if (!input.database.ok) state = 'unknown';
      else if (!lastFailed && successMs !== undefined && input.nowMs - successMs <= maxAgeMs)
        state = 'ok';
      else if (inGrace && !ranSinceStart) state = 'starting';
      else if (lastFailed) state = 'failed';
      else state = successMs === undefined ? 'never_ran' : 'stale';

      streams.push({
        account,
        stream,
        state,
        healthy: state === 'ok' || state === 'starting',
        last_status: runs?.last?.status ?? null,
        last_finished_at: runs?.last?.finishedAt ?? null,
        age_seconds: ageSeconds(finishedMs),
        last_success_at: runs?.lastSuccessAt ?? null,
        last_success_age_seconds: ageSeconds(successMs),
        error: lastFailed ? (runs?.last?.error ?? null) : null,
      });
    }
  }
  const healthy = input.database.ok && streams.every((stream) => stream.healthy);
  return {
    status: healthy ? 'ok' : 'unhealthy',
    healthy,
    checked_at: new Date(input.nowMs).toISOString(),
    started_at: new Date(input.startedAtMs).toISOString(),
    max_age_minutes: input.maxAgeMinutes,
    database: input.database.ok
      ? { ok: true, error: null }
      : { ok: false, error: input.database.error },
    streams,
  };
}

/** Epoch milliseconds of a timestamp as the database returns it (ISO text with microseconds). */
function epochMs(iso: string): number {
  return Math.floor(toEpochMicros(iso) / 1000);
}

import type { LatestRuns } from '../db/repositories/health-repository.js';
import { runAgeSeconds, wholeSeconds } from '../domain/freshness.js';
import { epochMicrosFromMillis, formatIsoFixed, toEpochMicros } from '../util/micros.js';
import type { HorizonUnread } from './read-coverage.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

/**
 * The verdict of /healthz, as a pure function of what the database said and the clock. The I/O
 * that gathers the rows lives in health-check.ts.
 */

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
  /**
   * The horizon alarm (TELESYNC_HORIZON_ALARM_DAYS): days about to leave the 90-day horizon
   * unread, per account. Omitted (or `alarmDays` 0): not judged.
   */
  readonly horizon?: {
    readonly alarmDays: number;
    readonly unread: readonly HorizonUnread[];
  };
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
  /**
   * The trunk_calls days within `alarm_days` of the 90-day horizon that are incomplete or
   * unread, per account (only accounts with some); null when the alarm is off or the database
   * did not answer.
   */
  readonly horizon: {
    readonly alarm_days: number;
    readonly unread: readonly { readonly account: string; readonly days: readonly string[] }[];
  } | null;
  /** Why the report is unhealthy, one sentence each; empty when healthy. */
  readonly reasons: readonly string[];
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
      const lastAge =
        runs?.last === undefined ? undefined : runAgeSeconds(runs.last.finishedAt, input.nowMs);
      const successAge =
        runs?.lastSuccessAt === undefined
          ? undefined
          : runAgeSeconds(runs.lastSuccessAt, input.nowMs);

      const lastFailed = runs?.last?.status === 'failed';
      const ranSinceStart =
        runs?.last !== undefined && toEpochMicros(runs.last.finishedAt) >= input.startedAtMs * 1000;
      let state: StreamHealthState;
      if (!input.database.ok) state = 'unknown';
      else if (!lastFailed && successAge !== undefined && successAge <= input.maxAgeMinutes * 60)
        state = 'ok';
      else if (inGrace && !ranSinceStart) state = 'starting';
      else if (lastFailed) state = 'failed';
      else state = successAge === undefined ? 'never_ran' : 'stale';

      streams.push({
        account,
        stream,
        state,
        healthy: state === 'ok' || state === 'starting',
        last_status: runs?.last?.status ?? null,
        last_finished_at: runs?.last?.finishedAt ?? null,
        age_seconds: lastAge === undefined ? null : wholeSeconds(lastAge),
        last_success_at: runs?.lastSuccessAt ?? null,
        last_success_age_seconds: successAge === undefined ? null : wholeSeconds(successAge),
        error: lastFailed ? (runs?.last?.error ?? null) : null,
      });
    }
  }
  const horizon =
    input.database.ok && input.horizon !== undefined && input.horizon.alarmDays > 0
      ? {
          alarm_days: input.horizon.alarmDays,
          unread: input.horizon.unread
            .filter((account) => account.days.length > 0)
            .map((account) => ({ account: account.accountId, days: account.days })),
        }
      : null;
  const reasons: string[] = [];
  if (!input.database.ok) reasons.push(`the database did not answer: ${input.database.error}`);
  for (const stream of streams)
    if (!stream.healthy) reasons.push(describeStreamState(stream, input.maxAgeMinutes));
  for (const account of horizon?.unread ?? [])
    reasons.push(describeHorizonUnread(account, horizon?.alarm_days ?? 0));
  const healthy =
    input.database.ok &&
    streams.every((stream) => stream.healthy) &&
    (horizon?.unread.length ?? 0) === 0;
  return {
    status: healthy ? 'ok' : 'unhealthy',
    healthy,
    checked_at: formatIsoFixed(epochMicrosFromMillis(input.nowMs)),
    started_at: formatIsoFixed(epochMicrosFromMillis(input.startedAtMs)),
    max_age_minutes: input.maxAgeMinutes,
    database: input.database.ok
      ? { ok: true, error: null }
      : { ok: false, error: input.database.error },
    streams,
    horizon,
    reasons,
  };
}

function describeStreamState(stream: StreamHealth, maxAgeMinutes: number): string {
  const what = `${stream.account} ${stream.stream}`;
  switch (stream.state) {
    case 'failed':
      return `${what}: the latest run failed${stream.error === null ? '' : `: ${stream.error}`}`;
    case 'stale':
      return `${what}: no successful run in the last ${maxAgeMinutes} minutes`;
    case 'never_ran':
      return `${what}: no run ever succeeded`;
    default:
      return `${what}: ${stream.state}`;
  }
}

function describeHorizonUnread(
  account: { readonly account: string; readonly days: readonly string[] },
  alarmDays: number,
): string {
  const first = account.days[0] ?? '';
  const last = account.days.at(-1) ?? first;
  // --to is exclusive: the day after the last one.
  const to = new Date(Date.parse(`${last}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return (
    `${account.account}: ${account.days.length} trunk_calls day(s) within ${alarmDays} days of the ` +
    `${TRUNK_HISTORY_DAYS}-day horizon are incomplete or unread (${account.days.join(', ')}); the service stops ` +
    `serving them soon: run \`telesync backfill --from ${first} --to ${to}\``
  );
}

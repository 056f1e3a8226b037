import { describe, expect, it } from 'vitest';
import type { LatestRuns } from '../../src/db/repositories/health-repository.js';
import { evaluateHealth, type HealthInput } from '../../src/scheduler/health.js';

const MINUTE_MS = 60_000;
const NOW = Date.parse('2025-06-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** The scheduler started two hours ago; the limit is three hours. */
function input(overrides: Partial<HealthInput> = {}): HealthInput {
  return {
    nowMs: NOW,
    startedAtMs: NOW - 120 * MINUTE_MS,
    maxAgeMinutes: 180,
    accountIds: ['MA_ONE'],
    streams: ['trunk_calls'],
    database: { ok: true, runs: [] },
    ...overrides,
  };
}

function runs(
  last: { status: string; minutesAgo: number; error?: string } | undefined,
  successMinutesAgo: number | undefined,
  accountId = 'MA_ONE',
  stream = 'trunk_calls',
): LatestRuns {
  return {
    accountId,
    stream,
    last:
      last === undefined
        ? undefined
        : {
            status: last.status,
            finishedAt: iso(NOW - last.minutesAgo * MINUTE_MS),
            error: last.error ?? null,
          },
    lastSuccessAt:
      successMinutesAgo === undefined ? undefined : iso(NOW - successMinutesAgo * MINUTE_MS),
  };
}

describe('evaluateHealth', () => {
  it('is healthy when the latest run succeeded recently, and says when it ran', () => {
    const report = evaluateHealth(
      input({ database: { ok: true, runs: [runs({ status: 'succeeded', minutesAgo: 5 }, 5)] } }),
    );
    expect(report.healthy).toBe(true);
    expect(report.status).toBe('ok');
    expect(report.database).toEqual({ ok: true, error: null });
    expect(report.streams).toEqual([
      {
        account: 'MA_ONE',
        stream: 'trunk_calls',
        state: 'ok',
        healthy: true,
        last_status: 'succeeded',
        last_finished_at: '2025-06-01T11:55:00.000Z',
        age_seconds: 300,
        last_success_at: '2025-06-01T11:55:00.000Z',
        last_success_age_seconds: 300,
        error: null,
      },
    ]);
    expect(report.checked_at).toBe('2025-06-01T12:00:00.000000Z');
    expect(report.started_at).toBe('2025-06-01T10:00:00.000000Z');
  });

  it('is unhealthy when the latest finished run failed, even with a recent success before it', () => {
    const report = evaluateHealth(
      input({
        database: {
          ok: true,
          runs: [runs({ status: 'failed', minutesAgo: 1, error: 'HTTP 503 from the service' }, 6)],
        },
      }),
    );
    expect(report.healthy).toBe(false);
    expect(report.status).toBe('unhealthy');
    expect(report.streams[0]).toMatchObject({
      state: 'failed',
      healthy: false,
      last_status: 'failed',
      error: 'HTTP 503 from the service',
      last_success_age_seconds: 360,
    });
  });

  it('is unhealthy when the latest success is older than the maximum age', () => {
    const report = evaluateHealth(
      input({
        startedAtMs: NOW - 24 * 60 * MINUTE_MS,
        database: { ok: true, runs: [runs({ status: 'succeeded', minutesAgo: 181 }, 181)] },
      }),
    );
    expect(report.healthy).toBe(false);
    expect(report.streams[0]).toMatchObject({ state: 'stale', age_seconds: 181 * 60 });
  });

  it('accepts a success exactly at the maximum age', () => {
    const report = evaluateHealth(
      input({
        startedAtMs: NOW - 24 * 60 * MINUTE_MS,
        database: { ok: true, runs: [runs({ status: 'succeeded', minutesAgo: 180 }, 180)] },
      }),
    );
    expect(report.streams[0]?.state).toBe('ok');
  });

  it('calls a stream that never ran "starting", and healthy, during the grace period', () => {
    const report = evaluateHealth(input({ startedAtMs: NOW - 179 * MINUTE_MS }));
    expect(report.healthy).toBe(true);
    expect(report.streams[0]).toMatchObject({
      state: 'starting',
      healthy: true,
      last_status: null,
      last_finished_at: null,
      age_seconds: null,
      last_success_at: null,
    });
  });

  it('calls a stream that never ran "never_ran", and unhealthy, once the grace period is over', () => {
    const report = evaluateHealth(input({ startedAtMs: NOW - 180 * MINUTE_MS }));
    expect(report.healthy).toBe(false);
    expect(report.streams[0]).toMatchObject({ state: 'never_ran', healthy: false });
  });

  it('gives a stream whose last success predates a restart the grace period until it runs', () => {
    const stale = runs({ status: 'succeeded', minutesAgo: 300 }, 300);
    const justRestarted = evaluateHealth(
      input({ startedAtMs: NOW - 10 * MINUTE_MS, database: { ok: true, runs: [stale] } }),
    );
    expect(justRestarted.streams[0]).toMatchObject({ state: 'starting', healthy: true });

    const graceOver = evaluateHealth(
      input({ startedAtMs: NOW - 200 * MINUTE_MS, database: { ok: true, runs: [stale] } }),
    );
    expect(graceOver.streams[0]).toMatchObject({ state: 'stale', healthy: false });
  });

  it('excuses, during the grace period, a failure from before the start (a run cut short by the last shutdown)', () => {
    const cutShort = runs(
      { status: 'failed', minutesAgo: 30, error: 'cancelled: the scheduler is stopping' },
      31,
    );
    const report = evaluateHealth(
      input({ startedAtMs: NOW - 10 * MINUTE_MS, database: { ok: true, runs: [cutShort] } }),
    );
    expect(report.healthy).toBe(true);
    expect(report.streams[0]).toMatchObject({
      state: 'starting',
      healthy: true,
      last_status: 'failed',
      error: 'cancelled: the scheduler is stopping',
    });

    const graceOver = evaluateHealth(
      input({ startedAtMs: NOW - 181 * MINUTE_MS, database: { ok: true, runs: [cutShort] } }),
    );
    expect(graceOver.streams[0]).toMatchObject({ state: 'failed', healthy: false });
  });

  it('never excuses a failure since the start, even during the grace period', () => {
    const report = evaluateHealth(
      input({
        startedAtMs: NOW - 10 * MINUTE_MS,
        database: { ok: true, runs: [runs({ status: 'failed', minutesAgo: 1 }, undefined)] },
      }),
    );
    expect(report.healthy).toBe(false);
    expect(report.streams[0]).toMatchObject({ state: 'failed', healthy: false });
  });

  it('is ok at once after a restart when the latest success is recent', () => {
    const report = evaluateHealth(
      input({
        startedAtMs: NOW - MINUTE_MS,
        database: { ok: true, runs: [runs({ status: 'succeeded', minutesAgo: 5 }, 5)] },
      }),
    );
    expect(report.streams[0]).toMatchObject({ state: 'ok', healthy: true });
  });

  it('is unhealthy when the database does not answer, and says why', () => {
    const report = evaluateHealth(
      input({
        database: {
          ok: false,
          error: "the query of the database's clock did not answer within 3000 ms",
        },
      }),
    );
    expect(report.healthy).toBe(false);
    expect(report.database).toEqual({
      ok: false,
      error: "the query of the database's clock did not answer within 3000 ms",
    });
    expect(report.streams).toEqual([
      expect.objectContaining({ stream: 'trunk_calls', state: 'unknown', healthy: false }),
    ]);
  });

  it('judges every account × scheduled stream, and one bad pair makes the whole unhealthy', () => {
    const report = evaluateHealth(
      input({
        accountIds: ['MA_ONE', 'MA_TWO'],
        streams: ['trunk_calls', 'endpoints'],
        database: {
          ok: true,
          runs: [
            runs({ status: 'succeeded', minutesAgo: 1 }, 1, 'MA_ONE', 'trunk_calls'),
            runs({ status: 'succeeded', minutesAgo: 1 }, 1, 'MA_ONE', 'endpoints'),
            runs({ status: 'succeeded', minutesAgo: 1 }, 1, 'MA_TWO', 'trunk_calls'),
            runs({ status: 'failed', minutesAgo: 1 }, 50, 'MA_TWO', 'endpoints'),
            // Not scheduled: not judged.
            runs({ status: 'failed', minutesAgo: 1 }, undefined, 'MA_ONE', 'messages'),
          ],
        },
      }),
    );
    expect(report.streams.map((s) => [s.account, s.stream, s.state])).toEqual([
      ['MA_ONE', 'trunk_calls', 'ok'],
      ['MA_ONE', 'endpoints', 'ok'],
      ['MA_TWO', 'trunk_calls', 'ok'],
      ['MA_TWO', 'endpoints', 'failed'],
    ]);
    expect(report.healthy).toBe(false);
  });

  it('reads timestamps with microseconds and UTC offsets as the database returns them', () => {
    const report = evaluateHealth(
      input({
        database: {
          ok: true,
          runs: [
            {
              accountId: 'MA_ONE',
              stream: 'trunk_calls',
              last: {
                status: 'succeeded',
                finishedAt: '2025-06-01T13:59:00.123456+02:00',
                error: null,
              },
              lastSuccessAt: '2025-06-01T11:59:00.123456Z',
            },
          ],
        },
      }),
    );
    expect(report.streams[0]).toMatchObject({ state: 'ok', age_seconds: 60 });
  });
});

describe('evaluateHealth: the horizon alarm', () => {
  const recent = { ok: true as const, runs: [runs({ status: 'succeeded', minutesAgo: 5 }, 5)] };

  it('fails when days are about to leave the horizon unread, and says which and what to run', () => {
    const report = evaluateHealth(
      input({
        database: recent,
        horizon: {
          alarmDays: 7,
          unread: [{ accountId: 'MA_ONE', days: ['2025-03-05', '2025-03-06'] }],
        },
      }),
    );
    expect(report.healthy).toBe(false);
    expect(report.status).toBe('unhealthy');
    // The streams themselves are fine: the alarm alone fails the check.
    expect(report.streams.map((s) => s.state)).toEqual(['ok']);
    expect(report.horizon).toEqual({
      alarm_days: 7,
      unread: [{ account: 'MA_ONE', days: ['2025-03-05', '2025-03-06'] }],
    });
    expect(report.reasons).toEqual([
      'MA_ONE: 2 trunk_calls day(s) within 7 days of the 90-day horizon are incomplete or unread ' +
        '(2025-03-05, 2025-03-06); the service stops serving them soon: run ' +
        '`telesync backfill --from 2025-03-05 --to 2025-03-07`',
    ]);
  });

  it('is healthy when no day is counted, and not judged when the alarm is off', () => {
    const calm = evaluateHealth(
      input({
        database: recent,
        horizon: { alarmDays: 7, unread: [{ accountId: 'MA_ONE', days: [] }] },
      }),
    );
    expect(calm.healthy).toBe(true);
    expect(calm.horizon).toEqual({ alarm_days: 7, unread: [] });
    expect(calm.reasons).toEqual([]);
    const off = evaluateHealth(
      input({
        database: recent,
        horizon: { alarmDays: 0, unread: [{ accountId: 'MA_ONE', days: ['2025-03-05'] }] },
      }),
    );
    expect(off.healthy).toBe(true);
    expect(off.horizon).toBeNull();
  });

  it('gives a reason for every unhealthy stream too', () => {
    const report = evaluateHealth(
      input({
        database: {
          ok: true,
          runs: [runs({ status: 'failed', minutesAgo: 1, error: 'HTTP 503' }, 30)],
        },
      }),
    );
    expect(report.reasons).toEqual(['MA_ONE trunk_calls: the latest run failed: HTTP 503']);
  });
});

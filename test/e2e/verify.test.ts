import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { epochMicrosFromMillis, type EpochMicros } from '../../src/util/micros.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines, lastJson } from '../support/command-output.js';
import { testAccounts, writeAccountsConfig } from '../support/many-accounts.js';
import { runTelesync, startTelesync, type CommandResult } from '../support/run-telesync.js';
import { freePort, waitFor } from '../support/telesync-process.js';
import { parsePrometheusText, sumOf } from '../support/prometheus-text.js';
import { scheduleVariable } from '../../src/config/config-defaults.js';
import { retrievableSinceDay } from '../../src/domain/verify-days.js';
import type { CliDatabase } from '../support/test-database.js';
import {
  clearOfUtcMidnight,
  horizonStartAt,
  settledEndAt,
  utcDaysTouched,
} from '../support/utc-days.js';
import { SCHEDULES_OFF } from '../support/schedules-off.js';

/**
 * `telesync verify` as a process against the simulator on the fixture's database: a clean
 * backfill agrees day by day; a day tampered with by hand, a late call and a call before the
 * moved cut-off are judged as finance would; --repair puts rows back through the backfill; faults
 * change nothing but the requests, one more per retry.
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const ACCOUNT = { authId: 'MA_E2E_VERIFY', authToken: 'tok_e2e_verify_secret' };

/**
 * The service's clock, held an hour back: no call ends while a test runs, and every call the
 * service lists ended before any run's settle lag, so a backfill leaves nothing for verify to miss.
 */
function heldClock(): () => EpochMicros {
  const heldAt = epochMicrosFromMillis(Date.now() - HOUR_MS);
  return () => heldAt;
}

interface VerifyDay {
  day: string;
  from: string;
  to: string;
  service_count: number;
  stored_count: number;
  difference: number;
  result: string;
}

/**
 * How many days a verify with the default range compares at `atMs`: the day the 90-day cut-off
 * falls in (10 minutes inside it) through the day of the settled end (5 minutes back). 91, or 90
 * when one of the two has just crossed a midnight (23:50 to 00:05 UTC).
 */
function comparedDayCount(atMs: number): number {
  return utcDaysTouched(horizonStartAt(atMs), settledEndAt(atMs)).length;
}

/**
 * How many days status counts at `atMs` for verifies that compared `oldest` to `newest` in all:
 * those from the day of the 90-day cut-off (no margin) on.
 */
function summaryDayCount(atMs: number, oldest: string, newest: string): number {
  const cutOffDay = retrievableSinceDay(epochMicrosFromMillis(atMs));
  const from = cutOffDay > oldest ? cutOffDay : oldest;
  return utcDaysTouched(`${from}T00:00:00Z`, `${newest}T00:00:01Z`).length;
}

/** Runs telesync and says how many days a default verify may compare while it runs. */
async function runTimed(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<CommandResult & { dayCounts: number[] }> {
  const before = Date.now();
  const run = await runTelesync(args, env);
  return { ...run, dayCounts: [comparedDayCount(before), comparedDayCount(Date.now())] };
}

function daysOf(outcome: Record<string, unknown>): VerifyDay[] {
  return outcome.days as VerifyDay[];
}

/** A UTC day `daysAgo` days before today, `YYYY-MM-DD`. */
function dayAgo(daysAgo: number): string {
  return new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
}

async function deleteRowsOfDay(database: CliDatabase, day: string, rows: number): Promise<number> {
  return database.inspect(async ({ db }) => {
    const victims = await db
      .selectFrom('trunk_calls')
      .select('call_uuid')
      .where('end_time', '>=', `${day}T00:00:00Z`)
      .where('end_time', '<', sql<string>`${day}::date + 1`)
      .orderBy('call_uuid')
      .limit(rows)
      .execute();
    await db
      .deleteFrom('trunk_calls')
      .where(
        'call_uuid',
        'in',
        victims.map((row) => row.call_uuid),
      )
      .execute();
    return victims.length;
  });
}

async function storedOfDay(database: CliDatabase, day: string): Promise<number> {
  return database.inspect(async ({ db }) => {
    const row = await db
      .selectFrom('trunk_calls')
      .select(sql<number>`count(*)`.as('n'))
      .where('end_time', '>=', `${day}T00:00:00Z`)
      .where('end_time', '<', sql<string>`${day}::date + 1`)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  });
}

describe('telesync verify after a 90-day backfill', () => {
  const cli = useCliFixture({
    service: () =>
      startSimulator({ seed: 'e2e-verify', calls: 3_000, accounts: [ACCOUNT], now: heldClock() }),
    account: ACCOUNT,
    env: { TELESYNC_CONCURRENCY: '4' },
  });
  let clean: VerifyDay[];
  /** The newest day the last default verify compared. */
  let newestVerified = '';

  it('agrees on every day of a clean backfill, one request a day', async () => {
    await clearOfUtcMidnight(5 * 60_000);
    const backfill = await runTelesync(['backfill', '--days', '90'], cli.env);
    expect(backfill.code, backfill.stderr).toBe(0);
    cli.service.resetStats();

    const verify = await runTimed(['verify', '--json'], cli.env);
    expect(verify.code, verify.stderr).toBe(0);
    const outcome = lastJson(verify.stdout);
    clean = daysOf(outcome);
    // The oldest day from the cut-off, through today: 91 compared parts (90 near midnight).
    expect(verify.dayCounts).toContain(clean.length);
    const days = clean.length;
    expect(clean.filter((day) => day.result !== 'agree')).toEqual([]);
    expect(clean.reduce((sum, day) => sum + day.service_count, 0)).toBeGreaterThan(2_800);
    expect(outcome).toMatchObject({ status: 'verified', days_differ: 0 });
    expect(outcome.calls).toBe(clean.reduce((sum, day) => sum + day.stored_count, 0));
    expect(cli.service.stats().requests.total).toBe(days);

    // Each finding is kept, one row per day.
    const kept = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('day_verifications')
        .select(['result', sql<number>`count(*)`.as('n')])
        .groupBy('result')
        .execute(),
    );
    expect(kept.map((row) => ({ result: row.result, n: Number(row.n) }))).toEqual([
      { result: 'agree', n: days },
    ]);

    // The text form: the summary line only.
    const text = await runTimed(['verify'], cli.env);
    expect(text.code, text.stderr).toBe(0);
    const summary = new RegExp(
      `^${ACCOUNT.authId}: (\\d+) days verified, \\1 agree: [\\d,]+ calls, \\d+(\\.\\d+)? billed, checked \\S+Z$`,
    ).exec(text.stdout.trim());
    expect(summary, text.stdout).not.toBeNull();
    expect(text.dayCounts).toContain(Number(summary![1]));
  });

  it('names the one day whose rows were deleted by hand, and --repair puts them back', async () => {
    const day = dayAgo(10);
    const removed = await deleteRowsOfDay(cli.database, day, 3);
    expect(removed).toBe(3);
    const before = await storedOfDay(cli.database, day);

    const verify = await runTelesync(['verify', '--json'], cli.env);
    expect(verify.code, verify.stderr).toBe(1);
    const outcome = lastJson(verify.stdout);
    expect(outcome.differing_days).toEqual([day]);
    expect(daysOf(outcome).find((d) => d.day === day)).toMatchObject({
      stored_count: before,
      service_count: before + 3,
      difference: -3,
      result: 'differs',
    });
    const text = await runTimed(['verify'], cli.env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `${ACCOUNT.authId} ${day}: service ${before + 3}, stored ${before}, difference -3`,
    );
    const summary = /(\d+) days verified, (\d+) agree/.exec(text.stdout);
    expect(summary, text.stdout).not.toBeNull();
    expect(text.dayCounts).toContain(Number(summary![1]));
    expect(Number(summary![2])).toBe(Number(summary![1]) - 1);

    const repair = await runTelesync(['verify', '--repair', '--json'], cli.env);
    expect(repair.code, repair.stderr).toBe(0);
    const repaired = lastJson(repair.stdout);
    expect(repaired.repair).toEqual({
      days: [day],
      rows_added: 3,
      rows_no_longer_listed: 0,
      still_differing: [],
      errors: [],
    });
    expect(repaired.days_differ).toBe(0);
    expect(await storedOfDay(cli.database, day)).toBe(before + 3);
    // Through the backfill path: a run of its own in sync_runs, the day's window read again.
    const runs = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(['status', 'records_fetched'])
        .where('command', '=', 'verify --repair')
        .execute(),
    );
    expect(runs).toEqual([{ status: 'succeeded', records_fetched: before + 3 }]);
  });

  it('finds a call the service listed after the backfill (a late record)', async () => {
    const day = dayAgo(5);
    const stored = await storedOfDay(cli.database, day);
    cli.service.addCall({ endTime: `${day}T12:34:56.789012Z` });
    const verify = await runTelesync(['verify', '--days', '30', '--json'], cli.env);
    expect(verify.code, verify.stderr).toBe(1);
    const outcome = lastJson(verify.stdout);
    expect(outcome.differing_days).toEqual([day]);
    expect(daysOf(outcome).find((d) => d.day === day)).toMatchObject({
      service_count: stored + 1,
      stored_count: stored,
      difference: -1,
    });
    const repair = await runTelesync(['verify', '--days', '30', '--repair', '--json'], cli.env);
    expect(repair.code, repair.stderr).toBe(0);
    expect(lastJson(repair.stdout).repair).toMatchObject({ rows_added: 1 });
  });

  it('says what the service no longer lists and keeps it', async () => {
    const day = dayAgo(20);
    await cli.database.inspect(async ({ db }) => {
      const row = await db
        .selectFrom('trunk_calls')
        .selectAll()
        .where('end_time', '>=', `${day}T00:00:00Z`)
        .where('end_time', '<', sql<string>`${day}::date + 1`)
        .limit(1)
        .executeTakeFirstOrThrow();
      await db
        .insertInto('trunk_calls')
        .values({ ...row, call_uuid: 'not-at-the-service-any-more' })
        .execute();
    });
    const repair = await runTelesync(['verify', '--repair'], cli.env);
    expect(repair.code).toBe(1);
    expect(repair.stdout).toContain(`${ACCOUNT.authId} ${day}: service`);
    expect(repair.stdout).toContain(
      '1 rows stored that the service no longer lists (kept, not deleted)',
    );
    expect(
      await cli.database.inspect(({ db }) =>
        db
          .selectFrom('trunk_calls')
          .select('call_uuid')
          .where('call_uuid', '=', 'not-at-the-service-any-more')
          .execute(),
      ),
    ).toHaveLength(1);
    await cli.database.inspect(({ db }) =>
      db.deleteFrom('trunk_calls').where('call_uuid', '=', 'not-at-the-service-any-more').execute(),
    );
  });

  it('does not report rows of the oldest day stored from before the 90-day cut-off', async () => {
    // A row read while the cut-off was earlier: the service no longer counts that part of the day.
    const cutOff = Date.parse(horizonStartAt(Date.now()));
    const dayStart = Math.floor(cutOff / DAY_MS) * DAY_MS;
    const endTime = new Date(cutOff - Math.min(5 * 60_000, (cutOff - dayStart) / 2)).toISOString();
    await cli.database.inspect(async ({ db }) => {
      const row = await db.selectFrom('trunk_calls').selectAll().limit(1).executeTakeFirstOrThrow();
      await db
        .insertInto('trunk_calls')
        .values({ ...row, call_uuid: 'read-before-the-cut-off-moved', end_time: endTime })
        .execute();
    });
    const verify = await runTelesync(['verify', '--json'], cli.env);
    expect(verify.code, verify.stderr).toBe(0);
    const oldest = daysOf(lastJson(verify.stdout))[0]!;
    expect(oldest.day).toBe(new Date(dayStart).toISOString().slice(0, 10));
    expect(Date.parse(oldest.from)).toBeGreaterThan(Date.parse(endTime));
    expect(oldest.result).toBe('agree');
  });

  it('gives the same findings while the service answers 429 and 5xx, one request more per retry', async () => {
    const strip = (days: VerifyDay[]) =>
      days.map(({ day, service_count, stored_count }) => ({ day, service_count, stored_count }));
    const reference = await runTelesync(['verify', '--json'], cli.env);
    expect(reference.code, reference.stderr).toBe(0);
    cli.service.setFaults({ tooManyRequests: 0.05, retryAfterSeconds: 1, serverErrors: 0.05 });
    cli.service.resetStats();
    try {
      const verify = await runTimed(['verify', '--json'], cli.env);
      expect(verify.code, verify.stderr).toBe(0);
      const faulted = daysOf(lastJson(verify.stdout));
      expect(verify.dayCounts).toContain(faulted.length);
      newestVerified = faulted.at(-1)!.day;
      // Near midnight one of the two runs may compare a day the other does not.
      const referenceDays = daysOf(lastJson(reference.stdout));
      const both = (days: VerifyDay[], other: VerifyDay[]) =>
        days.filter((d) => other.some((o) => o.day === d.day));
      expect(strip(both(faulted, referenceDays))).toEqual(strip(both(referenceDays, faulted)));
      const stats = cli.service.stats();
      const injected = stats.faults.tooManyRequests + stats.faults.serverErrors;
      expect(injected).toBeGreaterThan(0);
      // A request a day, and one more for each faulted answer.
      expect(stats.requests.total).toBe(faulted.length + injected);
    } finally {
      cli.service.setFaults({});
    }
  });
  it('shows the findings in status and state show', async () => {
    const before = Date.now();
    const status = await runTelesync(['status', '--json'], cli.env);
    expect(status.code, status.stderr).toBe(0);
    // Every day verified since the cut-off's day: 91, or 90 when a midnight moved either end.
    const days = Number(
      (lastJson(status.stdout).verifications as { days_agree: number }[])[0]?.days_agree,
    );
    expect(
      [before, Date.now()].map((at) => summaryDayCount(at, clean[0]!.day, newestVerified)),
    ).toContain(days);
    expect(lastJson(status.stdout).verifications).toEqual([
      expect.objectContaining({ account: ACCOUNT.authId, days_agree: days, days_differ: 0 }),
    ]);
    const text = await runTelesync(['status'], cli.env);
    expect(text.stdout).toMatch(
      new RegExp(`trunk_calls verified \\S+Z: ${days} days, ${days} agree\n`),
    );
    const state = await runTelesync(['state', 'show', 'trunk_calls'], cli.env);
    expect(state.code, state.stderr).toBe(0);
    expect(state.stdout).toMatch(new RegExp(` {15}verified \\S+Z: ${days} days, ${days} agree`));
  });

  it('runs on its own cron under schedule: the page marks the days, /metrics counts them', async () => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const before = Date.now();
    // Tampered before schedule starts: the embedded database admits one process at a time.
    const day = dayAgo(7);
    await deleteRowsOfDay(cli.database, day, 1);
    const scheduler = startTelesync(
      ['schedule'],
      cli.envWith({
        ...SCHEDULES_OFF,
        // Not within the test: only verify ticks.
        [scheduleVariable('trunk_calls')]: '0 0 1 1 *',
        TELESYNC_VERIFY_CRON: '*/2 * * * * *',
        TELESYNC_HTTP_PORT: String(port),
      }),
      { timeoutMs: 120_000 },
    );
    try {
      await scheduler.waitForStdout(/^Metrics: /m, 30_000);
      expect(scheduler.stdout()).toContain('verify       */2 * * * * *');
      const metrics = await waitFor(
        async () => {
          const samples = parsePrometheusText(await (await fetch(`${origin}/metrics`)).text());
          const last = sumOf(samples, 'telesync_verify_last_timestamp_seconds', {
            account: ACCOUNT.authId,
          });
          const differs = sumOf(samples, 'telesync_verify_days', {
            account: ACCOUNT.authId,
            result: 'differs',
          });
          return last * 1000 > before && differs === 1 ? samples : undefined;
        },
        { timeoutMs: 30_000, what: 'a scheduled verify that finds the tampered day' },
      );
      const agree = sumOf(metrics, 'telesync_verify_days', {
        account: ACCOUNT.authId,
        result: 'agree',
      });
      // The tampered day differs; every other day verified since the cut-off's day agrees.
      const times = [before, Date.now()];
      const settledDay = (at: number) => settledEndAt(at).slice(0, 10);
      expect(
        times.flatMap((at) =>
          times.map((end) => summaryDayCount(at, clean[0]!.day, settledDay(end))),
        ),
      ).toContain(agree + 1);
      const html = await (await fetch(`${origin}/`)).text();
      expect(html).toMatch(new RegExp(`class="day [a-z ]*verify-differs" data-day="${day}"`));
      expect(html).toMatch(new RegExp(`class="day complete verified" data-day="${dayAgo(8)}"`));
      expect(html).toContain(`<span class="bad">differing: ${day}</span>`);
    } finally {
      scheduler.kill('SIGTERM');
      const ended = await scheduler.exited;
      expect(ended.code, ended.stderr).toBe(0);
    }
    const repair = await runTelesync(['verify', '--repair'], cli.env);
    expect(repair.code, repair.stdout).toBe(0);
  });
});

describe('telesync verify of two accounts', () => {
  const accounts = testAccounts('MA_E2E_VERIFY2', 2);
  const cli = useCliFixture({
    service: () =>
      startSimulator({ seed: 'e2e-verify-two', calls: 1_500, accounts, now: heldClock() }),
    env: { TELESYNC_CONFIG: writeAccountsConfig(accounts) },
  });

  it("names only the tampered account's day", async () => {
    await clearOfUtcMidnight(5 * 60_000);
    const backfill = await runTelesync(['backfill', '--days', '30'], cli.env);
    expect(backfill.code, backfill.stderr).toBe(0);
    const day = dayAgo(3);
    await cli.database.inspect(async ({ db }) => {
      const victim = await db
        .selectFrom('trunk_calls')
        .select('call_uuid')
        .where('account_id', '=', accounts[1]!.authId)
        .where('end_time', '>=', `${day}T00:00:00Z`)
        .where('end_time', '<', sql<string>`${day}::date + 1`)
        .limit(1)
        .executeTakeFirstOrThrow();
      await db.deleteFrom('trunk_calls').where('call_uuid', '=', victim.call_uuid).execute();
    });
    const verify = await runTelesync(['verify', '--days', '30', '--json'], cli.env);
    expect(verify.code, verify.stderr).toBe(1);
    const outcomes = jsonLines(verify.stdout);
    expect(outcomes.map((o) => [o.account_id, o.differing_days])).toEqual([
      [accounts[0]!.authId, []],
      [accounts[1]!.authId, [day]],
    ]);
    const one = await runTelesync(
      ['verify', '--days', '30', '--account', accounts[0]!.authId],
      cli.env,
    );
    expect(one.code, one.stderr).toBe(0);
  });

  it('refuses bad usage with exit 2 and the fix', async () => {
    const both = await runTelesync(['verify', '--days', '3', '--from', '2026-01-01'], cli.env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give either --days or --from/--to, not both');
    const many = await runTelesync(['verify', '--days', '400'], cli.env);
    expect(many.code).toBe(2);
    expect(many.stderr).toContain('--days "400" must be a whole number from 1 to 91');
  });
});

describe('a call that ends exactly on a UTC midnight', () => {
  const BOUNDARY = { authId: 'MA_E2E_MIDNIGHT', authToken: 'tok_e2e_midnight_secret' };
  const cli = useCliFixture({
    service: () =>
      startSimulator({ seed: 'e2e-midnight', calls: 600, accounts: [BOUNDARY], now: heldClock() }),
    account: BOUNDARY,
    // Every sync reaches back over the boundary, so both windows beside it are probed.
    env: { TELESYNC_LOOKBACK_HOURS: '48' },
  });

  it('is stored once, never quarantined; every window adds up, verify agrees, a second sync only probes', async () => {
    await clearOfUtcMidnight(5 * 60_000);
    const midnight = `${dayAgo(1)}T00:00:00.000000Z`;
    const call = cli.service.addCall({ endTime: midnight });
    const backfill = await runTelesync(['backfill', '--days', '5', '--json'], cli.env);
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(lastJson(backfill.stdout)).toMatchObject({ records_rejected: 0 });

    const { stored, rejected, windows } = await cli.database.inspect(async ({ db }) => ({
      stored: await db
        .selectFrom('trunk_calls')
        .select(['call_uuid', 'end_time'])
        .where('call_uuid', '=', String(call.call_uuid))
        .execute(),
      rejected: await db.selectFrom('rejected_records').select('reason').execute(),
      windows: await db
        .selectFrom('sync_windows')
        .select(['slot_start', 'status', 'total_count', 'rows_stored'])
        .orderBy('slot_start')
        .execute(),
    }));
    expect(stored).toEqual([{ call_uuid: call.call_uuid, end_time: `${dayAgo(1)}T00:00:00Z` }]);
    expect(rejected).toEqual([]);
    expect(windows.length).toBeGreaterThanOrEqual(5);
    expect(
      windows.filter((w) => w.status !== 'complete' || w.total_count !== w.rows_stored),
    ).toEqual([]);

    const verify = await runTelesync(['verify', '--days', '5', '--json'], cli.env);
    expect(verify.code, verify.stdout).toBe(0);

    const first = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
    expect(first.code, first.stderr).toBe(0);
    const second = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
    expect(second.code, second.stderr).toBe(0);
    const run = lastJson(second.stdout);
    expect(run).toMatchObject({ status: 'succeeded', records_fetched: 0, records_rejected: 0 });
    // The windows on both sides of the midnight, and today's: one count each, no page.
    expect(Number(run.windows_planned)).toBeGreaterThanOrEqual(3);
    expect(run.requests).toBe(run.windows_planned);
  });
});

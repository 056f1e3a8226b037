import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { canonicalDecimal, oracleCalls, sumDecimals } from '../support/simulator-oracle.js';
import { createCliDatabase, type CliDatabase } from '../support/test-database.js';
import { runTelesync } from '../support/run-telesync.js';

const ACCOUNT = { authId: 'MA_E2E_TRUNK', authToken: 'tok_e2e_trunk_secret' };
const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

function envFor(
  sim: RunningSimulator,
  database: CliDatabase,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...database.env,
    TELESYNC_BASE_URL: sim.url,
    TELESYNC_AUTH_ID: ACCOUNT.authId,
    TELESYNC_AUTH_TOKEN: ACCOUNT.authToken,
    TELESYNC_MAX_RPS: '5000',
    TELESYNC_CONCURRENCY: '8',
    TELESYNC_LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** The last line of a command's stdout, parsed (commands run with --json). */
function lastJson(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

async function storedCalls(database: CliDatabase, fromIso: string, toIso: string) {
  return database.inspect(async ({ db }) =>
    db
      .selectFrom('trunk_calls')
      .select(['call_uuid', 'total_amount', 'end_time'])
      .where('end_time', '>=', fromIso)
      .where('end_time', '<', toIso)
      .orderBy('call_uuid')
      .execute(),
  );
}

describe('a 90-day backfill, then incremental syncs', () => {
  let sim: RunningSimulator;
  let database: CliDatabase;
  let env: Record<string, string>;
  let covered: { from: string; to: string };

  beforeAll(async () => {
    sim = await startSimulator({ seed: 'e2e-trunk', calls: 55_000, accounts: [ACCOUNT] });
    database = createCliDatabase();
    env = envFor(sim, database);
    const migrate = await runTelesync(['migrate'], env);
    expect(migrate.code, migrate.stderr).toBe(0);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.cleanup();
  });

  it('lands every call of the horizon exactly once, with the exact sum of total_amount', async () => {
    const result = await runTelesync(['backfill', '--days', '90', '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    const outcome = lastJson(result.stdout);
    expect(outcome).toMatchObject({ status: 'succeeded', records_rejected: 0 });
    covered = { from: String(outcome.covered_from), to: String(outcome.covered_to) };

    const expected = oracleCalls(sim, Date.parse(covered.from), Date.parse(covered.to));
    expect(expected.length).toBeGreaterThanOrEqual(50_000);
    const stored = await storedCalls(database, covered.from, covered.to);
    expect(stored.length).toBe(expected.length);
    expect(new Set(stored.map((row) => row.call_uuid)).size).toBe(stored.length);
    expect(stored.map((row) => row.call_uuid)).toEqual(
      expected.map((call) => call.call_uuid).sort(),
    );

    const storedSum = await database.inspect(async ({ db }) => {
      const row = await db
        .selectFrom('trunk_calls')
        .select(sql<string>`sum(total_amount)::text`.as('total'))
        .where('end_time', '>=', covered.from)
        .where('end_time', '<', covered.to)
        .executeTakeFirstOrThrow();
      return row.total;
    });
    expect(canonicalDecimal(storedSum)).toBe(
      canonicalDecimal(sumDecimals(expected.map((call) => call.total_amount))),
    );

    // Each amount digit for digit, not just the total.
    const amounts = new Map(expected.map((call) => [call.call_uuid, call.total_amount]));
    expect(stored.filter((row) => row.total_amount !== amounts.get(row.call_uuid))).toEqual([]);

    // The ledger reconciles: every window complete, service totals equal the rows stored.
    const ledger = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_windows')
        .select([
          'status',
          sql<number>`count(*)`.as('windows'),
          sql<number>`sum(total_count)`.as('total'),
          sql<number>`sum(rows_stored)`.as('stored'),
        ])
        .groupBy('status')
        .execute(),
    );
    expect(ledger).toEqual([
      { status: 'complete', windows: 91, total: expected.length, stored: expected.length },
    ]);
  });

  it('then a sync reads only the lookback, and a second one changes nothing', async () => {
    const first = await runTelesync(['sync', 'trunk_calls', '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const second = await runTelesync(['sync', 'trunk_calls', '--json'], env);
    expect(second.code, second.stderr).toBe(0);
    const run = lastJson(second.stdout);
    expect(run).toMatchObject({ status: 'succeeded', records_changed: 0, records_rejected: 0 });
    // One count probe per window of the lookback (6 hours: at most two day-windows), nothing more
    // unless calls ended in the few seconds between the two syncs.
    expect(Number(run.windows_planned)).toBeLessThanOrEqual(2);
    if (Number(run.records_fetched) === 0) expect(run.requests).toBe(run.windows_planned);

    const watermark = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_state')
        .select('watermark')
        .where('stream', '=', 'trunk_calls')
        .executeTakeFirstOrThrow(),
    );
    expect(Date.parse(watermark.watermark!)).toBeGreaterThan(Date.now() - 10 * 60 * 1000);
  });

  it('catches a call that arrives late in a window already read, with the next run', async () => {
    const endTime = new Date(Date.now() - 2 * HOUR_MS).toISOString();
    const late = sim.addCall({ endTime });
    const result = await runTelesync(['sync', 'trunk_calls', '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(lastJson(result.stdout)).toMatchObject({ status: 'succeeded' });
    const row = await database.inspect(({ db }) =>
      db
        .selectFrom('trunk_calls')
        .select(['call_uuid', 'total_amount'])
        .where('call_uuid', '=', String(late.call_uuid))
        .executeTakeFirst(),
    );
    expect(row).toEqual({ call_uuid: late.call_uuid, total_amount: late.total_amount });
  });
  it('re-reads the previous UTC day in full once a day, even where the lookback does not reach', async () => {
    const todayStart = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const yesterday = new Date(todayStart - DAY_MS).toISOString();
    // As if yesterday's window was last read in full yesterday.
    await database.inspect(({ db }) =>
      db
        .updateTable('sync_windows')
        .set({ read_at: new Date(todayStart - HOUR_MS).toISOString() })
        .where('slot_start', '=', yesterday)
        .execute(),
    );
    const startedAt = Date.now();
    const noLookback = { ...env, TELESYNC_LOOKBACK_HOURS: '0' };
    const first = await runTelesync(['sync', 'trunk_calls', '--json'], noLookback);
    expect(first.code, first.stderr).toBe(0);
    const readAt = async () =>
      database.inspect(async ({ db }) => {
        const row = await db
          .selectFrom('sync_windows')
          .select(['read_at', 'status'])
          .where('slot_start', '=', yesterday)
          .executeTakeFirstOrThrow();
        return row;
      });
    const afterFirst = await readAt();
    expect(afterFirst.status).toBe('complete');
    expect(Date.parse(afterFirst.read_at!)).toBeGreaterThanOrEqual(startedAt - 1000);
    // Every page of yesterday was read: far more requests than windows.
    expect(Number(lastJson(first.stdout).requests)).toBeGreaterThan(
      Number(lastJson(first.stdout).windows_planned) + 10,
    );

    // Done for today: the next run does not even count it.
    const second = await runTelesync(['sync', 'trunk_calls', '--json'], noLookback);
    expect(second.code, second.stderr).toBe(0);
    expect((await readAt()).read_at).toBe(afterFirst.read_at);
    expect(Number(lastJson(second.stdout).windows_planned)).toBe(1);
  });

  it('records the unrecoverable gap when the watermark fell behind the 90-day horizon', async () => {
    const lost = new Date(Date.now() - 100 * DAY_MS).toISOString();
    await database.inspect(({ db }) =>
      db
        .updateTable('sync_state')
        .set({ watermark: lost })
        .where('stream', '=', 'trunk_calls')
        .execute(),
    );
    const result = await runTelesync(['sync', 'trunk_calls', '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    const run = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(['gap_start', 'gap_end', 'status'])
        .where('id', '=', Number(lastJson(result.stdout).run_id))
        .executeTakeFirstOrThrow(),
    );
    expect(run.status).toBe('succeeded');
    expect(Date.parse(run.gap_start!)).toBe(Date.parse(lost));
    // The gap ends at the horizon (90 days, less telesync's 10-minute margin).
    expect(Date.now() - Date.parse(run.gap_end!)).toBeGreaterThan(89.99 * DAY_MS);
    expect(Date.now() - Date.parse(run.gap_end!)).toBeLessThan(90 * DAY_MS);
    expect(result.stderr).toMatch(/the watermark fell behind the 90-day horizon/);
    const status = await runTelesync(['status'], env);
    expect(status.stdout).toMatch(
      /! trunk_calls: unrecoverable gap .* those calls left the 90-day horizon before they were synced/,
    );
  });
});

describe('a faulty service', () => {
  let sim: RunningSimulator;
  let database: CliDatabase;
  let env: Record<string, string>;
  const from = new Date(Date.now() - 6 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 1 * DAY_MS).toISOString().slice(0, 10);

  beforeAll(async () => {
    sim = await startSimulator({ seed: 'e2e-faults', calls: 30_000, accounts: [ACCOUNT] });
    database = createCliDatabase();
    env = envFor(sim, database);
    expect((await runTelesync(['migrate'], env)).code).toBe(0);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.cleanup();
  });

  it('quarantines malformed records with their reason and exact bytes, and stores the rest', async () => {
    sim.setFaults({ malformed: 0.02 });
    const result = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    const outcome = lastJson(result.stdout);
    // What the service holds: its malformed records are the same calls on every read.
    const served = oracleCalls(sim, Date.parse(from), Date.parse(to));
    sim.setFaults({});
    const servedByText = new Set(served.map((call) => call.text));

    const { stored, rejected } = await database.inspect(async ({ db }) => ({
      stored: await db
        .selectFrom('trunk_calls')
        .select('call_uuid')
        .where('end_time', '>=', from)
        .where('end_time', '<', to)
        .execute(),
      rejected: await db
        .selectFrom('rejected_records')
        .select(['reason', 'raw_payload', 'record_key', 'stream'])
        .execute(),
    }));
    expect(rejected.length).toBeGreaterThan(0);
    expect(stored.length + rejected.length).toBe(served.length);
    expect(outcome).toMatchObject({ status: 'succeeded', records_rejected: rejected.length });
    for (const record of rejected) {
      expect(record.stream).toBe('trunk_calls');
      expect(record.reason).toMatch(
        /end_time|answer_time|initiation_time|total_amount|total_rate|call_uuid/,
      );
      // Byte for byte what the service sent (the oracle re-serialises its parsed copy, so compare parsed).
      expect(servedByText.has(JSON.stringify(JSON.parse(record.raw_payload!)))).toBe(true);
    }
  });

  it('a service that stays down fails the run clearly after bounded retries; the watermark does not move; the next run completes', async () => {
    const fastRetries = { TELESYNC_MAX_RETRIES: '2', TELESYNC_HTTP_TIMEOUT_MS: '2000' };
    const first = await runTelesync(['sync', 'trunk_calls', '--json'], { ...env, ...fastRetries });
    expect(first.code, first.stderr).toBe(0);
    const watermarkBefore = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_state')
        .select('watermark')
        .where('stream', '=', 'trunk_calls')
        .executeTakeFirstOrThrow(),
    );

    sim.setFaults({ down: true });
    const down = await runTelesync(['sync', 'trunk_calls', '--json'], { ...env, ...fastRetries });
    sim.setFaults({});
    expect(down.code).toBe(1);
    const failed = lastJson(down.stdout);
    expect(failed.status).toBe('failed');
    expect(String(failed.error)).toMatch(
      /after 3 attempts: 503 the service had an internal problem/,
    );
    expect(down.stdout + down.stderr).not.toContain(ACCOUNT.authToken);
    const watermarkAfter = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_state')
        .select('watermark')
        .where('stream', '=', 'trunk_calls')
        .executeTakeFirstOrThrow(),
    );
    expect(watermarkAfter.watermark).toBe(watermarkBefore.watermark);

    const next = await runTelesync(['sync', 'trunk_calls', '--json'], { ...env, ...fastRetries });
    expect(next.code, next.stderr).toBe(0);
    const outcome = lastJson(next.stdout);
    expect(outcome.status).toBe('succeeded');
    // It did the work the failed run could not: its span holds exactly the service's calls, and
    // the watermark has moved on from where it stood.
    const span = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(['window_start', 'window_end'])
        .where('id', '=', Number(outcome.run_id))
        .executeTakeFirstOrThrow(),
    );
    const from = span.window_start!;
    const to = span.window_end!;
    const stored = await storedCalls(database, from, to);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.map((row) => row.call_uuid)).toEqual(
      oracleCalls(sim, Date.parse(from), Date.parse(to))
        .map((call) => call.call_uuid)
        .sort(),
    );
    const watermarkNext = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_state')
        .select('watermark')
        .where('stream', '=', 'trunk_calls')
        .executeTakeFirstOrThrow(),
    );
    expect(Date.parse(watermarkNext.watermark!)).toBeGreaterThanOrEqual(
      Date.parse(watermarkBefore.watermark!),
    );
    expect(Date.parse(watermarkNext.watermark!)).toBe(Date.parse(to));
  });
});

describe('calls added at the service while a window is paged', () => {
  let sim: RunningSimulator;
  let database: CliDatabase;
  let env: Record<string, string>;
  const from = new Date(Date.now() - 8 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 1 * DAY_MS).toISOString().slice(0, 10);

  beforeAll(async () => {
    sim = await startSimulator({ seed: 'e2e-paging', calls: 30_000, accounts: [ACCOUNT] });
    database = createCliDatabase();
    env = envFor(sim, database);
    expect((await runTelesync(['migrate'], env)).code).toBe(0);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.cleanup();
  });

  it('are never missed: a window marked complete holds every call, and the next run completes the rest', async () => {
    sim.setFaults({ insertDuringPaging: 0.03 });
    const result = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], env);
    sim.setFaults({});
    expect(sim.stats().faults.insertedDuringPaging ?? 0).toBeGreaterThan(0);
    // A window that never added up fails the run (exit 1) and stays incomplete in the ledger.
    expect([0, 1], result.stderr).toContain(result.code);

    const windows = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_windows')
        .select([
          'status',
          sql<string>`lower(time_range)`.as('start'),
          sql<string>`upper(time_range)`.as('end'),
        ])
        .execute(),
    );
    const complete = windows.filter((window) => window.status === 'complete');
    expect(complete.length).toBeGreaterThan(0);
    for (const window of complete) {
      const expected = oracleCalls(sim, Date.parse(window.start), Date.parse(window.end));
      const stored = await storedCalls(database, window.start, window.end);
      expect(
        stored.map((row) => row.call_uuid),
        `window ${window.start}`,
      ).toEqual(expected.map((call) => call.call_uuid).sort());
    }

    const again = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    const expected = oracleCalls(sim, Date.parse(from), Date.parse(to));
    const stored = await storedCalls(database, from, to);
    expect(stored.map((row) => row.call_uuid)).toEqual(
      expected.map((call) => call.call_uuid).sort(),
    );
  });
});

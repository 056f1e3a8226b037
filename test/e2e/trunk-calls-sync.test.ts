import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { epochMicrosFromMillis, type EpochMicros } from '../../src/util/micros.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { lastJson } from '../support/command-output.js';
import {
  canonicalDecimal,
  oracleCalls,
  sortedCallUuids,
  sumDecimals,
} from '../support/simulator-oracle.js';
import { findStoredCalls } from '../support/stored-calls.js';
import type { CliDatabase } from '../support/test-database.js';
import { runTelesync } from '../support/run-telesync.js';
import { utcDaysTouched } from '../support/utc-days.js';

const ACCOUNT = { authId: 'MA_E2E_TRUNK', authToken: 'tok_e2e_trunk_secret' };
const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The simulator's clock: the system's, or held still (`heldAt`) while a test needs no call to end,
 * since live traffic continues at the dataset's rate.
 */
class ServiceClock {
  heldAt: EpochMicros | undefined;
  readonly now = (): EpochMicros => this.heldAt ?? epochMicrosFromMillis(Date.now());
}

/** A simulator of `calls` calls for ACCOUNT, and a migrated database of the suite's own. */
function useTrunkFixture(seed: string, calls: number, clock = new ServiceClock()) {
  return useCliFixture({
    service: () => startSimulator({ seed, calls, accounts: [ACCOUNT], now: clock.now }),
    account: ACCOUNT,
    env: { TELESYNC_CONCURRENCY: '8' },
  });
}

async function trunkWatermark(database: CliDatabase): Promise<{ watermark: string | null }> {
  return database.inspect(({ db }) =>
    db
      .selectFrom('sync_state')
      .select('watermark')
      .where('stream', '=', 'trunk_calls')
      .executeTakeFirstOrThrow(),
  );
}

describe('a 90-day backfill, then incremental syncs', () => {
  const clock = new ServiceClock();
  const cli = useTrunkFixture('e2e-trunk', 55_000, clock);
  let covered: { from: string; to: string };

  it('lands every call of the horizon exactly once, with the exact sum of total_amount', async () => {
    const result = await runTelesync(['backfill', '--days', '90', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const outcome = lastJson(result.stdout);
    expect(outcome).toMatchObject({ status: 'succeeded', records_rejected: 0 });
    covered = { from: String(outcome.covered_from), to: String(outcome.covered_to) };

    const expected = oracleCalls(cli.service, Date.parse(covered.from), Date.parse(covered.to));
    expect(expected.length).toBeGreaterThanOrEqual(50_000);
    const stored = await findStoredCalls(cli.database, covered.from, covered.to);
    expect(stored.length).toBe(expected.length);
    expect(new Set(stored.map((row) => row.call_uuid)).size).toBe(stored.length);
    expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));

    const storedSum = await cli.database.inspect(async ({ db }) => {
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
    const ledger = await cli.database.inspect(({ db }) =>
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
      {
        status: 'complete',
        windows: utcDaysTouched(covered.from, covered.to).length,
        total: expected.length,
        stored: expected.length,
      },
    ]);
  });

  it('then a sync reads only the lookback, and a second one changes nothing', async () => {
    // No call ends between the two syncs: the service's clock stands still.
    clock.heldAt = epochMicrosFromMillis(Date.now());
    try {
      const first = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
      expect(first.code, first.stderr).toBe(0);
      const second = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
      expect(second.code, second.stderr).toBe(0);
      const run = lastJson(second.stdout);
      expect(run).toMatchObject({
        status: 'succeeded',
        records_fetched: 0,
        records_changed: 0,
        records_rejected: 0,
      });
      // One count probe per window of the lookback (6 hours: at most two day-windows), no page.
      expect(Number(run.windows_planned)).toBeGreaterThanOrEqual(1);
      expect(Number(run.windows_planned)).toBeLessThanOrEqual(2);
      expect(run.requests).toBe(run.windows_planned);
    } finally {
      clock.heldAt = undefined;
    }

    const watermark = await trunkWatermark(cli.database);
    expect(Date.parse(watermark.watermark!)).toBeGreaterThan(Date.now() - 10 * 60 * 1000);
  });

  it('catches a call that arrives late in a window already read, with the next run', async () => {
    const endTime = new Date(Date.now() - 2 * HOUR_MS).toISOString();
    const late = cli.service.addCall({ endTime });
    const result = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(lastJson(result.stdout)).toMatchObject({ status: 'succeeded' });
    const row = await cli.database.inspect(({ db }) =>
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
    await cli.database.inspect(({ db }) =>
      db
        .updateTable('sync_windows')
        .set({ read_at: new Date(todayStart - HOUR_MS).toISOString() })
        .where('slot_start', '=', yesterday)
        .execute(),
    );
    const startedAt = Date.now();
    const noLookback = cli.envWith({ TELESYNC_LOOKBACK_HOURS: '0' });
    const first = await runTelesync(['sync', 'trunk_calls', '--json'], noLookback);
    expect(first.code, first.stderr).toBe(0);
    const readAt = async () =>
      cli.database.inspect(async ({ db }) => {
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
    await cli.database.inspect(({ db }) =>
      db
        .updateTable('sync_state')
        .set({ watermark: lost })
        .where('stream', '=', 'trunk_calls')
        .execute(),
    );
    const result = await runTelesync(['sync', 'trunk_calls', '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const run = await cli.database.inspect(({ db }) =>
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
    const status = await runTelesync(['status'], cli.env);
    expect(status.stdout).toMatch(
      /! trunk_calls: unrecoverable gap .* those calls left the 90-day horizon before they were synced/,
    );
  });
});

describe('a faulty service', () => {
  const cli = useTrunkFixture('e2e-faults', 30_000);
  const from = new Date(Date.now() - 6 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 1 * DAY_MS).toISOString().slice(0, 10);

  it('quarantines malformed records with their reason and exact bytes, and stores the rest', async () => {
    cli.service.setFaults({ malformed: 0.02 });
    const result = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    const outcome = lastJson(result.stdout);
    // What the service holds: its malformed records are the same calls on every read.
    const served = oracleCalls(cli.service, Date.parse(from), Date.parse(to));
    cli.service.setFaults({});
    const servedByText = new Set(served.map((call) => call.text));

    const { stored, rejected } = await cli.database.inspect(async ({ db }) => ({
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
    const first = await runTelesync(['sync', 'trunk_calls', '--json'], cli.envWith(fastRetries));
    expect(first.code, first.stderr).toBe(0);
    const watermarkBefore = await trunkWatermark(cli.database);

    cli.service.setFaults({ down: true });
    const down = await runTelesync(['sync', 'trunk_calls', '--json'], cli.envWith(fastRetries));
    cli.service.setFaults({});
    expect(down.code).toBe(1);
    const failed = lastJson(down.stdout);
    expect(failed.status).toBe('failed');
    expect(String(failed.error)).toMatch(
      /503 the service had an internal problem.*\(after 3 attempts\)/,
    );
    expect(down.stdout + down.stderr).not.toContain(ACCOUNT.authToken);
    const watermarkAfter = await trunkWatermark(cli.database);
    expect(watermarkAfter.watermark).toBe(watermarkBefore.watermark);

    const next = await runTelesync(['sync', 'trunk_calls', '--json'], cli.envWith(fastRetries));
    expect(next.code, next.stderr).toBe(0);
    const outcome = lastJson(next.stdout);
    expect(outcome.status).toBe('succeeded');
    // It did the work the failed run could not: its span holds exactly the service's calls, and
    // the watermark has moved on from where it stood.
    const span = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(['window_start', 'window_end'])
        .where('id', '=', Number(outcome.run_id))
        .executeTakeFirstOrThrow(),
    );
    const from = span.window_start!;
    const to = span.window_end!;
    const stored = await findStoredCalls(cli.database, from, to);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.map((row) => row.call_uuid)).toEqual(
      sortedCallUuids(oracleCalls(cli.service, Date.parse(from), Date.parse(to))),
    );
    const watermarkNext = await trunkWatermark(cli.database);
    expect(Date.parse(watermarkNext.watermark!)).toBeGreaterThanOrEqual(
      Date.parse(watermarkBefore.watermark!),
    );
    expect(Date.parse(watermarkNext.watermark!)).toBe(Date.parse(to));
  });
});

describe('calls added at the service while a window is paged', () => {
  const cli = useTrunkFixture('e2e-paging', 30_000);
  const from = new Date(Date.now() - 8 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 1 * DAY_MS).toISOString().slice(0, 10);

  it('are never missed: a window marked complete holds every call, and the next run completes the rest', async () => {
    cli.service.setFaults({ insertDuringPaging: 0.03 });
    const result = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], cli.env);
    cli.service.setFaults({});
    expect(cli.service.stats().faults.insertedDuringPaging ?? 0).toBeGreaterThan(0);
    // A window that never added up fails the run (exit 1) and stays incomplete in the ledger.
    expect([0, 1], result.stderr).toContain(result.code);

    const windows = await cli.database.inspect(({ db }) =>
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
      const expected = oracleCalls(cli.service, Date.parse(window.start), Date.parse(window.end));
      const stored = await findStoredCalls(cli.database, window.start, window.end);
      expect(
        stored.map((row) => row.call_uuid),
        `window ${window.start}`,
      ).toEqual(sortedCallUuids(expected));
    }

    const again = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], cli.env);
    expect(again.code, again.stderr).toBe(0);
    const expected = oracleCalls(cli.service, Date.parse(from), Date.parse(to));
    const stored = await findStoredCalls(cli.database, from, to);
    expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findCoverageWindows,
  findStoredDays,
  findTrackedFrom,
} from '../../src/db/repositories/coverage-repository.js';
import {
  findRecentRuns,
  findRejectSummaries,
} from '../../src/db/repositories/status-page-repository.js';
import { readStatusPage } from '../../src/http/status-page-data.js';
import { formatIsoMicros, toEpochMicros } from '../../src/util/micros.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** The strip is 2026-08-26 … 2026-11-23; the horizon is 2026-08-26T12:10Z. */
const NOW_MS = Date.parse('2026-11-24T12:00:00Z');
const ACCOUNT = 'MA_PAGE';
const OTHER = 'MA_OTHER';

let handle: TestDatabase;

function slot(
  accountId: string,
  from: string,
  to: string,
  status: 'planned' | 'running' | 'complete' | 'failed',
  totalCount: number | null,
) {
  const start = from.length === 10 ? `${from}T00:00:00Z` : from;
  const end = to.length === 10 ? `${to}T00:00:00Z` : to;
  return {
    account_id: accountId,
    stream: 'trunk_calls',
    slot_start: `${start.slice(0, 10)}T00:00:00Z`,
    time_range: `[${start},${end})`,
    status,
    total_count: totalCount,
  };
}

function call(
  accountId: string,
  uuid: string,
  endTime: string,
  amount: string | null = null,
  billedSeconds: number | null = null,
) {
  return {
    account_id: accountId,
    call_uuid: uuid,
    end_time: endTime,
    total_amount: amount,
    billed_duration: billedSeconds,
    raw: '{}',
  };
}

beforeAll(async () => {
  handle = await createTestDatabase();
  const { db } = handle.database;
  await db
    .insertInto('sync_windows')
    .values([
      // Long before the strip: where the ledger begins.
      slot(ACCOUNT, '2026-05-01', '2026-05-02', 'complete', 9),
      // Ends where the strip starts: not part of it.
      slot(ACCOUNT, '2026-08-25', '2026-08-26', 'complete', 4),
      // Read when the horizon was older: cut at 11:00.
      slot(ACCOUNT, '2026-08-26T11:00:00Z', '2026-08-27', 'complete', 2),
      slot(ACCOUNT, '2026-08-27', '2026-08-28', 'complete', 3),
      slot(ACCOUNT, '2026-08-28', '2026-08-29', 'failed', null),
      slot(ACCOUNT, '2026-09-10', '2026-09-11', 'complete', 1),
      slot(OTHER, '2026-08-27', '2026-08-28', 'planned', null),
    ])
    .execute();
  await db
    .insertInto('trunk_calls')
    .values([
      // Stored by a read when the cut-off was older: before the 11:00 the ledger now counts from.
      call(ACCOUNT, 'c0', '2026-08-26 09:00:00+00:00'),
      call(ACCOUNT, 'c1', '2026-08-26 13:00:00+00:00', '1234.56789', 60),
      call(ACCOUNT, 'c2', '2026-08-26 23:59:59.999999+00:00', '0.00001', 30),
      // 22:00 at -04:00 is the next UTC day.
      call(ACCOUNT, 'c3', '2026-08-26 22:00:00-04:00'),
      call(ACCOUNT, 'c4', '2026-08-27 10:00:00+00:00', null, 45),
      call(ACCOUNT, 'c5', '2026-08-27 23:00:00+00:00'),
      // Today: after the strip.
      call(ACCOUNT, 'c6', '2026-11-24 01:00:00+00:00'),
      call(OTHER, 'o1', '2026-08-27 10:00:00+00:00'),
    ])
    .execute();
  await db
    .insertInto('sync_state')
    .values({
      account_id: ACCOUNT,
      stream: 'trunk_calls',
      watermark: '2026-11-24T11:30:00.250000Z',
    })
    .execute();
  await db
    .insertInto('sync_runs')
    .values(
      [1, 2, 3, 4, 5, 6].map((n) => ({
        account_id: ACCOUNT,
        stream: 'trunk_calls',
        command: 'schedule',
        status: n === 6 ? ('failed' as const) : ('succeeded' as const),
        started_at: `2026-11-24T0${n}:00:00Z`,
        finished_at: `2026-11-24T0${n}:01:00Z`,
        records_fetched: n * 10,
        records_changed: n,
        records_rejected: n === 5 ? 2 : 0,
        requests: n + 1,
        load_wait_ms: n * 1_000,
        error: n === 6 ? 'HTTP 503 from the service' : null,
      })),
    )
    .execute();
  await db
    .insertInto('rejected_records')
    .values(
      ['a', 'b'].map((key, index) => ({
        account_id: ACCOUNT,
        stream: 'trunk_calls',
        reason: 'end_time: not a timestamp',
        record_key: key,
        raw_payload: '{}',
        raw_bytes: Buffer.from('{}'),
        payload_sha256: `sha-${key}`,
        last_seen_at: `2026-11-2${index}T00:00:00Z`,
      })),
    )
    .execute();
});

afterAll(async () => {
  await handle?.close();
});

const STRIP_FROM = toEpochMicros('2026-08-26T00:00:00Z');
const STRIP_TO = toEpochMicros('2026-11-24T00:00:00Z');

describe('the coverage repository', () => {
  it('reads the ledger rows that overlap the strip, by account, with their exact bounds', async () => {
    const windows = await findCoverageWindows(
      handle.database.db,
      [ACCOUNT, OTHER, 'MA_NONE'],
      STRIP_FROM,
      STRIP_TO,
    );
    const shown = (accountId: string) =>
      windows
        .get(accountId)
        ?.map((w) => [formatIsoMicros(w.start), formatIsoMicros(w.end), w.status, w.totalCount]);
    expect(shown(ACCOUNT)).toEqual([
      ['2026-08-26T11:00:00Z', '2026-08-27T00:00:00Z', 'complete', 2],
      ['2026-08-27T00:00:00Z', '2026-08-28T00:00:00Z', 'complete', 3],
      ['2026-08-28T00:00:00Z', '2026-08-29T00:00:00Z', 'failed', null],
      ['2026-09-10T00:00:00Z', '2026-09-11T00:00:00Z', 'complete', 1],
    ]);
    expect(shown(OTHER)).toEqual([
      ['2026-08-27T00:00:00Z', '2026-08-28T00:00:00Z', 'planned', null],
    ]);
    expect(shown('MA_NONE')).toEqual([]);
  });

  it('finds where each ledger begins, whatever its age', async () => {
    const tracked = await findTrackedFrom(handle.database.db, [ACCOUNT, OTHER, 'MA_NONE']);
    expect(
      Object.fromEntries([...tracked].map(([account, at]) => [account, formatIsoMicros(at)])),
    ).toEqual({ [ACCOUNT]: '2026-05-01T00:00:00Z', [OTHER]: '2026-08-27T00:00:00Z' });
  });

  it('counts the rows stored and sums the billed amount and seconds per UTC day of end_time, within the strip only', async () => {
    const stored = await findStoredDays(handle.database.db, [ACCOUNT, OTHER], STRIP_FROM, STRIP_TO);
    expect(Object.fromEntries(stored.get(ACCOUNT) ?? [])).toEqual({
      // Exact: numeric summed in the database, returned as text.
      '2026-08-26': { rows: 3, billedAmount: '1234.56790', billedSeconds: 90 },
      '2026-08-27': { rows: 3, billedAmount: '0', billedSeconds: 45 },
    });
    expect(Object.fromEntries(stored.get(OTHER) ?? [])).toEqual({
      '2026-08-27': { rows: 1, billedAmount: '0', billedSeconds: 0 },
    });
  });
});

describe('the status page repository', () => {
  it('lists the latest runs of each stream, newest first, at most the limit', async () => {
    const runs = await findRecentRuns(
      handle.database.db,
      [ACCOUNT],
      ['trunk_calls', 'endpoints'],
      5,
    );
    const trunk = runs.get(`${ACCOUNT}\u0000trunk_calls`) ?? [];
    expect(trunk.map((run) => [run.status, run.finishedAt, run.recordsFetched])).toEqual([
      ['failed', '2026-11-24T06:01:00Z', 60],
      ['succeeded', '2026-11-24T05:01:00Z', 50],
      ['succeeded', '2026-11-24T04:01:00Z', 40],
      ['succeeded', '2026-11-24T03:01:00Z', 30],
      ['succeeded', '2026-11-24T02:01:00Z', 20],
    ]);
    expect(trunk[0]).toMatchObject({
      command: 'schedule',
      recordsChanged: 6,
      requests: 7,
      loadWaitMs: 6_000,
      error: 'HTTP 503 from the service',
    });
    expect(runs.get(`${ACCOUNT}\u0000endpoints`)).toEqual([]);
  });

  it('counts the rejected records of each stream', async () => {
    expect(await findRejectSummaries(handle.database.db, [ACCOUNT, OTHER])).toEqual([
      {
        accountId: ACCOUNT,
        stream: 'trunk_calls',
        records: 2,
        lastSeenAt: '2026-11-21T00:00:00Z',
      },
    ]);
  });

  it("assembles the page: lag, runs, rejects, the strip's days and the horizon alarm", async () => {
    const view = await readStatusPage(
      {
        db: handle.database.db,
        accountIds: [ACCOUNT],
        schedule: [
          { stream: 'trunk_calls', cron: '*/15 * * * *' },
          { stream: 'endpoints', cron: 'off' },
        ],
        horizonAlarmDays: 7,
        version: 'test',
      },
      NOW_MS,
    );
    expect(view.horizonStart).toBe('2026-08-26T12:10:00Z');
    const [account] = view.accounts;
    expect(account?.streams.map((s) => [s.stream, s.schedule, s.watermark, s.lagSeconds])).toEqual([
      ['trunk_calls', '*/15 * * * *', '2026-11-24T11:30:00.25Z', 1799.75],
      ['endpoints', 'off', null, null],
    ]);
    expect(account?.streams[0]).toMatchObject({ rejects: 2, lastRejectAt: '2026-11-21T00:00:00Z' });
    const days = new Map(account?.coverage.map((day) => [day.day, day]));
    expect(account?.coverage).toHaveLength(90);
    const state = (day: string) => {
      const found = days.get(day)!;
      return [found.state, found.serviceCount, found.storedRows, found.missingRows, found.differs];
    };
    // Counted from 11:00 (the cut-off then): the row stored from before it is not compared, so
    // the day agrees instead of showing "2 counted, 3 stored".
    expect(state('2026-08-26')).toEqual(['complete', 2, 2, false, false]);
    expect(state('2026-08-27')).toEqual(['complete', 3, 3, false, false]);
    expect(state('2026-08-28')).toEqual(['incomplete', null, 0, false, false]);
    expect(state('2026-09-10')).toEqual(['complete', 1, 0, true, true]);
    expect(state('2026-11-23')).toEqual(['unread', null, 0, false, false]);
    expect(account?.billedByDay.get('2026-08-26')).toBe('1234.56790');
    // Within 7 days of the horizon: the failed day and the unread ones after it.
    expect(account?.unreadNearHorizon).toEqual([
      '2026-08-28',
      '2026-08-29',
      '2026-08-30',
      '2026-08-31',
      '2026-09-01',
      '2026-09-02',
    ]);
  });
});

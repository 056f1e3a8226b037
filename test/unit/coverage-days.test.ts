import { describe, expect, it } from 'vitest';
import {
  countsDiffer,
  COVERAGE_DAYS,
  countedParts,
  planCoverageDays,
  unreadNearHorizon,
  type CoverageInput,
  type CoverageWindow,
} from '../../src/domain/coverage-days.js';
import { horizonUnread, type AccountCoverage } from '../../src/scheduler/read-coverage.js';
import { horizonStart } from '../../src/sync/window-planner.js';
import { toEpochMicros } from '../../src/util/micros.js';

const NOW = toEpochMicros('2025-06-01T12:00:00Z');
/** 2025-03-03T12:10:00Z: 90 days back, plus the 10-minute margin. */
const HORIZON = horizonStart(NOW);

/** A ledger row covering `[from, to)` (a whole UTC day by default). */
function window(
  from: string,
  status: CoverageWindow['status'],
  totalCount: number | null,
  to?: string,
): CoverageWindow {
  const start = toEpochMicros(from.length === 10 ? `${from}T00:00:00Z` : from);
  const end =
    to === undefined
      ? start + 86_400_000_000
      : toEpochMicros(to.length === 10 ? `${to}T00:00:00Z` : to);
  return { status, start, end, totalCount };
}

function input(overrides: Partial<CoverageInput> = {}): CoverageInput {
  return {
    windows: [],
    storedRowsByDay: new Map(),
    trackedFrom: null,
    now: NOW,
    horizonStart: HORIZON,
    ...overrides,
  };
}

function byDay(days: ReturnType<typeof planCoverageDays>) {
  return new Map(days.map((day) => [day.day, day]));
}

describe('planCoverageDays', () => {
  it('is the 90 UTC days before today, oldest first', () => {
    const days = planCoverageDays(input());
    expect(days).toHaveLength(COVERAGE_DAYS);
    expect(days[0]?.day).toBe('2025-03-03');
    expect(days.at(-1)?.day).toBe('2025-05-31');
    expect(new Set(days.map((day) => day.state))).toEqual(new Set(['unread']));
  });

  it('classifies each day from the ledger rows that overlap it, with both counts', () => {
    const days = byDay(
      planCoverageDays(
        input({
          windows: [
            // The oldest day, read when the horizon was an hour older: still complete.
            window('2025-03-03T11:10:00Z', 'complete', 40, '2025-03-04'),
            window('2025-03-04', 'complete', 100),
            window('2025-03-05', 'failed', null),
            window('2025-03-06', 'planned', null),
            window('2025-03-07', 'running', null),
            // Read up to noon only (the scheduler stopped): half the day is unread.
            window('2025-03-08', 'complete', 50, '2025-03-08T12:00:00Z'),
            // One row of two days (a wider slice): complete, but no count per day.
            window('2025-03-09', 'complete', 300, '2025-03-11'),
            window('2025-03-12', 'complete', 80),
          ],
          storedRowsByDay: new Map([
            ['2025-03-03', 40],
            ['2025-03-04', 100],
            ['2025-03-09', 150],
            ['2025-03-12', 77],
          ]),
          trackedFrom: toEpochMicros('2025-03-03T00:00:00Z'),
        }),
      ),
    );
    const view = (day: string) => {
      const found = days.get(day)!;
      return [found.state, found.failed, found.serviceCount, found.storedRows, found.missingRows];
    };
    expect(view('2025-03-03')).toEqual(['complete', false, 40, 40, false]);
    expect(view('2025-03-04')).toEqual(['complete', false, 100, 100, false]);
    expect(view('2025-03-05')).toEqual(['incomplete', true, null, 0, false]);
    expect(view('2025-03-06')).toEqual(['incomplete', false, null, 0, false]);
    expect(view('2025-03-07')).toEqual(['incomplete', false, null, 0, false]);
    expect(view('2025-03-08')).toEqual(['incomplete', false, 50, 0, false]);
    expect(view('2025-03-09')).toEqual(['complete', false, null, 150, false]);
    expect(view('2025-03-10')).toEqual(['complete', false, null, 0, false]);
    expect(view('2025-03-11')).toEqual(['unread', false, null, 0, false]);
    // Complete, but three of the rows the service counted are no longer stored.
    expect(view('2025-03-12')).toEqual(['complete', false, 80, 77, true]);
  });

  it('marks a day wholly older than the horizon as beyond it, whatever the ledger says', () => {
    const late = toEpochMicros('2025-06-01T23:55:00Z');
    const days = planCoverageDays(
      input({
        now: late,
        horizonStart: horizonStart(late),
        windows: [window('2025-03-03', 'failed', null)],
      }),
    );
    expect(days[0]).toMatchObject({ day: '2025-03-03', state: 'beyond', failed: false });
    expect(days[1]).toMatchObject({ day: '2025-03-04', state: 'unread' });
  });

  it('counts days from the oldest ledger row on as tracked', () => {
    const days = byDay(
      planCoverageDays(input({ trackedFrom: toEpochMicros('2025-05-25T00:00:00Z') })),
    );
    expect(days.get('2025-05-24')?.tracked).toBe(false);
    expect(days.get('2025-05-25')?.tracked).toBe(true);
    expect(days.get('2025-05-31')?.tracked).toBe(true);
  });
});

describe('the edge rule (countsDiffer, and the days planCoverageDays marks as differing)', () => {
  it('compares a whole day both ways, part of a day only for rows missing', () => {
    expect(countsDiffer(120, 120, 'whole')).toBe(false);
    expect(countsDiffer(120, 122, 'whole')).toBe(true);
    expect(countsDiffer(120, 118, 'whole')).toBe(true);
    // Counted from the cut-off on: the rows stored from before it are not an error…
    expect(countsDiffer(120, 122, 'part')).toBe(false);
    expect(countsDiffer(120, 120, 'part')).toBe(false);
    // …but fewer rows than the part counted are.
    expect(countsDiffer(120, 119, 'part')).toBe(true);
    expect(countsDiffer(null, 5, 'whole')).toBe(false);
  });

  it('does not report the day the 90-day cut-off moved into as differing', () => {
    const days = byDay(
      planCoverageDays(
        input({
          windows: [
            // Read at first from 08:00, then again when the cut-off had moved on to 11:10.
            window('2025-03-03T11:10:00Z', 'complete', 120, '2025-03-04'),
            window('2025-03-04', 'complete', 100),
            window('2025-03-05', 'complete', 90),
            window('2025-03-06', 'complete', 10, '2025-03-06T12:00:00Z'),
          ],
          storedRowsByDay: new Map([
            ['2025-03-03', 122],
            ['2025-03-04', 102],
            ['2025-03-05', 89],
            ['2025-03-06', 9],
          ]),
        }),
      ),
    );
    const verdict = (day: string) => {
      const found = days.get(day)!;
      return [found.serviceCount, found.storedRows, found.countedWholeDay, found.differs];
    };
    expect(verdict('2025-03-03')).toEqual([120, 122, false, false]);
    expect(verdict('2025-03-04')).toEqual([100, 102, true, true]);
    expect(verdict('2025-03-05')).toEqual([90, 89, true, true]);
    expect(verdict('2025-03-06')).toEqual([10, 9, false, true]);
  });
});

describe('countedParts', () => {
  it('gives the part of a day its count covers when the count starts after midnight, and no other day', () => {
    const parts = countedParts(
      [
        // The oldest day, counted from the cut-off as it was then (an hour older than now's).
        window('2025-03-03T11:10:00Z', 'complete', 120, '2025-03-04'),
        window('2025-03-04', 'complete', 100),
        // Hourly slices from midnight: the whole day is counted.
        window('2025-03-05', 'complete', 4, '2025-03-05T01:00:00Z'),
        window('2025-03-05T01:00:00Z', 'complete', 6, '2025-03-05T02:00:00Z'),
        // Not complete: nothing counted.
        window('2025-03-06T05:00:00Z', 'failed', null, '2025-03-07'),
      ],
      NOW,
    );
    expect(parts).toEqual([
      {
        day: '2025-03-03',
        start: toEpochMicros('2025-03-03T11:10:00Z'),
        end: toEpochMicros('2025-03-04T00:00:00Z'),
      },
    ]);
  });
});

describe('unreadNearHorizon', () => {
  const days = planCoverageDays(
    input({
      windows: [
        window('2025-03-07', 'failed', null),
        window('2025-03-08', 'complete', 10),
        window('2025-03-09', 'complete', 10, '2025-03-09T06:00:00Z'),
        window('2025-03-11', 'failed', null),
      ],
      trackedFrom: toEpochMicros('2025-03-05T00:00:00Z'),
    }),
  );

  it('counts incomplete days, and unread ones that were asked for, within N days of the horizon', () => {
    // The horizon is 2025-03-03T12:10Z: seven days reach 2025-03-10T12:10Z. 03-03 and 03-04 were
    // never asked for; 03-11 is past the seven days.
    expect(unreadNearHorizon(days, HORIZON, 7).map((day) => day.day)).toEqual([
      '2025-03-05',
      '2025-03-06',
      '2025-03-07',
      '2025-03-09',
      '2025-03-10',
    ]);
    expect(unreadNearHorizon(days, HORIZON, 9).map((day) => day.day)).toContain('2025-03-11');
  });

  it('is off with 0 days', () => {
    expect(unreadNearHorizon(days, HORIZON, 0)).toEqual([]);
  });

  it('is empty once every day near the horizon is complete', () => {
    const complete = planCoverageDays(
      input({
        windows: [window('2025-03-03T11:00:00Z', 'complete', 5, '2025-03-20')],
        trackedFrom: toEpochMicros('2025-03-03T00:00:00Z'),
      }),
    );
    expect(unreadNearHorizon(complete, HORIZON, 7)).toEqual([]);
  });
});

describe('horizonUnread (the gauge and the /healthz check)', () => {
  it('gives every account its alarm days, none for a healthy one', () => {
    const coverage: AccountCoverage[] = [
      {
        accountId: 'MA_GAP',
        horizonStart: HORIZON,
        billedByDay: new Map(),
        days: planCoverageDays(
          input({
            windows: [window('2025-03-04', 'planned', null)],
            trackedFrom: toEpochMicros('2025-03-04T00:00:00Z'),
          }),
        ),
      },
      {
        accountId: 'MA_NEW',
        horizonStart: HORIZON,
        billedByDay: new Map(),
        // Set up a week ago with TELESYNC_INITIAL_DAYS: old days were never asked for.
        days: planCoverageDays(input({ trackedFrom: toEpochMicros('2025-05-25T00:00:00Z') })),
      },
    ];
    expect(horizonUnread(coverage, 7)).toEqual([
      {
        accountId: 'MA_GAP',
        days: [
          '2025-03-04',
          '2025-03-05',
          '2025-03-06',
          '2025-03-07',
          '2025-03-08',
          '2025-03-09',
          '2025-03-10',
        ],
      },
      { accountId: 'MA_NEW', days: [] },
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import type { TrunkCallFilters } from '../../src/api/trunk-call-query.js';
import {
  addCall,
  createAccountState,
  type AccountState,
} from '../../src/simulator/state/account-state.js';
import { firstIndexEndingAtOrAfter } from '../../src/simulator/data/call-timeline.js';
import { AccountDataset, DEFAULT_DATASET_SIZES } from '../../src/simulator/data/dataset.js';
import type { TrunkCallPlan } from '../../src/simulator/rules.js';
import {
  isGeneratedCallVisible,
  matchesTrunkCallFilters,
  selectTrunkCalls,
  TrunkScanCache,
  type LateArrivals,
  type SelectedCall,
} from '../../src/simulator/data/trunk-call-index.js';
import {
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_SECOND,
  toEpochMicros,
} from '../../src/util/micros.js';

const ANCHOR = toEpochMicros('2024-06-01T12:00:00Z');
const NOW = ANCHOR + 3 * MICROS_PER_HOUR;

function smallAccount(): AccountState {
  const state = createAccountState({
    account: { authId: 'MAINDEX', authToken: 't' },
    seed: 'index-test',
    sizes: { ...DEFAULT_DATASET_SIZES, calls: 2_000, days: 2 },
    anchorMicros: ANCHOR,
    onRecordsGenerated: () => undefined,
  });
  const someEnd = state.dataset.callEndMicros(1_500);
  // An added call tied with a generated one, some inside and outside ranges, one not yet visible.
  addCall(state, { endMicros: someEnd }, ANCHOR);
  addCall(state, { endMicros: someEnd, overrides: { from_number: '14150000000' } }, ANCHOR);
  addCall(state, { endMicros: ANCHOR - 30 * MICROS_PER_HOUR }, ANCHOR);
  addCall(
    state,
    { endMicros: NOW - MICROS_PER_HOUR, overrides: { call_direction: 'inbound' } },
    ANCHOR,
  );
  addCall(
    state,
    { endMicros: NOW - 5 * MICROS_PER_SECOND, visibleFromMicros: NOW + MICROS_PER_HOUR },
    ANCHOR,
  );
  addCall(state, { endMicros: ANCHOR - 5 * MICROS_PER_DAY }, ANCHOR);
  return state;
}

interface BruteRow {
  end: number;
  rank: number;
  key: string;
}

/**
 * The answer computed the slow way: every call, visible, filtered, sorted. The sorted listing of a
 * range and filter set is kept, so its pages are slices of one listing and the comparison stays
 * quick on a busy machine.
 */
function bruteForceListing(state: AccountState, late: LateArrivals) {
  const last = firstIndexEndingAtOrAfter(state.dataset.timeline, NOW + 1);
  const visible: { index: number; facts: ReturnType<AccountDataset['callFactsAt']> }[] = [];
  for (let index = 0; index < last; index++) {
    if (!isGeneratedCallVisible(state.dataset, index, NOW, late)) continue;
    visible.push({ index, facts: state.dataset.callFactsAt(index) });
  }
  const listings = new Map<string, BruteRow[]>();
  const listing = (plan: TrunkCallPlan): BruteRow[] => {
    const upper = Math.min(plan.upperMicros, NOW);
    const key = JSON.stringify([plan.lowerMicros, upper, plan.filters]);
    const known = listings.get(key);
    if (known !== undefined) return known;
    const rows: BruteRow[] = [];
    for (const { index, facts } of visible) {
      if (facts.endMicros < plan.lowerMicros || facts.endMicros > upper) continue;
      if (!matchesTrunkCallFilters(facts, plan.filters)) continue;
      rows.push({ end: facts.endMicros, rank: index, key: `g${index}` });
    }
    for (const call of state.overlay.list()) {
      if (call.endMicros < plan.lowerMicros || call.endMicros > upper) continue;
      if (call.visibleFromMicros > NOW) continue;
      if (!matchesTrunkCallFilters(call.view, plan.filters)) continue;
      // Added calls come before generated ones of the same second, latest added first.
      rows.push({ end: call.endMicros, rank: 1e12 + call.sequence, key: `a${call.sequence}` });
    }
    rows.sort((a, b) => b.end - a.end || b.rank - a.rank);
    listings.set(key, rows);
    return rows;
  };
  return (plan: TrunkCallPlan): { totalCount: number; page: string[] } => {
    const rows = listing(plan);
    return {
      totalCount: rows.length,
      page: rows.slice(plan.offset, plan.offset + plan.limit).map((row) => row.key),
    };
  };
}

const keyOf = (selected: SelectedCall): string =>
  selected.kind === 'generated' ? `g${selected.index}` : `a${selected.call.sequence}`;

describe('trunk call index', () => {
  const state = smallAccount();
  const ownPrefix = state.dataset.profile.ownNumbers[0]!.slice(0, 4);
  const ranges: [number, number][] = [
    [NOW - 7 * MICROS_PER_DAY, NOW],
    [ANCHOR - 36 * MICROS_PER_HOUR, ANCHOR - 20 * MICROS_PER_HOUR],
    [ANCHOR - MICROS_PER_HOUR, NOW + MICROS_PER_HOUR],
    [NOW - 2 * MICROS_PER_HOUR, NOW],
    [state.dataset.callEndMicros(1_500), state.dataset.callEndMicros(1_500)],
  ];
  const filterSets: TrunkCallFilters[] = [
    {},
    { from_number: ownPrefix },
    { to_number: 'sip:' },
    { call_direction: 'inbound' },
    { bill_duration: { eq: 5 } },
    { bill_duration: { gt: 120 } },
    { bill_duration: { gte: 30, lte: 90 } },
    { bill_duration: { lt: 10 } },
    { hangup_source: 'customer' },
    { hangup_source: 'trunk', call_direction: 'outbound' },
    { hangup_cause_code: 4000 },
    { stir_verification: 'Not Verified' },
  ];

  for (const late of [
    { share: 0, delayMicros: 0 },
    { share: 0.3, delayMicros: 2 * MICROS_PER_HOUR },
  ]) {
    it(`matches a brute-force listing for every range, filter and page (late share ${late.share})`, () => {
      let compared = 0;
      // One cache for every query: a key that mixed two queries up would fail the comparison.
      const cache = new TrunkScanCache(64);
      const bruteForce = bruteForceListing(state, late);
      for (const [lowerMicros, upperMicros] of ranges) {
        for (const filters of filterSets) {
          for (const [offset, limit] of [
            [0, 20],
            [20, 20],
            [37, 7],
            [5, 1],
            [100_000, 20],
          ] as const) {
            const plan: TrunkCallPlan = { lowerMicros, upperMicros, filters, limit, offset };
            const expected = bruteForce(plan);
            const actual = selectTrunkCalls(
              state.dataset,
              state.overlay.list(),
              plan,
              NOW,
              late,
              cache,
            );
            expect(actual.totalCount).toBe(expected.totalCount);
            expect(actual.page.map(keyOf)).toEqual(expected.page);
            compared += expected.page.length;
          }
        }
      }
      expect(compared).toBeGreaterThan(1_000);
    });
  }

  it('scans a filtered range once while it is paged, and again once late calls arrive', () => {
    let generated = 0;
    const data = new AccountDataset({
      seed: 'scan',
      authId: 'MASCAN',
      sizes: { ...DEFAULT_DATASET_SIZES, calls: 20_000, days: 10 },
      anchorMicros: ANCHOR,
      onRecordsGenerated: (count) => (generated += count),
    });
    const cache = new TrunkScanCache();
    const late = { share: 0.2, delayMicros: MICROS_PER_HOUR };
    const plan = (offset: number): TrunkCallPlan => ({
      lowerMicros: ANCHOR - 2 * MICROS_PER_DAY,
      upperMicros: ANCHOR,
      filters: { call_direction: 'inbound' },
      limit: 20,
      offset,
    });
    const first = selectTrunkCalls(data, [], plan(0), ANCHOR, late, cache);
    const scanned = generated;
    expect(scanned).toBeGreaterThan(3_000);
    const second = selectTrunkCalls(data, [], plan(20), ANCHOR, late, cache);
    expect(generated).toBe(scanned);
    expect(second.totalCount).toBe(first.totalCount);
    // An hour later the late calls of the range have arrived: a new scan, more calls.
    const later = selectTrunkCalls(data, [], plan(0), ANCHOR + MICROS_PER_HOUR, late, cache);
    expect(generated).toBeGreaterThan(scanned);
    expect(later.totalCount).toBeGreaterThan(first.totalCount);
  });

  it('withholds late calls until their delay has passed, then lists them', () => {
    const late = { share: 0.5, delayMicros: MICROS_PER_HOUR };
    const plan: TrunkCallPlan = {
      lowerMicros: NOW - 2 * MICROS_PER_HOUR,
      upperMicros: NOW,
      filters: {},
      limit: 20,
      offset: 0,
    };
    const before = selectTrunkCalls(state.dataset, [], plan, NOW, late);
    const none = selectTrunkCalls(state.dataset, [], plan, NOW, { share: 0, delayMicros: 0 });
    expect(before.lateWithheld).toBeGreaterThan(0);
    expect(before.totalCount).toBe(none.totalCount - before.lateWithheld);
    const later = selectTrunkCalls(state.dataset, [], plan, NOW + MICROS_PER_HOUR, late);
    // The same range an hour later: every call of it has arrived.
    expect(later.totalCount).toBe(none.totalCount);
    expect(later.lateWithheld).toBe(0);
  });

  it('pages through a window without field filters generating no record at all', () => {
    let generated = 0;
    const big = new AccountDataset({
      seed: 'big',
      authId: 'MABIG',
      sizes: { ...DEFAULT_DATASET_SIZES, calls: 1_000_000, days: 90 },
      anchorMicros: ANCHOR,
      onRecordsGenerated: (count) => (generated += count),
    });
    const plan: TrunkCallPlan = {
      lowerMicros: ANCHOR - 30 * MICROS_PER_DAY,
      upperMicros: ANCHOR,
      filters: {},
      limit: 20,
      offset: 250_000,
    };
    const selection = selectTrunkCalls(big, [], plan, ANCHOR, {
      share: 0.01,
      delayMicros: 900 * MICROS_PER_SECOND,
    });
    expect(selection.totalCount).toBeGreaterThan(330_000);
    expect(selection.totalCount).toBeLessThan(334_000);
    expect(selection.page).toHaveLength(20);
    expect(generated).toBe(0);
    // The page's records are the only ones made.
    for (const selected of selection.page)
      if (selected.kind === 'generated') big.callRecordAt(selected.index);
    expect(generated).toBe(20);
  });
});

import type { TrunkCallFilters } from '../../api/trunk-call-query.js';
import type { EpochMicros } from '../../util/micros.js';
import {
  endMicrosAt,
  firstIndexEndingAtOrAfter,
  indexRangeEndingWithin,
  type CallTimeline,
} from './call-timeline.js';
import type { TrunkCallPlan } from '../rules.js';
import { hangupSideOf, type TrunkCallFacts, type TrunkCallFilterView } from './trunk-call-data.js';

/**
 * Answers a trunk-list query over two sources merged in one stable order (assumption A17): the
 * generated calls, an endless index whose end times never decrease, and the calls added at run
 * time (the overlay), kept sorted. The order is end_time descending; among calls that end in the
 * same second, added calls come first (latest added first), then generated ones, highest index
 * first. A query with only end_time filters costs two binary searches and one generated call per
 * record on the page; other filters scan the calls of the range. Pure.
 */

/** A call added at run time. */
export interface AddedCall {
  /** Order of addition, from 0. */
  readonly sequence: number;
  /** Whole seconds (trunk times carry no fraction). */
  readonly endMicros: EpochMicros;
  /** Not listed before this instant (a late arrival when after endMicros). */
  readonly visibleFromMicros: EpochMicros;
  readonly callUuid: string | undefined;
  /** The record as it is served. */
  readonly record: Readonly<Record<string, unknown>>;
  /** The fields filters test, taken from the record. */
  readonly view: TrunkCallFilterView;
}

/** Whether `a` comes before `b` in the list order. */
function addedBefore(a: AddedCall, b: AddedCall): boolean {
  return a.endMicros !== b.endMicros ? a.endMicros > b.endMicros : a.sequence > b.sequence;
}

/** The calls added to one account at run time, in list order. */
export class TrunkCallOverlay {
  private readonly calls: AddedCall[] = [];
  private readonly byUuid = new Map<string, AddedCall>();

  /** The sequence number the next added call gets. */
  get nextSequence(): number {
    return this.calls.length;
  }

  /** Adds a call (its sequence must be `nextSequence`), keeping the list order. */
  add(call: AddedCall): void {
    let low = 0;
    let high = this.calls.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (addedBefore(this.calls[middle] as AddedCall, call)) low = middle + 1;
      else high = middle;
    }
    this.calls.splice(low, 0, call);
    if (call.callUuid !== undefined) this.byUuid.set(call.callUuid.toLowerCase(), call);
  }

  /** Every added call, in list order. */
  list(): readonly AddedCall[] {
    return this.calls;
  }

  /** The added call with this call_uuid. */
  findByUuid(callUuid: string): AddedCall | undefined {
    return this.byUuid.get(callUuid.toLowerCase());
  }
}

/** What the index needs of the generated calls. */
export interface GeneratedCalls {
  readonly timeline: CallTimeline;
  callFactsAt(index: number): TrunkCallFacts;
  isLateCall(index: number, share: number): boolean;
}

/** Late arrivals: a share of calls is listed only some time after it ended. */
export interface LateArrivals {
  /** Share of generated calls that arrive late (stable per call). */
  readonly share: number;
  /** How long after its end a late call becomes visible, microseconds. */
  readonly delayMicros: number;
}

/** Whether generated call `index` is completed and visible at `nowMicros`. */
export function isGeneratedCallVisible(
  source: GeneratedCalls,
  index: number,
  nowMicros: EpochMicros,
  late: LateArrivals,
): boolean {
  const end = endMicrosAt(source.timeline, index);
  if (end > nowMicros) return false;
  return !(end + late.delayMicros > nowMicros && source.isLateCall(index, late.share));
}

/** Whether a call passes every filter of the query other than end_time. */
export function matchesTrunkCallFilters(
  view: TrunkCallFilterView,
  filters: TrunkCallFilters,
): boolean {
  if (filters.from_number !== undefined && !view.from_number.startsWith(filters.from_number))
    return false;
  if (filters.to_number !== undefined && !view.to_number.startsWith(filters.to_number))
    return false;
  if (filters.call_direction !== undefined && view.call_direction !== filters.call_direction)
    return false;
  const bill = filters.bill_duration;
  if (bill !== undefined) {
    const value = view.bill_duration;
    if (bill.eq !== undefined && value !== bill.eq) return false;
    if (bill.gt !== undefined && !(value > bill.gt)) return false;
    if (bill.gte !== undefined && !(value >= bill.gte)) return false;
    if (bill.lt !== undefined && !(value < bill.lt)) return false;
    if (bill.lte !== undefined && !(value <= bill.lte)) return false;
  }
  if (
    filters.hangup_cause_code !== undefined &&
    view.hangup_cause_code !== filters.hangup_cause_code
  )
    return false;
  if (
    filters.hangup_source !== undefined &&
    hangupSideOf(view.call_direction, view.hangup_source) !== filters.hangup_source
  )
    return false;
  if (
    filters.stir_verification !== undefined &&
    view.stir_verification !== filters.stir_verification
  )
    return false;
  return true;
}

/** Whether the query filters on anything but end_time (then the range must be scanned). */
export function hasFieldFilters(filters: TrunkCallFilters): boolean {
  return (
    filters.from_number !== undefined ||
    filters.to_number !== undefined ||
    filters.call_direction !== undefined ||
    filters.bill_duration !== undefined ||
    filters.hangup_cause_code !== undefined ||
    filters.hangup_source !== undefined ||
    filters.stir_verification !== undefined
  );
}

/** One call of a page: a generated one by index, or an added one. */
export type SelectedCall =
  | { readonly kind: 'generated'; readonly index: number }
  | { readonly kind: 'added'; readonly call: AddedCall };

export interface TrunkCallSelection {
  /** Every call matching the query (meta.total_count). */
  readonly totalCount: number;
  /** The calls at positions [offset, offset + limit), in list order. */
  readonly page: readonly SelectedCall[];
  /** Late calls of the range withheld because they have not arrived yet. */
  readonly lateWithheld: number;
}

/** The matching generated calls, in list order, by position. */
interface GeneratedMatches {
  readonly length: number;
  /** Index of the call at a position, 0 being the latest. */
  indexAt(position: number): number;
  /** How many of the matches end strictly after `micros`. */
  countEndingAfter(micros: EpochMicros): number;
  readonly lateWithheld: number;
}

/** What a scan found: the matching indices, highest first, and their end times. */
interface ScanResult {
  readonly indices: readonly number[];
  readonly ends: readonly number[];
  readonly lateWithheld: number;
}

/** Scans with more matches than this are not kept (memory grows with them). */
const SCAN_CACHE_MAX_MATCHES = 1_000_000;

/**
 * The last few scans of one account. Paging a filtered range asks for the same scan once per page;
 * kept here, it is made once. A scan depends only on its index range, its filters and which late
 * calls are still withheld, and the key holds exactly these, so an entry is never stale.
 */
export class TrunkScanCache {
  private readonly entries = new Map<string, ScanResult>();

  constructor(private readonly capacity = 8) {}

  get(key: string): ScanResult | undefined {
    const found = this.entries.get(key);
    if (found !== undefined) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, found);
    }
    return found;
  }

  set(key: string, result: ScanResult): void {
    if (result.indices.length > SCAN_CACHE_MAX_MATCHES) return;
    this.entries.set(key, result);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
  }
}

/**
 * Selects a page of the trunk list: the calls of the plan's range that are visible at `nowMicros`
 * and pass its filters, from both sources, in list order. `cache` keeps filtered scans between pages.
 */
export function selectTrunkCalls(
  source: GeneratedCalls,
  added: readonly AddedCall[],
  plan: TrunkCallPlan,
  nowMicros: EpochMicros,
  late: LateArrivals,
  cache?: TrunkScanCache,
): TrunkCallSelection {
  const lower = plan.lowerMicros;
  const upper = Math.min(plan.upperMicros, nowMicros);
  const addedMatches = added.filter(
    (call) =>
      call.endMicros >= lower &&
      call.endMicros <= upper &&
      call.visibleFromMicros <= nowMicros &&
      matchesTrunkCallFilters(call.view, plan.filters),
  );
  const generated = hasFieldFilters(plan.filters)
    ? scanGenerated(source, lower, upper, plan.filters, nowMicros, late, cache)
    : windowGenerated(source, lower, upper, nowMicros, late);

  const totalCount = addedMatches.length + generated.length;
  const end = Math.min(totalCount, plan.offset + plan.limit);
  // An added call at list position p has p − (its rank among added calls) generated calls before it.
  const positionOfAdded = (rank: number): number =>
    rank + generated.countEndingAfter((addedMatches[rank] as AddedCall).endMicros);
  let rank = 0;
  while (rank < addedMatches.length && positionOfAdded(rank) < plan.offset) rank++;
  const page: SelectedCall[] = [];
  for (let position = plan.offset; position < end; position++) {
    if (rank < addedMatches.length && positionOfAdded(rank) === position) {
      page.push({ kind: 'added', call: addedMatches[rank] as AddedCall });
      rank++;
    } else {
      page.push({ kind: 'generated', index: generated.indexAt(position - rank) });
    }
  }
  return { totalCount, page, lateWithheld: generated.lateWithheld };
}

/**
 * The generated calls of [lower, upper] without field filters: an index range, less the late
 * calls not yet arrived. Only the calls that ended within the late delay are looked at one by one.
 */
function windowGenerated(
  source: GeneratedCalls,
  lower: EpochMicros,
  upper: EpochMicros,
  nowMicros: EpochMicros,
  late: LateArrivals,
): GeneratedMatches {
  const { from, to } = indexRangeEndingWithin(source.timeline, lower, upper);
  // Withheld late calls, highest index first.
  const withheld: number[] = [];
  if (late.share > 0 && late.delayMicros > 0 && from < to) {
    const recent = firstIndexEndingAtOrAfter(source.timeline, nowMicros - late.delayMicros + 1);
    for (let index = to - 1; index >= Math.max(from, recent); index--) {
      if (source.isLateCall(index, late.share)) withheld.push(index);
    }
  }
  const withheldAtOrAbove = (index: number): number => {
    let count = 0;
    while (count < withheld.length && (withheld[count] as number) >= index) count++;
    return count;
  };
  return {
    length: to - from - withheld.length,
    indexAt(position) {
      let index = to - 1 - position;
      // Each withheld call at or above the candidate pushes it one further down.
      for (const skipped of withheld) if (skipped >= index) index--;
      return index;
    },
    countEndingAfter(micros) {
      const first = Math.max(from, firstIndexEndingAtOrAfter(source.timeline, micros + 1));
      if (first >= to) return 0;
      return to - first - withheldAtOrAbove(first);
    },
    lateWithheld: withheld.length,
  };
}

/** The generated calls of [lower, upper] that pass the field filters, found by a scan. */
function scanGenerated(
  source: GeneratedCalls,
  lower: EpochMicros,
  upper: EpochMicros,
  filters: TrunkCallFilters,
  nowMicros: EpochMicros,
  late: LateArrivals,
  cache: TrunkScanCache | undefined,
): GeneratedMatches {
  const { from, to } = indexRangeEndingWithin(source.timeline, lower, upper);
  // Which calls are withheld depends on now only through the first index still within the delay.
  const stillLate =
    late.share > 0 && late.delayMicros > 0
      ? Math.min(
          to,
          Math.max(
            from,
            firstIndexEndingAtOrAfter(source.timeline, nowMicros - late.delayMicros + 1),
          ),
        )
      : to;
  const { limit: _limit, offset: _offset, end_time: _endTime, ...fieldFilters } = filters;
  const key = JSON.stringify([from, to, stillLate, late.share, fieldFilters]);
  let result = cache?.get(key);
  if (result === undefined) {
    const indices: number[] = [];
    const ends: number[] = [];
    let lateWithheld = 0;
    for (let index = to - 1; index >= from; index--) {
      if (!isGeneratedCallVisible(source, index, nowMicros, late)) {
        lateWithheld++;
        continue;
      }
      const facts = source.callFactsAt(index);
      if (matchesTrunkCallFilters(facts, filters)) {
        indices.push(index);
        ends.push(facts.endMicros);
      }
    }
    result = { indices, ends, lateWithheld };
    cache?.set(key, result);
  }
  const { indices, ends } = result;
  return {
    length: indices.length,
    indexAt: (position) => indices[position] as number,
    countEndingAfter(micros) {
      // ends is non-increasing: count the leading entries above micros.
      let low = 0;
      let high = ends.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if ((ends[middle] as number) > micros) low = middle + 1;
        else high = middle;
      }
      return low;
    },
    lateWithheld: result.lateWithheld,
  };
}

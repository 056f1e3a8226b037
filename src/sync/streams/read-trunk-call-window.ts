import { takeRecords, type ReceivedRecord } from '../../api/received-json.js';
import { PAGE_LIMIT_MAX } from '../../domain/service-rules.js';
import type { LoadRow } from '../../db/data-loader.js';
import type { BatchLoader, BufferOptions } from '../../load/batch-loader.js';
import type { Normalizer } from '../../normalize/normalize-records.js';
import { normalizeTrunkCall } from '../../normalize/normalize-trunk-call.js';
import { formatIsoMicros } from '../../util/micros.js';
import { bufferRecords } from '../receive-records.js';
import { pagingOptions, type RunContext } from '../run-context.js';
import { describeWindow, type TimeWindow } from '../window-planner.js';

/** What reading every page of a window found. */
export interface WindowRead {
  /** The service's total_count on the first page. */
  readonly total: number;
  /** Distinct records read (by call_uuid; a record without a readable one, by its bytes). */
  readonly distinct: number;
  /** Every page reported the same total_count. */
  readonly totalsAgree: boolean;
}

/** Whether a read saw the whole window: every record once, and no movement while paging. */
export function isConsistent(read: WindowRead): boolean {
  return read.totalsAgree && read.distinct === read.total;
}

/** The records of a window did not add up, even after reading it again and in halves. */
export class WindowIncompleteError extends Error {
  override name = 'WindowIncompleteError';
  constructor(
    readonly window: TimeWindow,
    readonly read: WindowRead,
  ) {
    super(
      `window [${formatIsoMicros(window.start)}, ${formatIsoMicros(window.end)}) did not add up: ` +
        `the service reported ${read.total} calls but ${read.distinct} distinct calls were read` +
        `${read.totalsAgree ? '' : ' and its count changed while paging'}, after two reads and a split; ` +
        'calls were probably still being added to it. It stays incomplete and is read again by the next run.',
    );
  }
}

/**
 * The filters that ask for `window`'s calls: `end_time__gte` its start and `end_time__lt` its end.
 * Half-open, so a call ending exactly on a boundary (midnight to the microsecond) belongs to one
 * window only; `__lte` would hand it to both, and the earlier one would quarantine it.
 */
export function windowFilters(window: TimeWindow): { end_time: { gte: number; lt: number } } {
  return { end_time: { gte: window.start, lt: window.end } };
}

/**
 * Fetches every page of `window` (the client's pager: the first page, then the others
 * `pageConcurrency` at a time) and passes each page's records through the normalise and load
 * stages as it arrives. A stop request (the run's signal) is honoured between pages, never by
 * cancelling a request in flight: every page fetched is stored, and the pager then throws
 * StoppedError, so the window stays incomplete.
 */
export async function readTrunkCallWindow(
  context: RunContext,
  window: TimeWindow,
  loader: BatchLoader,
  options: BufferOptions = {},
): Promise<WindowRead> {
  const pages = context.client.iterateTrunkCalls(windowFilters(window), {
    ...pagingOptions(context),
    pageConcurrency: context.pageConcurrency,
  });
  const seen = new Set<string>();
  const inWindow = normalizeWithinWindow(window);
  const totals = new Set<number>();
  let total: number | undefined;
  let outside = 0;
  for await (const page of pages) {
    total ??= page.meta.total_count;
    totals.add(page.meta.total_count);
    // Normalised and buffered in a plain function, so that neither the page's records nor their
    // rows are held while the loader makes room (see bufferRecords); the page is parsed only now.
    outside += bufferPage(context, window, inWindow, takeRecords(page), loader, seen, options);
    await loader.room();
  }
  if (outside > 0) {
    context.log.warn(
      { window: describeWindow(window), outside },
      `the service answered ${outside} calls whose end_time is outside the requested window: quarantined`,
    );
  }
  return { total: total ?? 0, distinct: seen.size, totalsAgree: totals.size === 1 };
}

const OUTSIDE_WINDOW = 'end_time is outside the requested window';

/**
 * Normalises (`inWindow`: normalizeWithinWindow of `window`) and buffers one page of `window`;
 * returns how many of its calls ended outside the window. A page holds at most the limit asked
 * for; what comes past it was not asked for, is not part of the window's count, and is
 * quarantined.
 */
function bufferPage(
  context: RunContext,
  window: TimeWindow,
  inWindow: Normalizer<LoadRow>,
  records: readonly ReceivedRecord[],
  loader: BatchLoader,
  seen: Set<string>,
  options: BufferOptions,
): number {
  // A page within the limit (every page the service sends) is passed on as it is, not copied.
  const overLimit = records.length > PAGE_LIMIT_MAX;
  const asked = overLimit ? records.slice(0, PAGE_LIMIT_MAX) : records;
  const { rejects } = bufferRecords(context, asked, inWindow, loader, seen, options);
  if (overLimit) {
    const extra = records.slice(PAGE_LIMIT_MAX);
    bufferRecords(context, extra, rejectBeyondLimit(PAGE_LIMIT_MAX), loader);
    context.log.warn(
      { window: describeWindow(window), records: records.length, limit: PAGE_LIMIT_MAX },
      `a page held ${records.length} records for a limit of ${PAGE_LIMIT_MAX}: the ${extra.length} past the limit were quarantined`,
    );
  }
  return rejects.filter((reject) => reject.reason.startsWith(OUTSIDE_WINDOW)).length;
}

/**
 * normalizeTrunkCall, rejecting a call whose end_time is outside [window.start, window.end): the
 * service was not asked for it, and storing it would place it in a window that never counted it.
 */
function normalizeWithinWindow(window: TimeWindow): Normalizer<LoadRow> {
  return (record, normalizeContext) => {
    const result = normalizeTrunkCall(record, normalizeContext);
    if (!result.ok) return result;
    const endTime = result.row.end_time;
    if (endTime >= window.start && endTime < window.end) return result;
    return {
      ok: false,
      rejection: {
        stream: 'trunk_calls',
        field: 'end_time',
        reason: `${OUTSIDE_WINDOW} ${describeWindow(window)}: ${formatIsoMicros(endTime)}`,
        recordKey: result.key,
      },
    };
  };
}

/** Rejects every record: for records a page held past the limit asked for. */
function rejectBeyondLimit(limit: number): Normalizer<LoadRow> {
  return (record) => {
    const value = record.value as { call_uuid?: unknown } | undefined;
    const key =
      value !== null && typeof value === 'object' && typeof value.call_uuid === 'string'
        ? value.call_uuid.slice(0, 200)
        : undefined;
    return {
      ok: false,
      rejection: {
        stream: 'trunk_calls',
        reason: `the page held more records than the limit of ${limit} asked for; this one is past it`,
        ...(key !== undefined ? { recordKey: key } : {}),
      },
    };
  };
}

/**
 * Reads a window until it adds up: once, again, then as two halves (smaller windows page for less
 * time, so calls added meanwhile are less likely to shift them). Throws WindowIncompleteError when
 * even that fails. Rows read along the way are stored either way: upserts make repeats harmless.
 */
export async function readTrunkCallWindowFully(
  context: RunContext,
  window: TimeWindow,
  loader: BatchLoader,
  options: BufferOptions = {},
): Promise<WindowRead> {
  let read = await readTrunkCallWindow(context, window, loader, options);
  if (isConsistent(read)) return read;
  context.log.warn(
    {
      window: describeWindow(window),
      total: read.total,
      distinct: read.distinct,
      totals_agree: read.totalsAgree,
    },
    'window did not add up; reading it again',
  );
  // Read again, and in halves below: rows of the window are stored by now.
  const again: BufferOptions = { mayBeStored: true };
  read = await readTrunkCallWindow(context, window, loader, again);
  if (isConsistent(read)) return read;

  const middle = window.start + Math.floor((window.end - window.start) / 2);
  if (middle > window.start) {
    context.log.warn(
      {
        window: describeWindow(window),
        total: read.total,
        distinct: read.distinct,
        totals_agree: read.totalsAgree,
      },
      'window did not add up twice; reading it in halves',
    );
    const halves = [
      await readTrunkCallWindow(context, { start: window.start, end: middle }, loader, again),
      await readTrunkCallWindow(context, { start: middle, end: window.end }, loader, again),
    ];
    const combined: WindowRead = {
      total: halves[0]!.total + halves[1]!.total,
      distinct: halves[0]!.distinct + halves[1]!.distinct,
      totalsAgree: halves.every((half) => half.totalsAgree),
    };
    if (halves.every(isConsistent)) return combined;
    read = combined;
  }
  throw new WindowIncompleteError(window, read);
}

import type { ReceivedList, ReceivedRecord } from '../api/received-json.js';
import { TRUNK_PAGE_LIMIT_MAX } from '../api/trunk-call-query.js';
import { payloadDigest, type Quarantined } from '../db/repositories/rejected-records-repository.js';
import type { LoadRow } from '../db/data-loader.js';
import { normalizeTrunkCall } from '../normalize/normalize-trunk-call.js';
import { formatIsoMicros } from '../util/micros.js';
import type { BatchLoader } from './batch-loader.js';
import type { RunContext } from './run-context.js';
import type { TimeWindow } from './window-planner.js';

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

/**
 * The run was asked to stop (shutdown) before the window was read: the pages in hand were stored,
 * the window stays incomplete, and the next run reads it.
 */
export class RunStoppedError extends Error {
  override name = 'RunStoppedError';
  constructor() {
    super('stopped before the window was read in full');
  }
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
 * Reads every page of `window` and hands each page's rows and rejects to `loader` as it arrives.
 * The first page gives the total; the others are requested together, at most `pageConcurrency` at
 * a time (the transport's limiter still decides when each goes out).
 */
export async function readWindow(
  context: RunContext,
  window: TimeWindow,
  loader: BatchLoader,
): Promise<WindowRead> {
  const filters = { end_time: { gte: window.start, lt: window.end } };
  const seen = new Set<string>();
  const totals = new Set<number>();
  const take = async (page: ReceivedList): Promise<void> => {
    totals.add(page.meta.total_count);
    context.stats.recordsFetched += page.records.length;
    const { rows, rejects } = normalizePage(context, page.records, seen);
    await loader.add(rows, rejects);
  };

  // The stop request is honoured between pages, never by cancelling a request in flight: every
  // page fetched is stored, so a stopped run still has fetched = stored + quarantined.
  const stopRequested = (): boolean => context.signal?.aborted === true;
  if (stopRequested()) throw new RunStoppedError();
  const first = await context.client.listTrunkCalls(
    { ...filters, limit: TRUNK_PAGE_LIMIT_MAX, offset: 0 },
    { meter: context.meter },
  );
  const total = first.meta.total_count;
  await take(first);

  const offsets: number[] = [];
  for (let offset = TRUNK_PAGE_LIMIT_MAX; offset < total; offset += TRUNK_PAGE_LIMIT_MAX)
    offsets.push(offset);
  const completed = await forEachConcurrently(
    offsets,
    context.pageConcurrency,
    async (offset) => {
      const page = await context.client.listTrunkCalls(
        { ...filters, limit: TRUNK_PAGE_LIMIT_MAX, offset },
        { meter: context.meter },
      );
      await take(page);
    },
    stopRequested,
  );
  if (!completed) throw new RunStoppedError();
  return { total, distinct: seen.size, totalsAgree: totals.size === 1 };
}

/**
 * Reads a window until it adds up: once, again, then as two halves (smaller windows page for less
 * time, so calls added meanwhile are less likely to shift them). Throws WindowIncompleteError when
 * even that fails. Rows read along the way are stored either way: upserts make repeats harmless.
 */
export async function readWindowFully(
  context: RunContext,
  window: TimeWindow,
  loader: BatchLoader,
): Promise<WindowRead> {
  let read = await readWindow(context, window, loader);
  if (isConsistent(read)) return read;
  context.log.warn(
    { window: describeWindow(window), ...read },
    'window did not add up; reading it again',
  );
  read = await readWindow(context, window, loader);
  if (isConsistent(read)) return read;

  const middle = window.start + Math.floor((window.end - window.start) / 2);
  if (middle > window.start) {
    context.log.warn(
      { window: describeWindow(window), ...read },
      'window did not add up twice; reading it in halves',
    );
    const halves = [
      await readWindow(context, { start: window.start, end: middle }, loader),
      await readWindow(context, { start: middle, end: window.end }, loader),
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

function normalizePage(
  context: RunContext,
  records: readonly ReceivedRecord[],
  seen: Set<string>,
): { rows: LoadRow[]; rejects: Quarantined[] } {
  const rows: LoadRow[] = [];
  const rejects: Quarantined[] = [];
  for (const record of records) {
    const result = normalizeTrunkCall(record, { accountId: context.accountId });
    if (result.ok) {
      seen.add(result.key);
      rows.push(result.row);
    } else {
      const { rejection } = result;
      seen.add(rejection.recordKey ?? `sha256:${payloadDigest(record.bytes)}`);
      rejects.push({
        accountId: context.accountId,
        stream: 'trunk_calls',
        reason: rejection.reason,
        recordKey: rejection.recordKey,
        bytes: record.bytes,
      });
    }
  }
  return { rows, rejects };
}

/**
 * Runs `work` over `items` with at most `limit` at once; the first failure stops new work, and so
 * does `shouldStop` (work in hand finishes). Returns whether every item was done.
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
  shouldStop: () => boolean = () => false,
): Promise<boolean> {
  let next = 0;
  let failed = false;
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      if (shouldStop()) {
        stopped = true;
        return;
      }
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const workers = Array.from({ length: Math.min(limit, items.length) }, worker);
  const results = await Promise.allSettled(workers);
  const rejected = results.find(
    (result): result is PromiseRejectedResult => result.status === 'rejected',
  );
  if (rejected !== undefined) throw rejected.reason;
  return !stopped;
}

export function describeWindow(window: TimeWindow): string {
  return `[${formatIsoMicros(window.start)}, ${formatIsoMicros(window.end)})`;
}

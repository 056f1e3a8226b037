import type { RequestMeter } from '../api/request-meter.js';
import type { PagingOptions, TelephonyClient } from '../api/telephony-client.js';
import type { RequestOptions } from '../api/transport.js';
import type { Database } from '../db/connect.js';
import type { LoadGate } from '../load/load-gate.js';
import type { SyncSettings } from './sync-settings.js';
import type { Logger } from '../util/logger.js';
import type { EpochMicros } from '../util/micros.js';
import type { TimeWindow } from './window-planner.js';

/**
 * Counts and findings of one run, written to its sync_runs row: records fetched are counted as
 * they are received (receiveRecords), stored, changed and rejected ones by the loader as they
 * commit.
 */
export class RunStats {
  windowsPlanned = 0;
  windowsCompleted = 0;
  /** Backfill windows skipped because the unfinished backfill this run resumes had read them. */
  windowsResumed = 0;
  /** Backfill windows read again although the ledger held them complete. */
  windowsRereadComplete = 0;
  /** Records received from the service. */
  recordsFetched = 0;
  /** Records handed to the upsert. */
  recordsUpserted = 0;
  /** Rows inserted or rewritten because their content changed. */
  recordsChanged = 0;
  /** Records quarantined in rejected_records. */
  recordsRejected = 0;
  /** Milliseconds the run's reading waited for the loader's room. */
  loadWaitMs = 0;
  /** Batches whose plain COPY met a stored row and were upserted instead (LoadCounters). */
  directConflicts = 0;
  /** The span the run covered. */
  span: TimeWindow | undefined;
  /** Calls that can no longer be read (the watermark fell behind the horizon). */
  gap: TimeWindow | undefined;
  /** The run saw the stop request and left work undone (the next run continues from there). */
  stopped = false;
  /** Problems that did not stop the run but must fail it at the end (a refused snapshot). */
  readonly failures: string[] = [];
}

/**
 * Everything a stream needs for one run of one stream of one account. It is also the loader's
 * LoadTarget: the loader writes to `database` for `runId` and counts in `stats`.
 */
export interface RunContext {
  readonly database: Database;
  readonly client: TelephonyClient;
  readonly accountId: string;
  readonly runId: number;
  readonly settings: SyncSettings;
  /** Pages of one window requested at once (the transport's limiter still caps the rate). */
  readonly pageConcurrency: number;
  /** Transactions of the run's loader in flight at once, each on its own connection. */
  readonly loadLanes: number;
  /** The process's way to the database, shared by every run's loader. */
  readonly loadGate: LoadGate;
  /** The clock, in epoch microseconds. */
  now(): EpochMicros;
  readonly log: Logger;
  /** Counts this run's requests. */
  readonly meter: RequestMeter;
  readonly stats: RunStats;
  /** Aborted on shutdown, or when the lock is lost: stop after the batch in hand. */
  readonly signal: AbortSignal | undefined;
  /** Aborted when the connection holding the run's lock ends: nothing more is written. */
  readonly lockLost?: AbortSignal | undefined;
}

/** How a run's requests go: its meter counts them, its signal stops them in every wait. */
export function requestOptions(context: RunContext): RequestOptions {
  return { meter: context.meter, ...(context.signal ? { stopSignal: context.signal } : {}) };
}

/**
 * How a run's listings page: as its requests go (requestOptions), stopping between pages too, and
 * no listing takes more than TELESYNC_MAX_PAGES_PER_WINDOW pages.
 */
export function pagingOptions(context: RunContext): PagingOptions {
  return { ...requestOptions(context), maxPages: context.settings.maxPagesPerWindow };
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { watermarkLagSeconds } from '../domain/freshness.js';
import type { SyncResult } from '../sync/run-stream.js';
import { coerceError } from '../util/coerce-error.js';
import type { WatermarkRow } from '../db/repositories/health-repository.js';
import type { HorizonUnread } from './read-coverage.js';
import type { VerificationSummary } from '../db/repositories/day-verifications-repository.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

/** Why a tick did not run: the previous run of its stream was still going, or it came too late. */
export type MissedTickReason = 'overlap' | 'missed';

/** Run durations span a lookup of a few UUIDs to a 90-day backfill. */
const RUN_DURATION_BUCKETS_SECONDS = [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800];

const RUN_STATUSES: readonly SyncResult['status'][] = ['succeeded', 'failed', 'skipped', 'stopped'];
const MISSED_REASONS: readonly MissedTickReason[] = ['overlap', 'missed'];

export interface SchedulerMetricsOptions {
  /** Reads the watermarks on each scrape of /metrics; without it the lag gauge stays empty. */
  readonly readWatermarks?: () => Promise<readonly WatermarkRow[]>;
  /**
   * The clock the lag is measured on, epoch milliseconds: the database's in a served process (read
   * on each scrape, so workers on machines whose clocks disagree report the same lag).
   */
  readonly now: () => number | Promise<number>;
  /** Node's process metrics (CPU, memory, event loop) on the same registry; default true. */
  readonly processMetrics?: boolean;
  /**
   * Reads the horizon alarm on each scrape of /metrics; without it the horizon gauge stays
   * empty.
   */
  readonly readHorizonUnread?: () => Promise<readonly HorizonUnread[]>;
  /** Reads the last verifications (telesync verify) on each scrape; without it those gauges stay empty. */
  readonly readVerifications?: () => Promise<readonly VerificationSummary[]>;
  /** Told when a gauge read from the database could not be read (the scrape answers without it). */
  readonly onCollectError?: (error: Error) => void;
}

/** How a stream status callback was answered: its outcome and the reason, as the route names them. */
export interface StreamCallbackVerdict {
  /** accepted (stored, or a duplicate already stored), refused (4xx) or failed (5xx). */
  readonly outcome: string;
  readonly reason: string;
}

/** A watermark's distance behind the clock, for the lag gauge. */
export interface WatermarkLag {
  readonly accountId: string;
  readonly stream: string;
  readonly seconds: number;
}

/** How far each watermark is behind `nowMs`, in seconds, as `telesync status` measures it. */
export function watermarkLags(rows: readonly WatermarkRow[], nowMs: number): WatermarkLag[] {
  return rows.map((row) => ({
    accountId: row.accountId,
    stream: row.stream,
    seconds: watermarkLagSeconds(row.watermark, nowMs),
  }));
}

/**
 * The scheduler's Prometheus metrics, on a registry of their own (never prom-client's global one,
 * so two schedulers in one process, or tests, do not share counters).
 */
export class SchedulerMetrics {
  readonly registry = new Registry();
  readonly #runs: Counter<'stream' | 'account' | 'status'>;
  readonly #records: Counter<'stream' | 'account' | 'kind'>;
  readonly #requests: Counter<'account' | 'stream'>;
  readonly #retries: Counter<'account' | 'stream'>;
  readonly #loadWait: Counter<'account' | 'stream'>;
  readonly #responses: Counter<'account' | 'status'>;
  readonly #missedTicks: Counter<'stream' | 'reason'>;
  readonly #lastRun: Gauge<'stream' | 'account' | 'status'>;
  readonly #inProgress: Gauge<'stream'>;
  readonly #duration: Histogram<'stream'>;
  readonly #streamCallbacks: Counter<'outcome' | 'reason'>;

  constructor(options: SchedulerMetricsOptions) {
    const registers = [this.registry];
    this.#runs = new Counter({
      name: 'telesync_runs_total',
      help: 'Runs (one account × one stream) by how they ended: succeeded, failed, skipped (another process held the stream), stopped (shutdown before the end).',
      labelNames: ['stream', 'account', 'status'],
      registers,
    });
    this.#records = new Counter({
      name: 'telesync_records_total',
      help: 'Records of finished runs: fetched from the service, upserted, changed (new or different), rejected (quarantined).',
      labelNames: ['stream', 'account', 'kind'],
      registers,
    });
    this.#requests = new Counter({
      name: 'telesync_requests_total',
      help: 'HTTP requests to the service by finished runs, retries included.',
      labelNames: ['account', 'stream'],
      registers,
    });
    this.#retries = new Counter({
      name: 'telesync_retries_total',
      help: 'Requests to the service that were retries (429, 5xx, resets, timeouts).',
      labelNames: ['account', 'stream'],
      registers,
    });
    this.#loadWait = new Counter({
      name: 'telesync_load_wait_seconds_total',
      help: "Time finished runs stopped reading while their rows waited to be written: growing nearly as fast as the runs' time means the database, not the service's budget, sets the pace.",
      labelNames: ['account', 'stream'],
      registers,
    });
    this.#responses = new Counter({
      name: 'telesync_api_responses_total',
      help: 'Answers of the service by HTTP status, and failed exchanges by kind (network, timeout, aborted, malformed).',
      labelNames: ['account', 'status'],
      registers,
    });
    this.#missedTicks = new Counter({
      name: 'telesync_missed_ticks_total',
      help: 'Cron ticks that did not start a run: overlap (the previous run of the stream was still going) or missed (the process was too busy to start it on time).',
      labelNames: ['stream', 'reason'],
      registers,
    });
    this.#lastRun = new Gauge({
      name: 'telesync_last_run_timestamp_seconds',
      help: 'When the latest run of each status ended, Unix seconds.',
      labelNames: ['stream', 'account', 'status'],
      registers,
    });
    this.#inProgress = new Gauge({
      name: 'telesync_runs_in_progress',
      help: 'Runs in progress (0 or 1 per stream: ticks of a stream never overlap).',
      labelNames: ['stream'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'telesync_run_duration_seconds',
      help: 'Duration of finished runs (skipped ones left out), seconds.',
      labelNames: ['stream'],
      buckets: RUN_DURATION_BUCKETS_SECONDS,
      registers,
    });
    this.#streamCallbacks = new Counter({
      name: 'telesync_stream_callbacks_total',
      help: 'Stream status callbacks received, by outcome (accepted, refused, failed) and reason (stored, duplicate; unsigned, no_nonce, forged, stale, future, replayed, malformed, too_large, unsupported_media_type; store_failed).',
      labelNames: ['outcome', 'reason'],
      registers,
    });
    const { readWatermarks, readHorizonUnread, readVerifications, now, onCollectError } = options;
    const verifyDays: Gauge<'account' | 'result'> = new Gauge({
      name: 'telesync_verify_days',
      help: `trunk_calls days of the last ${TRUNK_HISTORY_DAYS} by what telesync verify last found (day_verifications): agree, or differs (the service count and the rows stored differ). Alert on result="differs" > 0.`,
      labelNames: ['account', 'result'],
      registers,
      async collect() {
        if (readVerifications === undefined) return;
        verifyDays.reset();
        try {
          for (const summary of await readVerifications()) {
            verifyDays.set({ account: summary.accountId, result: 'agree' }, summary.agree);
            verifyDays.set({ account: summary.accountId, result: 'differs' }, summary.differs);
          }
        } catch (error) {
          onCollectError?.(coerceError(error));
        }
      },
    });
    const lastVerified: Gauge<'account'> = new Gauge({
      name: 'telesync_verify_last_timestamp_seconds',
      help: 'When telesync verify last compared a day of each account, Unix seconds.',
      labelNames: ['account'],
      registers,
      async collect() {
        if (readVerifications === undefined) return;
        lastVerified.reset();
        try {
          for (const summary of await readVerifications())
            if (summary.lastVerifiedAt !== null)
              lastVerified.set(
                { account: summary.accountId },
                Date.parse(summary.lastVerifiedAt) / 1000,
              );
        } catch (error) {
          onCollectError?.(coerceError(error));
        }
      },
    });
    const lag: Gauge<'stream' | 'account'> = new Gauge({
      name: 'telesync_watermark_lag_seconds',
      help: 'How far each watermark (sync_state) is behind now, seconds; read from the database on each scrape.',
      labelNames: ['stream', 'account'],
      registers,
      async collect() {
        if (readWatermarks === undefined) return;
        // Rows that disappeared (an account removed) must not linger with their last value.
        lag.reset();
        try {
          // Both at once: the clock may be a query too (the database's).
          const [rows, nowMs] = await Promise.all([readWatermarks(), now()]);
          for (const row of watermarkLags(rows, nowMs))
            lag.set({ stream: row.stream, account: row.accountId }, row.seconds);
        } catch (error) {
          onCollectError?.(coerceError(error));
        }
      },
    });
    const horizon: Gauge<'account'> = new Gauge({
      name: 'telesync_horizon_unread_days',
      help: `trunk_calls days within TELESYNC_HORIZON_ALARM_DAYS of the ${TRUNK_HISTORY_DAYS}-day horizon that are incomplete or unread (sync_windows), per account: data about to become unreadable. Alert on > 0.`,
      labelNames: ['account'],
      registers,
      async collect() {
        if (readHorizonUnread === undefined) return;
        horizon.reset();
        try {
          for (const account of await readHorizonUnread())
            horizon.set({ account: account.accountId }, account.days.length);
        } catch (error) {
          onCollectError?.(coerceError(error));
        }
      },
    });
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Creates the counter series of every scheduled stream × account at 0, so that rates and alerts
   * work from the first scrape instead of from the first failure.
   */
  initialize(streams: readonly string[], accountIds: readonly string[]): void {
    for (const stream of streams) {
      for (const reason of MISSED_REASONS) this.#missedTicks.inc({ stream, reason }, 0);
      this.#inProgress.set({ stream }, 0);
      for (const account of accountIds)
        for (const status of RUN_STATUSES) this.#runs.inc({ stream, account, status }, 0);
    }
  }

  /**
   * Creates the callback series at 0 (when the callback route is served), so that an alert on
   * refusals works from the first scrape.
   */
  initializeStreamCallbacks(verdicts: readonly StreamCallbackVerdict[]): void {
    for (const { outcome, reason } of verdicts) this.#streamCallbacks.inc({ outcome, reason }, 0);
  }

  /** Counts a stream status callback as the route answered it. */
  recordStreamCallback(verdict: StreamCallbackVerdict): void {
    this.#streamCallbacks.inc({ outcome: verdict.outcome, reason: verdict.reason });
  }

  /** Counts a finished run; `finishedAtMs` (epoch milliseconds) feeds the last-run gauge. */
  recordRun(result: SyncResult, finishedAtMs: number): void {
    const { stream, accountId: account, status, stats, requests } = result;
    this.#runs.inc({ stream, account, status });
    this.#lastRun.set({ stream, account, status }, finishedAtMs / 1000);
    if (status === 'skipped') return;
    this.#records.inc({ stream, account, kind: 'fetched' }, stats.recordsFetched);
    this.#records.inc({ stream, account, kind: 'upserted' }, stats.recordsUpserted);
    this.#records.inc({ stream, account, kind: 'changed' }, stats.recordsChanged);
    this.#records.inc({ stream, account, kind: 'rejected' }, stats.recordsRejected);
    this.#requests.inc({ account, stream }, requests.requests);
    this.#retries.inc({ account, stream }, requests.retries);
    this.#loadWait.inc({ account, stream }, stats.loadWaitMs / 1000);
    for (const [outcome, count] of Object.entries(requests.outcomes))
      this.#responses.inc({ account, status: outcome }, count);
    this.#duration.observe({ stream }, result.durationMs / 1000);
  }

  /** Counts a tick that did not start a run. */
  recordMissedTick(stream: string, reason: MissedTickReason): void {
    this.#missedTicks.inc({ stream, reason });
  }

  runStarted(stream: string): void {
    this.#inProgress.inc({ stream });
  }

  runEnded(stream: string): void {
    this.#inProgress.dec({ stream });
  }

  /** The text exposition of every metric (what GET /metrics answers). */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

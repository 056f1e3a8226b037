import { MICROS_PER_SECOND, toEpochMicros } from '../util/micros.js';

/**
 * How fresh the data is: the figures `telesync status`, `/healthz` and `/metrics` derive from the
 * database's timestamps, computed here only, so that the three agree.
 *
 * Every figure is exact (the microseconds the database keeps count) and never negative: a
 * timestamp after `nowMs` comes from a clock that runs ahead of this process's, and reads as no
 * delay at all rather than as a negative one. Whole-second fields (JSON) round the same figure
 * with {@link wholeSeconds}; Prometheus gauges take it as is.
 */

/**
 * Seconds from `iso` (ISO 8601 text as the database returns it: microseconds and UTC offset
 * kept) to `nowMs` (epoch milliseconds); 0 when `iso` is later than `nowMs`.
 */
export function secondsSince(iso: string, nowMs: number): number {
  return Math.max(0, (nowMs * 1000 - toEpochMicros(iso)) / MICROS_PER_SECOND);
}

/** How far a stream's watermark is behind now, in seconds (see {@link secondsSince}). */
export function watermarkLagSeconds(watermark: string, nowMs: number): number {
  return secondsSince(watermark, nowMs);
}

/**
 * How long ago a run ended, in seconds (see {@link secondsSince}); for a run still going, pass
 * when it started.
 */
export function runAgeSeconds(endedAt: string, nowMs: number): number {
  return secondsSince(endedAt, nowMs);
}

/** A figure of this module in whole seconds, for JSON fields such as `lag_seconds`. */
export function wholeSeconds(seconds: number): number {
  return Math.round(seconds);
}

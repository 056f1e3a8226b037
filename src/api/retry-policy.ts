/**
 * How long to wait before retrying a request: pure arithmetic, so it can be tested exactly.
 *
 * Exponential backoff, capped, with "equal jitter": half of each delay is fixed and half random, so
 * retries of many concurrent requests spread out without ever collapsing to zero. A Retry-After
 * from the service is a floor: telesync never comes back sooner than it was asked to.
 */

import type { ApiFailureKind } from './api-errors.js';

export interface BackoffPolicy {
  /** Delay before the first retry, before jitter. */
  readonly baseDelayMs: number;
  /** No delay exceeds this, before the Retry-After floor. */
  readonly maxDelayMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseDelayMs: 500, maxDelayMs: 20_000 };

/**
 * Longest Retry-After telesync honours, in seconds (a transport option overrides it). A service
 * (or a proxy) asking for an hour would otherwise hold a run, and its stop signal, for that hour;
 * past this the request is retried after the cap, and the retry event says so.
 */
export const RETRY_AFTER_MAX_SECONDS = 120;

/** What the service asked (seconds), capped at `maxSeconds`; undefined stays undefined. */
export function capRetryAfter(
  askedSeconds: number | undefined,
  maxSeconds: number,
): number | undefined {
  return askedSeconds === undefined ? undefined : Math.min(askedSeconds, maxSeconds);
}

/**
 * The delay before retry number `retryNumber` (1 for the first retry).
 * @param random a number in [0, 1), e.g. Math.random()
 * @param retryAfterSeconds what the service asked for, when it did
 */
export function computeRetryDelayMs(
  retryNumber: number,
  policy: BackoffPolicy,
  random: number,
  retryAfterSeconds?: number,
): number {
  const exponential = Math.min(
    policy.maxDelayMs,
    policy.baseDelayMs * 2 ** Math.max(0, retryNumber - 1),
  );
  const jittered = exponential / 2 + (exponential / 2) * random;
  const floor = retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : 0;
  return Math.round(Math.max(jittered, floor));
}

/**
 * Reads a Retry-After header: whole seconds, or an HTTP date. Returns seconds from `nowMs`
 * (never negative), or undefined when absent or unreadable.
 */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  // Digits beyond what a number holds exactly are still a long wait: Number gives a huge value,
  // which capRetryAfter bounds.
  if (/^\d+$/.test(text)) return Number(text);
  // An HTTP date names a weekday and a month; Date.parse alone would accept "-1" as a year.
  if (!/^[A-Za-z]{3}, /.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** What decides whether a failed request is tried again. */
export interface FailureForRetry {
  readonly kind: ApiFailureKind;
  readonly status?: number;
  /** False when the request never reached the network. */
  readonly sent: boolean;
}

/**
 * Whether a failed request is worth sending again. A read (GET) is retried after a 429, a 5xx, a
 * reset, a timeout or an unreadable answer. A request that changes the service (POST) is retried
 * only when the service cannot have acted on it: a 429, or a failure before it was sent; after a
 * 5xx, a timeout or a reset it may have acted, and a second start would start a second stream.
 */
export function isRetryableFailure(method: 'GET' | 'POST', failure: FailureForRetry): boolean {
  if (failure.kind === 'too_large') return false;
  if (failure.kind === 'http') {
    const status = failure.status ?? 0;
    if (status === 429) return true;
    if (status < 500) return false;
  }
  return method === 'GET' || !failure.sent;
}

import { parseRequestRate, type RequestRate } from '../domain/parse-request-rate.js';
import { MICROS_PER_SECOND, type EpochMicros } from '../util/micros.js';

/** A request budget: at most `requests` in any window of `windowMs` milliseconds. */
export type RateLimit = RequestRate;

/** The accepted form of a rate limit, for messages. */
export const RATE_LIMIT_FORM_HELP = 'REQUESTS/WINDOW such as 300/5s, 50/s, 1000/1m or 10/500ms';

/**
 * Reads `300/5s` (300 requests per 5 seconds), `50/s`, `1000/1m`, `10/500ms` as telesync's budget
 * is read. Undefined when the text is not of that form or names zero requests or an empty window.
 */
export function parseRateLimit(text: string): RateLimit | undefined {
  const rate = parseRequestRate(text);
  if (rate === undefined) return undefined;
  if (!Number.isSafeInteger(rate.requests) || rate.requests < 1 || !(rate.windowMs >= 1)) {
    return undefined;
  }
  return rate;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * A sliding-window limiter per key (account): a request is allowed when fewer than `requests` were
 * allowed in the last `windowMs`. Refused requests do not use the budget. Time comes from the
 * caller, so tests drive it.
 */
export class SlidingWindowLimiter {
  private readonly allowedAt = new Map<string, EpochMicros[]>();

  constructor(readonly limit: RateLimit) {}

  /** Records a request of `key` that arrived at `nowMicros` if the budget allows it. */
  take(key: string, nowMicros: EpochMicros): RateDecision {
    const windowMicros = this.limit.windowMs * 1_000;
    let times = this.allowedAt.get(key);
    if (times === undefined) {
      times = [];
      this.allowedAt.set(key, times);
    }
    let expired = 0;
    while (expired < times.length && (times[expired] as number) <= nowMicros - windowMicros)
      expired++;
    if (expired > 0) times.splice(0, expired);
    if (times.length < this.limit.requests) {
      // In time order, though a request may be handled after one that arrived later.
      let at = times.length;
      while (at > 0 && (times[at - 1] as number) > nowMicros) at--;
      times.splice(at, 0, nowMicros);
      return { allowed: true };
    }
    const freeAt = (times[0] as number) + windowMicros;
    return {
      allowed: false,
      // Whole seconds, rounded up: a client waiting this long finds room.
      retryAfterSeconds: Math.max(1, Math.ceil((freeAt - nowMicros) / MICROS_PER_SECOND)),
    };
  }
}

import type { RequestBudget } from '../api/api-settings.js';
import { parseRequestRate } from '../domain/parse-request-rate.js';

/**
 * The request budget and share settings as people write them. Pure: a value, or the reason it is
 * refused (the caller names the variable and the default).
 */

/** Longest window a budget may be stated over: services count over seconds or minutes. */
export const BUDGET_MAX_WINDOW_SECONDS = 3600;
const BUDGET_MAX_REQUESTS = 1_000_000;

/**
 * `300/5s` (300 requests per 5 seconds), `60/s`, `1000/1m`: whole requests over a whole number of
 * seconds or minutes, 1 s to 1 h.
 */
export function parseRequestBudget(text: string): RequestBudget | { problem: string } {
  const rate = parseRequestRate(text);
  if (rate === undefined) {
    return {
      problem: `"${text}" is not a budget such as "300/5s" (requests / window in s or m, e.g. 60/s, 1000/1m)`,
    };
  }
  const { requests, windowMs } = rate;
  if (requests < 1 || requests > BUDGET_MAX_REQUESTS) {
    return {
      problem: `"${text}": requests must be from 1 to ${BUDGET_MAX_REQUESTS.toLocaleString('en-US')}`,
    };
  }
  if (windowMs % 1_000 !== 0 || windowMs < 1_000 || windowMs > BUDGET_MAX_WINDOW_SECONDS * 1_000) {
    return { problem: `"${text}": the window must be whole seconds, from 1 s to 60 m` };
  }
  return { requests, windowSeconds: windowMs / 1_000 };
}

/** `80%` or `0.8`: a share above 0 and at most the whole (100%, 1). */
export function parseRequestShare(text: string): number | { problem: string } {
  const trimmed = text.trim();
  const percent = /^([0-9]{1,3}(?:\.[0-9]{1,3})?)\s*%$/.exec(trimmed);
  const fraction = /^(0?\.[0-9]{1,5}|0|1(?:\.0*)?)$/.exec(trimmed);
  const share =
    percent !== null
      ? Number(percent[1]) / 100
      : fraction !== null
        ? Number(fraction[1])
        : Number.NaN;
  if (!(share > 0 && share <= 1)) {
    return {
      problem: `"${text}" is not a share above 0% and at most 100%, such as 80% or 0.8 (100% uses the whole budget)`,
    };
  }
  return share;
}

/**
 * The requests per window telesync may start of `budget` at `share`: whole requests, at least one.
 */
export function requestsAtShare(budget: RequestBudget, share: number): number {
  // A share of a budget states a whole number of requests; the float's error must not cost one.
  return Math.max(1, Math.floor(budget.requests * share + 1e-9));
}

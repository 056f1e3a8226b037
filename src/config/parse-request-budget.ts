import type { RequestBudget } from '../api/api-settings.js';

/**
 * The request budget and share settings as people write them. Pure: a value, or the reason it is
 * refused (the caller names the variable and the default).
 */

/** Longest window a budget may be stated over: services count over seconds or minutes. */
export const BUDGET_MAX_WINDOW_SECONDS = 3600;
const BUDGET_MAX_REQUESTS = 1_000_000;

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, sec: 1, m: 60, min: 60 };

/**
 * `300/5s` (300 requests per 5 seconds), `60/s`, `1000/1m`: whole requests over a whole number of
 * seconds or minutes, 1 s to 1 h.
 */
export function parseRequestBudget(text: string): RequestBudget | { problem: string } {
  const match = /^([0-9]{1,7})\s*\/\s*([0-9]{0,4})\s*(s|sec|m|min)$/i.exec(text.trim());
  if (match === null) {
    return {
      problem: `"${text}" is not a budget such as "300/5s" (requests / window in s or m, e.g. 60/s, 1000/1m)`,
    };
  }
  const requests = Number(match[1]);
  const windowSeconds =
    Number(match[2] === '' ? '1' : match[2]) * UNIT_SECONDS[match[3]!.toLowerCase()]!;
  if (requests < 1 || requests > BUDGET_MAX_REQUESTS) {
    return {
      problem: `"${text}": requests must be from 1 to ${BUDGET_MAX_REQUESTS.toLocaleString('en-US')}`,
    };
  }
  if (windowSeconds < 1 || windowSeconds > BUDGET_MAX_WINDOW_SECONDS) {
    return { problem: `"${text}": the window must be from 1 s to 60 m` };
  }
  return { requests, windowSeconds };
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

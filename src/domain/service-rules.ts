/**
 * The service's rules (spec 4.6 and 8, docs/assumptions.md), in one place. The client (`api/`), the
 * window planner (`sync/window-planner.ts`) and the simulator (`simulator/rules.ts`) read them
 * here, and every message or help text that names one is built from the constant, never a copy
 * of its number. The rules of starting a stream (spec 4.5) are `api/stream-rules.ts`, with the
 * check the client and the simulator share.
 */

/** Trunk calls that ended longer ago than this cannot be listed (spec 4.6 rule 1, assumption A15). */
export const TRUNK_HISTORY_DAYS = 90;

/** The window of a trunk list given no end_time filter (spec 4.6 rule 2). */
export const TRUNK_DEFAULT_WINDOW_DAYS = 7;

/** Longest range between a lower and an upper end_time bound of a trunk list (spec 4.6 rule 3). */
export const TRUNK_MAX_RANGE_DAYS = 30;

/** Records a page of any list holds: at most this, and this when no limit is given (spec 8, A5). */
export const PAGE_LIMIT_MAX = 20;

/** The service's request budget per account: this many requests… (assumption A4) */
export const RATE_BUDGET_REQUESTS = 300;

/** …in any window of this many seconds. */
export const RATE_BUDGET_WINDOW_SECONDS = 5;

import { RATE_BUDGET_REQUESTS, RATE_BUDGET_WINDOW_SECONDS } from '../domain/service-rules.js';

/** How telesync talks to the service: the settings every account's transport takes (config assembles them). */
export interface ApiSettings {
  /** Base address, without the /v1 prefix (TELESYNC_BASE_URL). */
  readonly baseUrl: string;
  /**
   * The service's request budget per account, as the service states it (TELESYNC_REQUEST_BUDGET,
   * default 300 per 5 s).
   */
  readonly serviceBudget: RequestBudget;
  /**
   * Requests per second telesync starts to the service, per account, averaged over
   * `rateWindowSeconds`: TELESYNC_REQUEST_SHARE of the service's budget, or the older
   * TELESYNC_MAX_RPS when that is set.
   */
  readonly maxRps: number;
  /**
   * The window `maxRps` is held over, in seconds: at most maxRps × window requests start in any such
   * window. The service's own window (TELESYNC_REQUEST_BUDGET), or the older
   * TELESYNC_RATE_WINDOW_SECONDS (default 1) with TELESYNC_MAX_RPS.
   */
  readonly rateWindowSeconds: number;
  /**
   * The older variables that set the rate (TELESYNC_MAX_RPS, TELESYNC_RATE_WINDOW_SECONDS), when
   * given: the start-up note names what replaces them. Empty otherwise.
   */
  readonly legacyRateVariables: readonly string[];
  /** Requests in flight at once, per account (TELESYNC_CONCURRENCY). */
  readonly concurrency: number;
  /** Time allowed for one request, headers and body (TELESYNC_HTTP_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /** Retries of one request after a 429, 5xx, reset or timeout (TELESYNC_MAX_RETRIES). */
  readonly maxRetries: number;
  /** Longest Retry-After honoured, in seconds; a longer one is cut to it (TELESYNC_RETRY_AFTER_MAX_SECONDS). */
  readonly retryAfterMaxSeconds: number;
  /** Largest response body read, in bytes; a larger one fails the request (TELESYNC_MAX_BODY_BYTES). */
  readonly maxBodyBytes: number;
}

/** At most `requests` requests in any `windowSeconds`, per account. */
export interface RequestBudget {
  readonly requests: number;
  readonly windowSeconds: number;
}

/** The service's budget per account, as its documentation states it (spec §8): more is refused with 429. */
export const SERVICE_REQUEST_BUDGET: RequestBudget = {
  requests: RATE_BUDGET_REQUESTS,
  windowSeconds: RATE_BUDGET_WINDOW_SECONDS,
};

type BudgetView = Pick<ApiSettings, 'serviceBudget' | 'maxRps' | 'rateWindowSeconds'>;

/**
 * What telesync will use of the service's budget, said once at start:
 * "at most 240 requests per 5 s per account: 80% of the service's 300". Pure.
 */
export function describeRequestBudget(api: BudgetView): string {
  const used = api.maxRps * api.rateWindowSeconds;
  const service = api.serviceBudget;
  const head = `at most ${formatCount(used)} requests per ${formatCount(api.rateWindowSeconds)} s per account`;
  // The share of the service's own window: the same window unless the older variables set another.
  const share = (api.maxRps * service.windowSeconds) / service.requests;
  const serviceTerms =
    api.rateWindowSeconds === service.windowSeconds
      ? `the service's ${formatCount(service.requests)}`
      : `the service's ${formatCount(service.requests)} per ${formatCount(service.windowSeconds)} s`;
  return `${head}: ${formatPercent(share)} of ${serviceTerms}`;
}

/**
 * The note for a configuration that sets the rate with the older variables, naming what replaces
 * them; undefined when none is given. Pure.
 */
export function planLegacyRateNote(
  api: Pick<ApiSettings, 'legacyRateVariables' | 'maxRps' | 'rateWindowSeconds' | 'serviceBudget'>,
): string | undefined {
  if (api.legacyRateVariables.length === 0) return undefined;
  const service = api.serviceBudget;
  const share = (api.maxRps * service.windowSeconds) / service.requests;
  const one = api.legacyRateVariables.length === 1;
  return (
    `${api.legacyRateVariables.join(' and ')} still ${one ? 'works' : 'work'}; what replaces ${one ? 'it' : 'them'}: ` +
    'TELESYNC_REQUEST_BUDGET (the service\'s budget as it states it, default "300/5s") ' +
    'and TELESYNC_REQUEST_SHARE (the share of it telesync uses, default 80%); ' +
    `the same rate over the service's window is TELESYNC_REQUEST_SHARE=${formatPercent(Math.min(1, share))}`
  );
}

/**
 * A warning when telesync would use more than the service allows, or undefined. A service on a
 * loopback address is the simulator (tests, the demo), which takes any rate. Pure.
 */
export function planRateWarning(
  api: Pick<ApiSettings, 'baseUrl' | keyof BudgetView>,
): string | undefined {
  const service = api.serviceBudget;
  if (api.maxRps * service.windowSeconds <= service.requests) return undefined;
  let host = '';
  try {
    host = new URL(api.baseUrl).hostname;
  } catch {
    // loadConfig has refused a URL that does not parse.
  }
  if (host === 'localhost' || host === '[::1]' || host.startsWith('127.')) return undefined;
  return (
    `${describeRequestBudget(api)}: above what the service allows, ${formatCount(service.requests)} requests per ${formatCount(service.windowSeconds)} s per account; ` +
    'expect 429 answers and retries that slow runs down; set TELESYNC_REQUEST_SHARE to 100% or less (and leave TELESYNC_MAX_RPS unset)'
  );
}

const COUNT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

function formatCount(value: number): string {
  return COUNT.format(value);
}

function formatPercent(share: number): string {
  return `${new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 }).format(share * 100)}%`;
}

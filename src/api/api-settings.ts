import { SERVICE_MAX_RPS } from '../domain/service-rules.js';

/** How telesync talks to the service: the settings every account's transport takes (config assembles them). */
export interface ApiSettings {
  /** Base address, without the /v1 prefix (TELESYNC_BASE_URL). */
  readonly baseUrl: string;
  /** Requests per second to the service, per account (TELESYNC_MAX_RPS). */
  readonly maxRps: number;
  /**
   * The window TELESYNC_MAX_RPS is held over, in seconds (TELESYNC_RATE_WINDOW_SECONDS, default 1):
   * at most maxRps × window requests start in any such window. 5 matches the service's count.
   */
  readonly rateWindowSeconds: number;
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

/**
 * A warning when TELESYNC_MAX_RPS is above what the service allows, or undefined. A service on a
 * loopback address is the simulator (tests, the demo), which takes any rate. Pure.
 */
export function planRateWarning(api: Pick<ApiSettings, 'baseUrl' | 'maxRps'>): string | undefined {
  if (api.maxRps <= SERVICE_MAX_RPS) return undefined;
  let host = '';
  try {
    host = new URL(api.baseUrl).hostname;
  } catch {
    // loadConfig has refused a URL that does not parse.
  }
  if (host === 'localhost' || host === '[::1]' || host.startsWith('127.')) return undefined;
  return (
    `TELESYNC_MAX_RPS=${api.maxRps} is above the service's limit of ${SERVICE_MAX_RPS} requests per second per account: ` +
    `expect 429 answers and retries that slow runs down; set it to ${SERVICE_MAX_RPS} or less`
  );
}

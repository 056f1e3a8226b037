import pRetry from 'p-retry';
import { createRedactor, type Redactor } from '../util/redact.js';
import { clampTimerMs, sleep } from '../util/sleep.js';
import { isStopped, StoppedError } from '../util/stopped-error.js';
import { TELESYNC_VERSION } from '../version.js';
import { ApiError, apiErrorWithAttempts, readErrorBody } from './api-errors.js';
import { Exchange, type ReceivedAnswer } from './exchange.js';
import { KeepAliveClient } from './keep-alive-client.js';
import type { MalformedBody } from './received-json.js';
import { RequestLimiter } from './request-limiter.js';

import { RequestMeter } from './request-meter.js';
import {
  capRetryAfter,
  computeRetryDelayMs,
  DEFAULT_BACKOFF,
  isRetryableFailure,
  parseRetryAfter,
  RETRY_AFTER_MAX_SECONDS,
  type BackoffPolicy,
} from './retry-policy.js';

/**
 * Largest response body read, in bytes, unless a transport option says otherwise. A page of
 * records is a few tens of kilobytes; a body past this is not a page, and reading it whole would
 * cost several times its size in memory, so reading stops there and the request fails.
 */
export const RESPONSE_MAX_BYTES = 32 * 1024 * 1024;

export interface TransportOptions {
  /** Base address without a trailing slash, e.g. `https://api.plivo.com`. */
  baseUrl: string;
  authId: string;
  authToken: string;
  /** Requests started per second, at most (over rateWindowSeconds). */
  maxRps: number;
  /** The window the service counts requests over, in seconds (default 1). */
  rateWindowSeconds?: number;
  /** Requests in flight at once, at most. */
  concurrency: number;
  /** Time allowed for one exchange, headers and body. */
  timeoutMs: number;
  /**
   * Retries after a retryable failure (429, 5xx, reset, timeout, malformed body; for a POST only a
   * 429 or a failure before it was sent: isRetryableFailure).
   */
  maxRetries: number;
  backoff?: BackoffPolicy;
  /** Source of jitter; Math.random unless a test pins it. */
  random?: () => number;
  /** Longest Retry-After honoured, in seconds; RETRY_AFTER_MAX_SECONDS (120) by default. */
  retryAfterMaxSeconds?: number;
  /** Largest response body read, in bytes; RESPONSE_MAX_BYTES (32 MiB) by default. */
  maxBodyBytes?: number;
  /** Told of every retry before its wait (for logs). */
  onRetry?: (event: RetryEvent) => void;
}

export interface RetryEvent {
  method: string;
  path: string;
  /** 1 for the first retry. */
  retryNumber: number;
  delayMs: number;
  error: ApiError;
  /**
   * Set on the first retry of this transport whose Retry-After was over the cap, to say (once)
   * that the service asked for longer than telesync waits.
   */
  note?: string;
}

export interface RequestSpec {
  method: 'GET' | 'POST';
  /** Path below the base address, starting with `/v1/`. */
  path: string;
  query?: URLSearchParams;
  /** Sent as JSON. */
  body?: unknown;
}

export interface RequestOptions {
  /** Aborts the request, in flight included (StoppedError). */
  signal?: AbortSignal;
  /**
   * Once aborted, the request gives up any wait (its turn in the limiter, a 429 pause, the pause
   * before a retry) with StoppedError; an exchange already in flight is never cancelled.
   */
  stopSignal?: AbortSignal;
  /** Also counts this request's cost (besides the transport's lifetime meter). */
  meter?: RequestMeter;
}

/**
 * Reads a successful body; throws the error `malformed` makes (naming the request) when the body is
 * not what the operation returns.
 */
export type BodyReader<T> = (body: Uint8Array, malformed: MalformedBody) => T;

/** A request's path with its query, and the same with any secret in it redacted (for errors). */
interface RequestTarget {
  readonly path: string;
  readonly shownPath: string;
}

const PAUSED = Symbol('paused');

/**
 * The one way telesync talks to the service. It owns the rate limiter (request-limiter.ts: a minimum
 * spacing between request starts, so no one-second window sees more than `maxRps`, and at most
 * `concurrency` in flight), retries (p-retry as the loop; the delay is telesync's own backoff with
 * jitter and the Retry-After floor), a timeout per exchange, keep-alive connections (its own
 * KeepAliveClient, whose handler gathers the body without a stream: a general-purpose client cost
 * more CPU a request, docs/performance.md), and typed errors. A 429 pauses every
 * request of this transport until its Retry-After has passed, not just the one that got it: the
 * service is telling the whole account to slow down.
 */
export class HttpTransport {
  /** Lifetime totals of this transport. */
  readonly meter = new RequestMeter();
  readonly #options: TransportOptions;
  readonly #limiter: RequestLimiter;
  readonly #client: KeepAliveClient;
  /** The base address's path (without a trailing slash), which every path follows. */
  readonly #pathPrefix: string;
  /** Every request's headers, built once: they never change for a transport. */
  readonly #headers: Readonly<Record<string, string>>;
  readonly #headersWithJsonBody: Readonly<Record<string, string>>;
  /** Removes what must never leave the transport in an error: the token and the header of it. */
  readonly #redact: Redactor;
  #pausedUntilMs = 0;
  #cappedRetryAfterTold = false;
  readonly #retryAfterMaxSeconds: number;
  readonly #maxBodyBytes: number;
  /** The per-exchange timeout, within what a timer can hold. */
  readonly #timeoutMs: number;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#retryAfterMaxSeconds = options.retryAfterMaxSeconds ?? RETRY_AFTER_MAX_SECONDS;
    this.#maxBodyBytes = options.maxBodyBytes ?? RESPONSE_MAX_BYTES;
    // A timeout past the timer limit would make every request time out at once.
    this.#timeoutMs = Math.max(1, clampTimerMs(options.timeoutMs));
    this.#limiter = new RequestLimiter({
      maxPerSecond: options.maxRps,
      windowSeconds: options.rateWindowSeconds ?? 1,
      maxConcurrent: options.concurrency,
    });
    const base = new URL(options.baseUrl);
    this.#client = new KeepAliveClient(base.origin, {
      connections: options.concurrency,
      connectTimeoutMs: this.#timeoutMs,
      keepAliveMs: 30_000,
    });
    const credentials = Buffer.from(`${options.authId}:${options.authToken}`).toString('base64');
    this.#pathPrefix = base.pathname.replace(/\/+$/, '');
    this.#headers = {
      authorization: `Basic ${credentials}`,
      'user-agent': `telesync/${TELESYNC_VERSION} (node ${process.versions.node})`,
      accept: 'application/json',
    };
    this.#headersWithJsonBody = { ...this.#headers, 'content-type': 'application/json' };
    this.#redact = createRedactor([options.authToken, credentials, `Basic ${credentials}`]);
  }

  /**
   * Sends a request, retrying what is worth retrying, and returns what `read` makes of the body.
   * Throws ApiError (never with the token in it).
   */
  async request<T>(
    spec: RequestSpec,
    read: BodyReader<T>,
    options: RequestOptions = {},
  ): Promise<T> {
    const meters = options.meter ? [this.meter, options.meter] : [this.meter];
    const path =
      spec.query && spec.query.size > 0 ? `${spec.path}?${spec.query.toString()}` : spec.path;
    // What errors and logs show of the request: never a secret, even one passed as an identifier.
    const shownPath = this.#redact(path);
    const target: RequestTarget = { path, shownPath };
    let attempts = 0;
    const backoff = this.#options.backoff ?? DEFAULT_BACKOFF;
    const random = this.#options.random ?? Math.random;
    // Every wait ends on either signal; the exchange itself only on `signal`.
    const waitSignal = anySignal(options.signal, options.stopSignal);

    try {
      return await pRetry(
        async () => {
          attempts++;
          return this.#attempt(spec, target, read, attempts, meters, options.signal, waitSignal);
        },
        {
          retries: this.#options.maxRetries,
          minTimeout: 0,
          factor: 1,
          // Not the stop signal: p-retry would drop an answer that arrived after it.
          ...(options.signal ? { signal: options.signal } : {}),
          shouldRetry: ({ error }) => error instanceof ApiError && error.retryable,
          onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
            if (!(error instanceof ApiError) || !error.retryable || retriesLeft === 0) return;
            const retryAfterSeconds = capRetryAfter(
              error.retryAfterSeconds,
              this.#retryAfterMaxSeconds,
            );
            const delayMs = computeRetryDelayMs(
              attemptNumber,
              backoff,
              random(),
              retryAfterSeconds,
            );
            const capped =
              error.retryAfterSeconds !== undefined &&
              error.retryAfterSeconds > this.#retryAfterMaxSeconds;
            const note =
              capped && !this.#cappedRetryAfterTold
                ? `the service asked to wait ${error.retryAfterSeconds} s (Retry-After); telesync waits at most ${this.#retryAfterMaxSeconds} s before retrying`
                : undefined;
            if (note !== undefined) this.#cappedRetryAfterTold = true;
            this.#options.onRetry?.({
              method: spec.method,
              path: shownPath,
              retryNumber: attemptNumber,
              delayMs,
              error,
              ...(note !== undefined ? { note } : {}),
            });
            for (const meter of meters) meter.waitMs += delayMs;
            await sleep(delayMs, waitSignal);
          },
        },
      );
    } catch (error) {
      if (options.stopSignal?.aborted === true && !options.signal?.aborted) {
        // Stopped while waiting: the last failure, if any, is not the outcome; the stop is.
        if (!(error instanceof ApiError) || error.retryable)
          throw new StoppedError(
            `${spec.method} ${shownPath}: stopped on request while waiting to be sent`,
          );
      }
      if (error instanceof ApiError)
        throw attempts > 1 ? apiErrorWithAttempts(error, attempts) : error;
      if (options.signal?.aborted === true && !isStopped(error))
        throw new StoppedError(`${spec.method} ${shownPath}: cancelled`, { cause: error });
      throw error;
    }
  }

  /** One attempt: waits out a 429 pause, then takes a limiter slot for the exchange itself. */
  async #attempt<T>(
    spec: RequestSpec,
    target: RequestTarget,
    read: BodyReader<T>,
    attemptNumber: number,
    meters: readonly RequestMeter[],
    signal: AbortSignal | undefined,
    waitSignal: AbortSignal | undefined,
  ): Promise<T> {
    for (;;) {
      const pauseMs = this.#pausedUntilMs - Date.now();
      if (pauseMs > 0) await sleep(pauseMs, waitSignal);
      const outcome = await this.#limiter.schedule<T | typeof PAUSED>(
        () =>
          // A request queued before the pause began must not fire inside it.
          this.#pausedUntilMs > Date.now()
            ? Promise.resolve(PAUSED)
            : this.#exchange(spec, target, read, attemptNumber, meters, signal),
        waitSignal,
      );
      if (outcome !== PAUSED) return outcome;
    }
  }

  async #exchange<T>(
    spec: RequestSpec,
    target: RequestTarget,
    read: BodyReader<T>,
    attemptNumber: number,
    meters: readonly RequestMeter[],
    callerSignal: AbortSignal | undefined,
  ): Promise<T> {
    for (const meter of meters) {
      meter.requests++;
      if (attemptNumber > 1) meter.retries++;
    }
    let sent = true;
    // Whether to retry is decided here, from the method and whether the request left telesync.
    const failure = (
      details: Omit<ConstructorParameters<typeof ApiError>[0], 'method' | 'path' | 'retryable'>,
      cause?: unknown,
    ) =>
      new ApiError(
        {
          ...details,
          method: spec.method,
          path: target.shownPath,
          retryable: isRetryableFailure(spec.method, { ...details, sent }),
          ...(sent ? {} : { sent: false }),
        },
        { cause },
      );

    const exchange = this.#send(spec, target.path, callerSignal);
    let answer: ReceivedAnswer;
    try {
      answer = await exchange.answer;
    } catch (error) {
      sent = exchange.written;
      const kind = exchange.endedBy ?? (callerSignal?.aborted === true ? 'aborted' : 'network');
      for (const meter of meters) meter.recordOutcome(kind);
      if (kind === 'aborted')
        throw isStopped(error)
          ? error
          : new StoppedError(`${spec.method} ${target.shownPath}: cancelled`, { cause: error });
      throw failure({ kind }, kind === 'timeout' ? undefined : error);
    }
    const { status, retryAfterHeader, location } = answer;
    if (answer.body === undefined) {
      for (const meter of meters) meter.recordOutcome('too_large');
      throw failure({
        kind: 'too_large',
        status,
        serviceMessage: `the answer is larger than ${this.#maxBodyBytes} bytes; reading stopped there`,
      });
    }
    const body = answer.body;

    for (const meter of meters) {
      meter.bytesReceived += body.byteLength;
      meter.recordOutcome(String(status));
    }
    if (status >= 300 && status < 400) {
      // Never followed: the credentials must not leave the service's origin. Said as what it is,
      // not as a malformed body.
      throw failure({
        kind: 'http',
        status,
        serviceMessage: `a redirect to ${describeLocation(location, this.#options.baseUrl)}, not followed (check TELESYNC_BASE_URL)`,
      });
    }
    if (status >= 400) {
      // A proxy or a service that echoes the request must not carry the credentials into an error.
      const { apiId, serviceMessage } = readErrorBody(
        Buffer.from(body).toString('utf8'),
        this.#redact,
      );
      const retryAfterSeconds = parseRetryAfter(retryAfterHeader, Date.now());
      // Paused here, before the error leaves the limiter's slot, so no request queued behind this
      // one can start inside the pause. Without a Retry-After the pause is the shortest backoff of
      // this retry: the account is still told to slow down, so no other request fires at once.
      if (status === 429) {
        const cappedSeconds = capRetryAfter(retryAfterSeconds, this.#retryAfterMaxSeconds);
        const pauseMs =
          cappedSeconds !== undefined
            ? cappedSeconds * 1000
            : computeRetryDelayMs(attemptNumber, this.#options.backoff ?? DEFAULT_BACKOFF, 0);
        this.#pausedUntilMs = Math.max(this.#pausedUntilMs, Date.now() + pauseMs);
      }
      throw failure({
        kind: 'http',
        status,
        ...(apiId !== undefined ? { apiId } : {}),
        ...(serviceMessage !== undefined ? { serviceMessage } : {}),
        ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      });
    }
    return read(body, (message) => {
      for (const meter of meters) meter.recordOutcome('malformed');
      return failure({ kind: 'malformed', status, serviceMessage: message });
    });
  }

  /** One exchange through the client, its handler an Exchange (which see). */
  #send(spec: RequestSpec, path: string, callerSignal: AbortSignal | undefined): Exchange {
    const exchange = new Exchange(this.#maxBodyBytes, this.#timeoutMs, callerSignal);
    if (exchange.over) return exchange;
    try {
      // The exchange's one timeout is its own timer, over headers and body together.
      this.#client.dispatch(
        {
          path: `${this.#pathPrefix}${path}`,
          method: spec.method,
          headers: spec.body !== undefined ? this.#headersWithJsonBody : this.#headers,
          ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
        },
        exchange,
      );
    } catch (error) {
      exchange.failToSend(error);
    }
    return exchange;
  }

  /** Stops taking requests and closes the connections. */
  async close(): Promise<void> {
    await this.#client.close();
  }
}

function anySignal(
  first: AbortSignal | undefined,
  second: AbortSignal | undefined,
): AbortSignal | undefined {
  if (first === undefined) return second;
  if (second === undefined) return first;
  return AbortSignal.any([first, second]);
}

/** The host a redirect names (never its path or query, which may hold anything), for errors. */
function describeLocation(location: string | undefined, baseUrl: string): string {
  if (location === undefined || location === '') return 'nowhere (no Location header)';
  try {
    const url = new URL(location, baseUrl);
    return url.host === '' ? 'an unreadable Location' : url.host;
  } catch {
    return 'an unreadable Location';
  }
}

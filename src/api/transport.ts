import pRetry from 'p-retry';
import { Agent, request, type Dispatcher } from 'undici';
import { redactSecrets } from '../util/redact.js';
import { sleep } from '../util/sleep.js';
import { TELESYNC_VERSION } from '../version.js';
import { ApiError, readErrorBody } from './api-errors.js';
import { MalformedBodyError } from './received-json.js';
import { RequestLimiter } from './request-limiter.js';

import { RequestMeter } from './request-meter.js';
import {
  computeRetryDelayMs,
  DEFAULT_BACKOFF,
  parseRetryAfter,
  type BackoffPolicy,
} from './retry-policy.js';

export interface TransportOptions {
  /** Base address without a trailing slash, e.g. `https://api.plivo.com`. */
  baseUrl: string;
  authId: string;
  authToken: string;
  /** Requests started per second, at most. */
  maxRps: number;
  /** Requests in flight at once, at most. */
  concurrency: number;
  /** Time allowed for one exchange, headers and body. */
  timeoutMs: number;
  /** Retries after a retryable failure (429, 5xx, reset, timeout, malformed body). */
  maxRetries: number;
  backoff?: BackoffPolicy;
  /** Source of jitter; Math.random unless a test pins it. */
  random?: () => number;
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
  signal?: AbortSignal;
  /** Also counts this request's cost (besides the transport's lifetime meter). */
  meter?: RequestMeter;
}

/** Reads a successful body; throw MalformedBodyError when it is not what the operation returns. */
export type BodyReader<T> = (body: Uint8Array, status: number) => T;

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
 * jitter and the Retry-After floor), a timeout per exchange, keep-alive connections (undici), and
 * typed errors. A 429 pauses every request of this transport until its Retry-After has passed, not
 * just the one that got it: the service is telling the whole account to slow down.
 */
export class HttpTransport {
  /** Lifetime totals of this transport. */
  readonly meter = new RequestMeter();
  readonly #options: TransportOptions;
  readonly #limiter: RequestLimiter;
  readonly #agent: Dispatcher;
  readonly #authorization: string;
  /** Texts that must never leave the transport in an error: the token and the header built from it. */
  readonly #secrets: readonly string[];
  readonly #userAgent = `telesync/${TELESYNC_VERSION} (node ${process.versions.node})`;
  #pausedUntilMs = 0;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#limiter = new RequestLimiter({
      maxPerSecond: options.maxRps,
      maxConcurrent: options.concurrency,
    });
    this.#agent = new Agent({
      connections: options.concurrency,
      keepAliveTimeout: 30_000,
      connect: { timeout: options.timeoutMs },
    });
    const credentials = Buffer.from(`${options.authId}:${options.authToken}`).toString('base64');
    this.#authorization = `Basic ${credentials}`;
    this.#secrets = [options.authToken, credentials];
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
    const shownPath = redactSecrets(path, this.#secrets);
    const target: RequestTarget = { path, shownPath };
    let attempts = 0;
    const backoff = this.#options.backoff ?? DEFAULT_BACKOFF;
    const random = this.#options.random ?? Math.random;

    try {
      return await pRetry(
        async () => {
          attempts++;
          return this.#attempt(spec, target, read, attempts, meters, options.signal);
        },
        {
          retries: this.#options.maxRetries,
          minTimeout: 0,
          factor: 1,
          ...(options.signal ? { signal: options.signal } : {}),
          shouldRetry: ({ error }) => error instanceof ApiError && error.retryable,
          onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
            if (!(error instanceof ApiError) || !error.retryable || retriesLeft === 0) return;
            const delayMs = computeRetryDelayMs(
              attemptNumber,
              backoff,
              random(),
              error.retryAfterSeconds,
            );
            this.#options.onRetry?.({
              method: spec.method,
              path: shownPath,
              retryNumber: attemptNumber,
              delayMs,
              error,
            });
            for (const meter of meters) meter.waitMs += delayMs;
            await sleep(delayMs, options.signal);
          },
        },
      );
    } catch (error) {
      if (error instanceof ApiError) throw attempts > 1 ? error.withAttempts(attempts) : error;
      if (options.signal?.aborted) {
        throw new ApiError(
          { kind: 'aborted', method: spec.method, path: shownPath, retryable: false },
          { cause: error },
        );
      }
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
  ): Promise<T> {
    for (;;) {
      const pauseMs = this.#pausedUntilMs - Date.now();
      if (pauseMs > 0) await sleep(pauseMs, signal);
      const outcome = await this.#limiter.schedule<T | typeof PAUSED>(
        () =>
          // A request queued before the pause began must not fire inside it.
          this.#pausedUntilMs > Date.now()
            ? Promise.resolve(PAUSED)
            : this.#exchange(spec, target, read, attemptNumber, meters, signal),
        signal,
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
    const timeout = AbortSignal.timeout(this.#options.timeoutMs);
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
    const failure = (
      details: Omit<ConstructorParameters<typeof ApiError>[0], 'method' | 'path'>,
      cause?: unknown,
    ) => new ApiError({ ...details, method: spec.method, path: target.shownPath }, { cause });

    let status: number;
    let body: Uint8Array;
    let retryAfterHeader: string | undefined;
    try {
      const response = await request(`${this.#options.baseUrl}${target.path}`, {
        method: spec.method,
        dispatcher: this.#agent,
        signal,
        headersTimeout: this.#options.timeoutMs,
        bodyTimeout: this.#options.timeoutMs,
        headers: {
          authorization: this.#authorization,
          'user-agent': this.#userAgent,
          accept: 'application/json',
          ...(spec.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
      });
      status = response.statusCode;
      const header = response.headers['retry-after'];
      retryAfterHeader = Array.isArray(header) ? header[0] : header;
      body = new Uint8Array(await response.body.arrayBuffer());
    } catch (error) {
      const kind = callerSignal?.aborted ? 'aborted' : timeout.aborted ? 'timeout' : 'network';
      for (const meter of meters) meter.recordOutcome(kind);
      throw failure({ kind, retryable: kind !== 'aborted' }, error);
    }

    for (const meter of meters) {
      meter.bytesReceived += body.byteLength;
      meter.recordOutcome(String(status));
    }
    if (status >= 400) {
      // A proxy or a service that echoes the request must not carry the credentials into an error.
      const { apiId, serviceMessage } = readErrorBody(
        redactSecrets(Buffer.from(body).toString('utf8'), this.#secrets),
      );
      const retryAfterSeconds = parseRetryAfter(retryAfterHeader, Date.now());
      // Paused here, before the error leaves the limiter's slot, so no request queued behind this
      // one can start inside the pause.
      if (status === 429) {
        this.#pausedUntilMs = Math.max(
          this.#pausedUntilMs,
          Date.now() + (retryAfterSeconds ?? 0) * 1000,
        );
      }
      throw failure({
        kind: 'http',
        status,
        retryable: status === 429 || status >= 500,
        ...(apiId !== undefined ? { apiId } : {}),
        ...(serviceMessage !== undefined ? { serviceMessage } : {}),
        ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      });
    }
    try {
      return read(body, status);
    } catch (error) {
      if (error instanceof MalformedBodyError) {
        for (const meter of meters) meter.recordOutcome('malformed');
        throw failure(
          { kind: 'malformed', status, retryable: true, serviceMessage: error.message },
          error,
        );
      }
      throw error;
    }
  }

  /** Stops taking requests and closes the connections. */
  async close(): Promise<void> {
    await this.#agent.close();
  }
}

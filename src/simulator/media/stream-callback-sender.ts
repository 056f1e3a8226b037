import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  signStreamCallbackV3,
  SIGNATURE_V3_HEADER,
  SIGNATURE_V3_NONCE_HEADER,
  type CallbackMethod,
} from '../../api/stream-callback-signature.js';
import { sleep } from '../../util/sleep.js';
import type { SimulatorStats } from '../state/simulator-stats.js';
import { planCallbackRetryDelayMs, type CallbackRetryPolicy } from './callback-retry.js';

/**
 * Sends streams' status callbacks as the service does: by the stream's status_callback_method (GET:
 * the fields in the query string; POST: a form-encoded body), signed with the account's auth token
 * (X-Plivo-Signature-V3 over the URL, the fields and a fresh nonce per attempt), retried with
 * capped exponential backoff when the receiver fails. The callbacks of one stream go out one after
 * another, in the order of its occasions.
 */

/** One callback to deliver. */
export interface StreamCallbackRequest {
  /** status_callback_url, as given at the stream's start. */
  readonly url: string;
  readonly method: CallbackMethod;
  readonly fields: Readonly<Record<string, string>>;
  /** Signs the callback; never sent or logged. */
  readonly authToken: string;
}

export interface StreamCallbackSenderOptions {
  readonly stats: SimulatorStats;
  readonly retry: CallbackRetryPolicy;
  /** Authorities trusted for https:// receivers; undefined: the usual ones. */
  readonly ca: readonly (string | Buffer)[] | undefined;
  /** Draws the retry jitter (default Math.random). */
  readonly random?: () => number;
}

export class StreamCallbackSender {
  readonly #options: StreamCallbackSenderOptions;
  readonly #queues = new Map<string, Promise<void>>();
  readonly #stop = new AbortController();

  constructor(options: StreamCallbackSenderOptions) {
    this.#options = options;
  }

  /**
   * Queues a callback behind the earlier ones of the same `key` (a stream_id). Returns at once;
   * the delivery runs in the background until delivered, given up, or the sender closes.
   */
  enqueue(key: string, request: StreamCallbackRequest): void {
    if (this.#stop.signal.aborted) return;
    const next = (this.#queues.get(key) ?? Promise.resolve()).then(() => this.#deliver(request));
    this.#queues.set(key, next);
    void next.then(() => {
      if (this.#queues.get(key) === next) this.#queues.delete(key);
    });
  }

  /** Abandons every pending delivery and retry (each counted as failed) and waits for them. */
  async close(): Promise<void> {
    this.#stop.abort(new Error('the simulator is closing'));
    await Promise.all(this.#queues.values());
  }

  async #deliver(request: StreamCallbackRequest): Promise<void> {
    const { stats, retry } = this.#options;
    const signal = this.#stop.signal;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) break;
      stats.countCallback('sent');
      if (await this.#attempt(request)) {
        stats.countCallback('delivered');
        return;
      }
      if (attempt >= retry.attempts || signal.aborted) break;
      const random = (this.#options.random ?? Math.random)();
      try {
        await sleep(planCallbackRetryDelayMs(attempt, retry, random), signal);
      } catch {
        break;
      }
      stats.countCallback('retried');
    }
    stats.countCallback('failed');
  }

  /** One signed attempt; true when the receiver answered 2xx. Never rejects. */
  #attempt(request: StreamCallbackRequest): Promise<boolean> {
    const target = new URL(request.url);
    target.hash = '';
    let body: string | undefined;
    if (request.method === 'GET') {
      for (const [name, value] of Object.entries(request.fields))
        target.searchParams.append(name, value);
    } else {
      body = new URLSearchParams(request.fields).toString();
    }
    const nonce = createNonce();
    const signature = signStreamCallbackV3({
      method: request.method,
      url: target.href,
      ...(request.method === 'POST' ? { params: request.fields } : {}),
      nonce,
      authToken: request.authToken,
    });
    const headers: Record<string, string | number> = {
      'User-Agent': 'telesync-simulator',
      [SIGNATURE_V3_HEADER]: signature,
      [SIGNATURE_V3_NONCE_HEADER]: nonce,
    };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    const signal = AbortSignal.any([
      this.#stop.signal,
      AbortSignal.timeout(this.#options.retry.timeoutMs),
    ]);
    const secure = target.protocol === 'https:';
    const { ca } = this.#options;
    return new Promise((resolve) => {
      const onResponse = (response: IncomingMessage): void => {
        const status = response.statusCode ?? 0;
        response.on('error', () => resolve(false));
        response.on('end', () => resolve(status >= 200 && status < 300));
        // A body cut short ends in 'close' without 'end' (a settled promise ignores the rest).
        response.on('close', () => resolve(false));
        response.resume();
      };
      // A fresh connection per attempt (agent: false): nothing is pooled to outlive close().
      const options = { method: request.method, headers, signal, agent: false as const };
      const outgoing = secure
        ? httpsRequest(target, ca === undefined ? options : { ...options, ca: [...ca] }, onResponse)
        : httpRequest(target, options, onResponse);
      outgoing.on('error', () => resolve(false));
      outgoing.end(body);
    });
  }
}

/** 20 random decimal digits, as the service's nonces look. */
function createNonce(): string {
  return Array.from(randomBytes(20), (byte) => String(byte % 10)).join('');
}

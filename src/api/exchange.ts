import type { ExchangeController, ResponseHandler, ResponseHeaders } from './keep-alive-client.js';
import { StoppedError } from '../util/stopped-error.js';

/** What came back from one exchange; `body` is undefined when it passed the size cap. */
export interface ReceivedAnswer {
  readonly status: number;
  readonly retryAfterHeader: string | undefined;
  readonly location: string | undefined;
  readonly body: Uint8Array | undefined;
}

/** Why the transport ended an exchange itself: its timeout, or the caller's abort. */
export type ExchangeEnd = 'timeout' | 'aborted';

/** Why a body past the size cap stopped being read (the exchange has already failed). */
const BODY_TOO_LARGE = new Error('the answer passed the size cap');

/**
 * One request's exchange as the transport's client (KeepAliveClient) drives it: the handler that
 * gathers the body, one timer over headers and body together, and the caller's signal, listened to
 * only when there is one. `answer` resolves with the status, the headers the transport uses and the
 * body (undefined past the size cap: the rest is left unread and the connection dropped); it rejects
 * with StoppedError on the caller's abort, an Error on the timeout (`endedBy` says which), or with
 * the client's error.
 */
export class Exchange implements ResponseHandler {
  readonly answer: Promise<ReceivedAnswer>;
  #resolve!: (answer: ReceivedAnswer) => void;
  #reject!: (error: unknown) => void;
  /** Set once the exchange is over, whichever way: nothing after that changes the outcome. */
  #settled = false;
  /** Why the transport ended the exchange, if it did. */
  #ended: { readonly kind: ExchangeEnd; readonly reason: Error } | undefined;
  #controller: ExchangeController | undefined;
  #written = false;
  readonly #timer: NodeJS.Timeout;
  #status = 0;
  #retryAfterHeader: string | undefined;
  #location: string | undefined;
  #chunks: Buffer[] = [];
  #total = 0;
  readonly #maxBodyBytes: number;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #onCallerAbort = (): void =>
    this.#end(
      'aborted',
      new StoppedError('the exchange was cancelled', { cause: this.#callerSignal?.reason }),
    );

  constructor(maxBodyBytes: number, timeoutMs: number, callerSignal: AbortSignal | undefined) {
    this.#maxBodyBytes = maxBodyBytes;
    this.#callerSignal = callerSignal;
    this.answer = new Promise<ReceivedAnswer>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Armed first, so everything that settles the exchange can clear it.
    this.#timer = setTimeout(
      () => this.#end('timeout', new Error('no complete answer within the timeout')),
      timeoutMs,
    );
    if (callerSignal?.aborted === true) this.#onCallerAbort();
    else callerSignal?.addEventListener('abort', this.#onCallerAbort, { once: true });
  }

  /** Why the transport ended the exchange itself, if it did: its timeout, or the caller's abort. */
  get endedBy(): ExchangeEnd | undefined {
    return this.#ended?.kind;
  }

  /** The exchange is over already (the caller's signal was aborted before it was sent). */
  get over(): boolean {
    return this.#settled;
  }

  /**
   * Whether the request may have reached the service: the client starts it (onRequestStart) on a
   * connected socket just before writing it. False means it never left telesync (the connection
   * was refused or timed out, the caller aborted first), so the service cannot have acted on it.
   */
  get written(): boolean {
    return this.#written;
  }

  /** Sending threw before the dispatcher took the request. */
  failToSend(error: unknown): void {
    if (this.#settled) return;
    this.#settle();
    this.#reject(error instanceof Error ? error : new Error(String(error)));
  }

  onRequestStart(controller: ExchangeController): void {
    this.#controller = controller;
    if (this.#ended === undefined) this.#written = true;
    // Ended while it waited for a connection: it goes no further.
    if (this.#ended !== undefined) controller.abort(this.#ended.reason);
  }

  onResponseStart(
    controller: ExchangeController,
    statusCode: number,
    headers: ResponseHeaders,
  ): void {
    // An informational answer (100 Continue…): the real one follows.
    if (statusCode < 200) return;
    this.#status = statusCode;
    this.#retryAfterHeader = firstHeader(headers['retry-after']);
    this.#location = firstHeader(headers.location);
    this.#chunks = [];
    this.#total = 0;
    const declared = Number(firstHeader(headers['content-length']));
    if (Number.isFinite(declared) && declared > this.#maxBodyBytes) this.#tooLarge(controller);
  }

  onResponseData(controller: ExchangeController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#total += chunk.byteLength;
    if (this.#total > this.#maxBodyBytes) {
      this.#tooLarge(controller);
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    this.#finish(joinChunks(this.#chunks, this.#total));
  }

  onResponseError(_controller: ExchangeController, error: Error): void {
    if (this.#settled) return;
    this.#settle();
    this.#reject(error);
  }

  #tooLarge(controller: ExchangeController): void {
    this.#finish(undefined);
    controller.abort(BODY_TOO_LARGE);
  }

  #finish(body: Uint8Array | undefined): void {
    if (this.#settled) return;
    this.#settle();
    this.#resolve({
      status: this.#status,
      retryAfterHeader: this.#retryAfterHeader,
      location: this.#location,
      body,
    });
  }

  #end(kind: ExchangeEnd, reason: Error): void {
    if (this.#settled) return;
    this.#settle();
    this.#ended = { kind, reason };
    this.#controller?.abort(reason);
    this.#reject(reason);
  }

  #settle(): void {
    this.#settled = true;
    this.#chunks = [];
    clearTimeout(this.#timer);
    this.#callerSignal?.removeEventListener('abort', this.#onCallerAbort);
  }
}

/** The body's chunks as one array of its own (a chunk may be a view of a larger socket read). */
function joinChunks(chunks: readonly Buffer[], total: number): Uint8Array {
  const body = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

function firstHeader(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}

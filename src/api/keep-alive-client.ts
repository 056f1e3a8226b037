import * as net from 'node:net';
import * as tls from 'node:tls';

/**
 * An HTTP/1.1 client of one origin with keep-alive connections, for the transport's exchanges. It
 * drives a ResponseHandler (the transport's Exchange) with the answer's status, headers and body
 * pieces as they arrive, and does nothing else: no redirects, no retries, no decompression, no
 * pipelining (one exchange a connection at a time). The requests telesync sends are small and its
 * answers are pages of a few tens of kilobytes, so a general client's streams, events and wasm
 * parser cost more than the exchange itself (docs/performance.md, "telesync's own HTTP client").
 *
 * What the service sends is bounded before it is read: a status line and headers of at most
 * HEAD_MAX_BYTES, a chunk-size line of at most CHUNK_LINE_MAX_BYTES; the body's size is the
 * handler's to bound (it aborts past its cap), the exchange's time the transport's.
 */

/** Lets a handler end its exchange: the connection is dropped and nothing more is delivered. */
export interface ExchangeController {
  abort(reason: Error): void;
}

/** The answer's headers: names in lower case, a header given twice as an array. */
export type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** What a client tells of one exchange, in order; after onResponseEnd or onResponseError, nothing. */
export interface ResponseHandler {
  /** The request is about to be written on a connected socket. */
  onRequestStart(controller: ExchangeController): void;
  /** An answer's head; an informational one (1xx) is followed by the final one. */
  onResponseStart(controller: ExchangeController, status: number, headers: ResponseHeaders): void;
  onResponseData(controller: ExchangeController, chunk: Buffer): void;
  onResponseEnd(): void;
  onResponseError(controller: ExchangeController, error: Error): void;
}

export interface ClientRequest {
  readonly method: string;
  /** The path and query, from `/`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export interface KeepAliveClientOptions {
  /** Connections open at once, at most; requests past them wait for one. */
  readonly connections: number;
  /** Time allowed to connect (and for TLS, to shake hands). */
  readonly connectTimeoutMs: number;
  /** How long an idle connection is kept for the next request. */
  readonly keepAliveMs: number;
}

/** Longest status line and headers read; Node's and undici's own limit. */
export const HEAD_MAX_BYTES = 16 * 1024;
/** Most informational (1xx) answers read before the final one. */
export const INFORMATIONAL_MAX = 8;
/** Longest chunk-size line (with extensions) read in a chunked body. */
export const CHUNK_LINE_MAX_BYTES = 1024;

/** An error of the connection or of the answer's framing, with a code like Node's socket errors. */
export class HttpClientError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'HttpClientError';
  }
}

interface Pending {
  readonly request: ClientRequest;
  readonly handler: ResponseHandler;
}

export class KeepAliveClient {
  readonly #url: URL;
  readonly #options: KeepAliveClientOptions;
  /** Every open connection, and those of them waiting for a request. */
  readonly #connections = new Set<Connection>();
  readonly #idle: Connection[] = [];
  readonly #queue: Pending[] = [];
  #closed = false;

  constructor(origin: string, options: KeepAliveClientOptions) {
    this.#url = new URL(origin);
    if (this.#url.protocol !== 'http:' && this.#url.protocol !== 'https:') {
      throw new Error(`${this.#url.protocol} is not http: or https:`);
    }
    this.#options = options;
  }

  /**
   * Sends `request` when a connection is free and tells `handler` of its answer. Throws, sending
   * nothing, when the client is closed or the request cannot be written as it is (a path or a
   * header value with a space, a line break or a byte outside ASCII would change what is sent).
   */
  dispatch(request: ClientRequest, handler: ResponseHandler): void {
    if (this.#closed) throw new Error('the client is closed');
    if (!PATH.test(request.path)) throw new Error('the request path holds a character it may not');
    for (const name in request.headers) {
      if (!HEADER_NAME.test(name) || !HEADER_VALUE.test(request.headers[name]!)) {
        throw new Error(`the request header ${JSON.stringify(name)} holds a character it may not`);
      }
    }
    this.#queue.push({ request, handler });
    this.#next();
  }

  /** Drops every connection; exchanges in flight or waiting fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new HttpClientError('the client was closed', 'CLIENT_CLOSED');
    for (const pending of this.#queue.splice(0)) {
      pending.handler.onResponseError(NO_CONTROLLER, closed);
    }
    for (const connection of this.#idle.splice(0)) connection.destroy();
    await Promise.all([...this.#connections].map((connection) => connection.end(closed)));
  }

  #next(): void {
    while (this.#queue.length > 0) {
      const connection = this.#idle.pop();
      if (connection !== undefined) {
        connection.send(this.#queue.shift()!);
        continue;
      }
      if (this.#connections.size >= this.#options.connections) return;
      this.#connect(this.#queue.shift()!);
    }
  }

  #connect(first: Pending): void {
    const connection = new Connection(this.#url, this.#options, {
      idle: (free) => {
        if (this.#closed) {
          free.destroy();
          return;
        }
        this.#idle.push(free);
        this.#next();
      },
      gone: (dead) => {
        this.#connections.delete(dead);
        const at = this.#idle.indexOf(dead);
        if (at >= 0) this.#idle.splice(at, 1);
        if (!this.#closed) this.#next();
      },
    });
    this.#connections.add(connection);
    connection.connect(first);
  }
}

const PATH = /^\/[\x21-\x7e]*$/;
const HEADER_VALUE = /^[\x20-\x7e]*$/;

/** A controller for a handler told of a failure before its exchange began. */
const NO_CONTROLLER: ExchangeController = { abort: () => undefined };

interface ConnectionEvents {
  /** The connection finished an exchange and may carry another. */
  idle(connection: Connection): void;
  /** The connection is closed for good. */
  gone(connection: Connection): void;
}

const CRLF_CRLF = Buffer.from('\r\n\r\n', 'latin1');
/** The code of the error a connection's close makes: the end of an answer read until then. */
const CONNECTION_CLOSED = 'CONNECTION_CLOSED';

/** One socket, and the exchange it carries, if any. */
class Connection {
  #socket: net.Socket | undefined;
  #pending: Pending | undefined;
  #parser: ResponseParser | undefined;
  #connectTimer: NodeJS.Timeout | undefined;
  #gone = false;
  readonly #controller: ExchangeController = {
    abort: (reason) => this.#fail(reason, { tell: true }),
  };

  constructor(
    private readonly url: URL,
    private readonly options: KeepAliveClientOptions,
    private readonly events: ConnectionEvents,
  ) {}

  connect(first: Pending): void {
    this.#pending = first;
    const port = Number(this.url.port) || (this.url.protocol === 'https:' ? 443 : 80);
    const host = this.url.hostname.replace(/^\[|\]$/g, '');
    const socket =
      this.url.protocol === 'https:'
        ? tls.connect({
            host,
            port,
            servername: net.isIP(host) === 0 ? host : undefined,
            ALPNProtocols: ['http/1.1'],
          })
        : net.connect({ host, port });
    this.#socket = socket;
    socket.setNoDelay(true);
    this.#connectTimer = setTimeout(() => {
      this.#fail(
        new HttpClientError(
          `could not connect to ${this.url.host} within ${this.options.connectTimeoutMs} ms`,
          'CONNECT_TIMEOUT',
        ),
        { tell: true },
      );
    }, this.options.connectTimeoutMs);
    socket.once(this.url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      clearTimeout(this.#connectTimer);
      const pending = this.#pending;
      if (pending !== undefined) this.#write(pending);
    });
    socket.on('data', (data: Buffer) => this.#receive(data));
    // Armed only while the connection is idle (keepAliveMs): the exchange's time is the caller's.
    socket.on('timeout', () => this.destroy());
    socket.on('error', (error: Error) => this.#fail(error, { tell: true }));
    socket.on('close', () =>
      this.#fail(
        new HttpClientError('the connection closed before the answer ended', CONNECTION_CLOSED),
        { tell: true },
      ),
    );
  }

  /** Sends the next exchange on this idle, connected connection. */
  send(pending: Pending): void {
    this.#socket?.setTimeout(0);
    this.#socket?.ref();
    this.#pending = pending;
    this.#write(pending);
  }

  destroy(): void {
    this.#fail(new HttpClientError('the connection was dropped', 'CLIENT_CLOSED'), { tell: true });
  }

  /** Ends the connection with `reason` for an exchange in flight; resolves once it is closed. */
  end(reason: Error): Promise<void> {
    const socket = this.#socket;
    this.#fail(reason, { tell: true });
    if (socket === undefined || socket.closed) return Promise.resolve();
    return new Promise((resolve) => socket.once('close', () => resolve()));
  }

  #write(pending: Pending): void {
    const { request, handler } = pending;
    this.#parser = new ResponseParser(request.method === 'HEAD');
    handler.onRequestStart(this.#controller);
    // The handler may have ended the exchange as it started.
    if (this.#pending !== pending) return;
    const body = request.body === undefined ? undefined : Buffer.from(request.body, 'utf8');
    let head = `${request.method} ${request.path} HTTP/1.1\r\nhost: ${this.url.host}\r\n`;
    for (const name in request.headers) head += `${name}: ${request.headers[name]}\r\n`;
    if (body !== undefined) head += `content-length: ${body.length}\r\n`;
    head += '\r\n';
    this.#socket!.write(body === undefined ? head : Buffer.concat([Buffer.from(head), body]));
  }

  #receive(data: Buffer): void {
    const pending = this.#pending;
    const parser = this.#parser;
    if (pending === undefined || parser === undefined) {
      // Bytes nobody asked for: the connection cannot be trusted with another exchange.
      this.#fail(new HttpClientError('the service sent bytes between answers', 'UNEXPECTED_DATA'), {
        tell: false,
      });
      return;
    }
    let outcome: ParseOutcome;
    try {
      outcome = parser.push(data, pending.handler, this.#controller);
    } catch (error) {
      this.#fail(error instanceof Error ? error : new Error(String(error)), { tell: true });
      return;
    }
    // The handler may have aborted the exchange while it was told of a piece.
    if (this.#pending !== pending) return;
    if (outcome === 'more') return;
    this.#pending = undefined;
    this.#parser = undefined;
    // A server that says how long it keeps an idle connection (`Keep-Alive: timeout=5`, Node's
    // default) closes it then: a request sent on it a moment later would be lost with it, so the
    // connection is dropped a second before.
    const idleMs = Math.min(this.options.keepAliveMs, parser.keepAliveHintMs - 1_000);
    const reusable = outcome === 'done' && idleMs > 0 && !this.#gone;
    pending.handler.onResponseEnd();
    if (!reusable || this.#gone) {
      this.#close();
      return;
    }
    // An idle connection keeps no process alive.
    this.#socket!.setTimeout(idleMs);
    this.#socket!.unref();
    this.events.idle(this);
  }

  /**
   * Ends the connection for good; the exchange in flight, if any, is told of `error` when `tell`.
   * An answer read to its end by the connection's close ('until close' framing) ends well.
   */
  #fail(error: Error, { tell }: { tell: boolean }): void {
    const pending = this.#pending;
    const parser = this.#parser;
    this.#pending = undefined;
    this.#parser = undefined;
    if (pending !== undefined && tell) {
      if (
        parser?.endsAtClose() === true &&
        error instanceof HttpClientError &&
        error.code === CONNECTION_CLOSED
      ) {
        pending.handler.onResponseEnd();
      } else {
        pending.handler.onResponseError(this.#controller, error);
      }
    }
    this.#close();
  }

  #close(): void {
    if (this.#gone) return;
    this.#gone = true;
    clearTimeout(this.#connectTimer);
    this.#socket?.destroy();
    this.events.gone(this);
  }
}

/** How an answer's bytes so far stand: 'more' to come, 'done' (reusable) or 'close' (not). */
type ParseOutcome = 'more' | 'done' | 'close';

type BodyFraming =
  | { readonly kind: 'length'; remaining: number }
  | { readonly kind: 'chunked' }
  | { readonly kind: 'close' }
  | { readonly kind: 'none' };

/**
 * Reads one answer from the bytes a socket delivers, in whatever pieces: the head (status line
 * and headers), then the body framed by content-length, chunked transfer coding, or the
 * connection's close. Throws HttpClientError on an answer it cannot read.
 */
export class ResponseParser {
  #head: Buffer | undefined;
  #framing: BodyFraming | undefined;
  #keepAlive = true;
  #chunk: ChunkedBody | undefined;
  #informational = 0;
  /** How long the server keeps the connection idle, by its Keep-Alive header; Infinity if unsaid. */
  keepAliveHintMs = Number.POSITIVE_INFINITY;

  constructor(private readonly headRequest = false) {}

  /** The body runs until the connection closes, and its head has been read. */
  endsAtClose(): boolean {
    return this.#framing?.kind === 'close';
  }

  push(data: Buffer, handler: ResponseHandler, controller: ExchangeController): ParseOutcome {
    let rest: Buffer = data;
    while (this.#framing === undefined) {
      const head = this.#head === undefined ? rest : Buffer.concat([this.#head, rest]);
      const end = head.indexOf(CRLF_CRLF);
      if (end < 0) {
        if (head.length > HEAD_MAX_BYTES) throw tooLongHead();
        this.#head = head;
        return 'more';
      }
      if (end + 4 > HEAD_MAX_BYTES) throw tooLongHead();
      this.#head = undefined;
      rest = head.subarray(end + 4);
      const { status, headers, http10 } = parseHead(head.toString('latin1', 0, end));
      if (status < 200) {
        if (status === 101)
          throw new HttpClientError('the service switched protocols', 'BAD_ANSWER');
        if (++this.#informational > INFORMATIONAL_MAX) {
          throw new HttpClientError(
            `the service sent more than ${INFORMATIONAL_MAX} informational answers`,
            'BAD_ANSWER',
          );
        }
        handler.onResponseStart(controller, status, headers);
        continue;
      }
      this.#keepAlive = keepsAlive(headers.connection, http10);
      this.keepAliveHintMs = keepAliveHintMs(headers['keep-alive']);
      this.#framing = bodyFraming(status, headers, this.headRequest);
      handler.onResponseStart(controller, status, headers);
    }
    return this.#body(rest, handler, controller);
  }

  #body(data: Buffer, handler: ResponseHandler, controller: ExchangeController): ParseOutcome {
    const framing = this.#framing!;
    switch (framing.kind) {
      case 'none':
        return this.#finished(data.length === 0);
      case 'close':
        if (data.length > 0) handler.onResponseData(controller, data);
        return 'more';
      case 'length': {
        if (data.length === 0) return framing.remaining === 0 ? this.#finished(true) : 'more';
        const piece = data.length <= framing.remaining ? data : data.subarray(0, framing.remaining);
        framing.remaining -= piece.length;
        if (piece.length > 0) handler.onResponseData(controller, piece);
        if (framing.remaining > 0) return 'more';
        return this.#finished(piece.length === data.length);
      }
      case 'chunked': {
        this.#chunk ??= new ChunkedBody();
        const done = this.#chunk.push(data, (piece) => handler.onResponseData(controller, piece));
        if (done === undefined) return 'more';
        return this.#finished(done);
      }
    }
  }

  /** The answer ended; `clean` when no byte came after it. */
  #finished(clean: boolean): ParseOutcome {
    return clean && this.#keepAlive ? 'done' : 'close';
  }
}

function tooLongHead(): HttpClientError {
  return new HttpClientError(
    `the answer's status line and headers pass ${HEAD_MAX_BYTES} bytes`,
    'BAD_ANSWER',
  );
}

const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The status line and header lines of an answer, without the blank line that ends them. */
function parseHead(text: string): {
  status: number;
  headers: Record<string, string | string[]>;
  http10: boolean;
} {
  const lines = text.split('\r\n');
  const statusLine = STATUS_LINE.exec(lines[0]!);
  if (statusLine === null) {
    throw new HttpClientError(
      'the answer does not start with an HTTP/1.x status line',
      'BAD_ANSWER',
    );
  }
  const headers: Record<string, string | string[]> = Object.create(null) as Record<
    string,
    string | string[]
  >;
  for (let index = 1; index < lines.length; index++) {
    const line = lines[index]!;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!HEADER_NAME.test(name)) {
      throw new HttpClientError(`the answer has a header line that is not one`, 'BAD_ANSWER');
    }
    const key = name.toLowerCase();
    const value = line.slice(colon + 1).trim();
    const given = headers[key];
    if (given === undefined) headers[key] = value;
    else if (Array.isArray(given)) given.push(value);
    else headers[key] = [given, value];
  }
  return { status: Number(statusLine[2]), headers, http10: statusLine[1] === '0' };
}

/** The idle time a `Keep-Alive: timeout=N` header gives, in ms; Infinity without one. */
function keepAliveHintMs(header: string | string[] | undefined): number {
  const timeout = /(?:^|[,\s])timeout=(\d{1,6})(?:$|[,\s])/i.exec([header ?? []].flat().join(','));
  return timeout === null ? Number.POSITIVE_INFINITY : Number(timeout[1]) * 1_000;
}

/** The comma-separated tokens of a header given once or more, trimmed and in lower case. */
function headerTokens(header: string | string[] | undefined): string[] {
  return [header ?? []]
    .flat()
    .flatMap((value) => value.split(','))
    .map((token) => token.trim().toLowerCase());
}

function keepsAlive(connection: string | string[] | undefined, http10: boolean): boolean {
  const tokens = headerTokens(connection);
  if (tokens.includes('close')) return false;
  return !http10 || tokens.includes('keep-alive');
}

function bodyFraming(
  status: number,
  headers: Record<string, string | string[]>,
  headRequest: boolean,
): BodyFraming {
  if (headRequest || status === 204 || status === 304) return { kind: 'none' };
  const coding = headers['transfer-encoding'];
  if (coding !== undefined) {
    const codings = headerTokens(coding);
    if (codings.length !== 1 || codings[0] !== 'chunked') {
      throw new HttpClientError(
        `the answer's transfer coding "${[coding].flat().join(', ')}" is not chunked`,
        'BAD_ANSWER',
      );
    }
    return { kind: 'chunked' };
  }
  const length = headers['content-length'];
  if (length !== undefined) {
    const values = [...new Set(headerTokens(length))];
    if (values.length !== 1 || !/^\d{1,15}$/.test(values[0]!)) {
      throw new HttpClientError('the answer has an unreadable content-length', 'BAD_ANSWER');
    }
    return { kind: 'length', remaining: Number(values[0]) };
  }
  return { kind: 'close' };
}

/**
 * The chunked transfer coding's decoder: sizes, data, CRLFs and trailers, in any pieces. The
 * framing (size lines, extensions, trailers) may be at most HEAD_MAX_BYTES more than the data it
 * frames, so that an answer of endless tiny chunks or trailers is refused, not read until the
 * exchange times out.
 */
class ChunkedBody {
  /** 'size': reading a size line; 'data': `remaining` bytes of data; 'crlf': after the data. */
  #state: 'size' | 'data' | 'crlf' | 'trailer' = 'size';
  #line = '';
  #remaining = 0;
  #dataBytes = 0;
  #framingBytes = 0;

  /** Passes each piece of data to `emit`; undefined while more is to come, else whether clean. */
  push(data: Buffer, emit: (piece: Buffer) => void): boolean | undefined {
    let at = 0;
    while (at < data.length) {
      switch (this.#state) {
        case 'data': {
          const end = Math.min(data.length, at + this.#remaining);
          emit(data.subarray(at, end));
          this.#dataBytes += end - at;
          this.#remaining -= end - at;
          at = end;
          if (this.#remaining === 0) this.#state = 'crlf';
          break;
        }
        case 'size':
        case 'crlf':
        case 'trailer': {
          const newline = data.indexOf(0x0a, at);
          const end = newline < 0 ? data.length : newline;
          this.#line += data.toString('latin1', at, end);
          this.#framingBytes += end - at + 1;
          if (this.#line.length > CHUNK_LINE_MAX_BYTES) {
            throw new HttpClientError('a chunk-size line of the answer is too long', 'BAD_ANSWER');
          }
          if (this.#framingBytes > HEAD_MAX_BYTES + this.#dataBytes) {
            throw new HttpClientError(
              "the answer's chunked framing is far larger than its data",
              'BAD_ANSWER',
            );
          }
          if (newline < 0) return undefined;
          at = newline + 1;
          const line = this.#line.endsWith('\r') ? this.#line.slice(0, -1) : this.#line;
          this.#line = '';
          const finished = this.#lineRead(line);
          if (finished) return at === data.length;
          break;
        }
      }
    }
    return undefined;
  }

  /** Takes one line of the framing; true when it ends the body. */
  #lineRead(line: string): boolean {
    switch (this.#state) {
      case 'crlf':
        if (line !== '') throw badChunk();
        this.#state = 'size';
        return false;
      case 'trailer':
        return line === '';
      default: {
        const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(line);
        if (size === null) throw badChunk();
        this.#remaining = Number.parseInt(size[1]!, 16);
        this.#state = this.#remaining === 0 ? 'trailer' : 'data';
        return false;
      }
    }
  }
}

function badChunk(): HttpClientError {
  return new HttpClientError('the answer is not valid chunked transfer coding', 'BAD_ANSWER');
}

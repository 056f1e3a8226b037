import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { coerceError, describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import type { HttpAnswer, HttpRoute } from './http-route.js';

export interface HttpServerOptions {
  readonly host: string;
  /** 0 picks a free port (tests); the command treats TELESYNC_HTTP_PORT=0 as "no server". */
  readonly port: number;
  /** What the server answers; any other method or path is 404. */
  readonly routes: readonly HttpRoute[];
  readonly log: Logger;
  /** Default HTTP_SERVER_LIMITS. */
  readonly limits?: HttpServerLimits;
}

/** What one client can hold of the server: time to send a request, connections at once. */
export interface HttpServerLimits {
  /** Time to receive a request's headers (slow-loris senders are cut off). */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request, body included. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** Connections open at once; more are refused until some close. */
  readonly maxConnections: number;
}

/**
 * Generous for a scraper, a probe or the service's callbacks (a few hundred bytes each), short
 * enough that a client cannot hold the server's connections or memory for long.
 */
export const HTTP_SERVER_LIMITS: HttpServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 256,
};

export interface RunningHttpServer {
  /** e.g. http://127.0.0.1:9464 */
  readonly url: string;
  readonly port: number;
  /**
   * Where the stream callbacks are served when a listener of their own serves them (its base URL,
   * e.g. http://0.0.0.0:9465); undefined when this server serves them, if any.
   */
  readonly callbacksUrl?: string;
  /** Stops listening and closes open connections (keep-alive ones included). */
  close(): Promise<void>;
}

/**
 * Serves `routes` on `host:port`; anything else is 404, listing the endpoints. Rejects with the
 * listen error (EADDRINUSE, EACCES) as is.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const limits = options.limits ?? HTTP_SERVER_LIMITS;
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // How often the two timeouts above are checked (Node's default, 30 s, would let a slow
      // client hold its connection that much longer).
      connectionsCheckingInterval: Math.min(1000, Math.ceil(limits.headersTimeoutMs / 2)),
    },
    (request, response) => {
      void serve(options, request, response);
    },
  );
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => options.log.error({ err: error }, 'HTTP server error'));
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return { url: `http://${host}:${port}`, port, close: () => closeServer(server) };
}

async function serve(
  options: HttpServerOptions,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const path = (request.url ?? '/').split('?')[0];
  // HEAD is GET without the body (HTTP semantics): probes such as `curl -I /healthz` rely on it.
  const head = request.method === 'HEAD';
  const method = head ? 'GET' : request.method;
  const route = options.routes.find(
    (candidate) => candidate.method === method && candidate.path === path,
  );
  try {
    send(
      response,
      route === undefined ? notFound(options.routes) : await route.answer(request),
      head,
    );
  } catch (error) {
    options.log.error({ err: coerceError(error), path }, `${path}: ${describeError(error)}`);
    // The cause stays in the log: its text may name tables, hosts or queries.
    send(response, {
      status: 500,
      contentType: 'application/json',
      body: `${JSON.stringify({ error: 'internal error', message: 'see the server log' })}\n`,
    });
  }
}

function notFound(routes: readonly HttpRoute[]): HttpAnswer {
  const endpoints = routes.map((route) => `${route.method} ${route.path}`);
  return {
    status: 404,
    contentType: 'application/json',
    body: `${JSON.stringify({ error: 'not found', endpoints })}\n`,
  };
}

function send(response: ServerResponse, answer: HttpAnswer, head = false): void {
  if (response.headersSent) return;
  response.writeHead(answer.status, {
    'content-type': answer.contentType,
    'content-length': Buffer.byteLength(answer.body),
    // Health and metrics are about now; a cached answer is a wrong one.
    'cache-control': 'no-store',
  });
  response.end(head ? undefined : answer.body);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // A scraper's keep-alive connection would otherwise hold close() open until it times out.
    server.closeAllConnections();
  });
}

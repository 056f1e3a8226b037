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
}

export interface RunningHttpServer {
  /** e.g. http://127.0.0.1:9464 */
  readonly url: string;
  readonly port: number;
  /** Stops listening and closes open connections (keep-alive ones included). */
  close(): Promise<void>;
}

/**
 * Serves `routes` on `host:port`; anything else is 404, listing the endpoints. Rejects with the
 * listen error (EADDRINUSE, EACCES) as is.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server = createServer((request, response) => {
    void serve(options, request, response);
  });
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
    send(response, {
      status: 500,
      contentType: 'application/json',
      body: `${JSON.stringify({ error: describeError(error) })}\n`,
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

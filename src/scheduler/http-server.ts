import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { coerceError, describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import type { HealthReport } from './health.js';

/** What the two endpoints answer with; the server itself only routes and writes. */
export interface HttpRoutes {
  /** GET /healthz: 200 when `healthy`, 503 otherwise, the report as JSON. */
  healthz(): Promise<HealthReport>;
  /** GET /metrics: the Prometheus text exposition. */
  metrics(): Promise<{ contentType: string; body: string }>;
}

export interface HttpServerOptions {
  readonly host: string;
  /** 0 picks a free port (tests); the command treats TELESYNC_HTTP_PORT=0 as "no server". */
  readonly port: number;
  readonly routes: HttpRoutes;
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
 * Serves GET /healthz and GET /metrics on `host:port`; anything else is 404. Rejects with the
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
  try {
    if (request.method === 'GET' && path === '/healthz') {
      const report = await options.routes.healthz();
      send(response, report.healthy ? 200 : 503, 'application/json', `${JSON.stringify(report)}\n`);
    } else if (request.method === 'GET' && path === '/metrics') {
      const { contentType, body } = await options.routes.metrics();
      send(response, 200, contentType, body);
    } else {
      send(
        response,
        404,
        'application/json',
        `${JSON.stringify({ error: 'not found', endpoints: ['GET /healthz', 'GET /metrics'] })}\n`,
      );
    }
  } catch (error) {
    options.log.error({ err: coerceError(error), path }, `${path}: ${describeError(error)}`);
    send(response, 500, 'application/json', `${JSON.stringify({ error: describeError(error) })}\n`);
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  if (response.headersSent) return;
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    // Health and metrics are about now; a cached answer is a wrong one.
    'cache-control': 'no-store',
  });
  response.end(body);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // A scraper's keep-alive connection would otherwise hold close() open until it times out.
    server.closeAllConnections();
  });
}

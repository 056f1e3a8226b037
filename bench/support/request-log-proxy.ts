import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A transparent HTTP proxy between telesync and the simulator that writes down every request and
 * what the service answered about it (status, total_count, records on the page). The incremental
 * benchmark reads the wire, not telesync's own counters, to tell which window each request went to.
 */

export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly status: number;
  /** meta.total_count of a list answer. */
  readonly totalCount: number | undefined;
  /** Records on the page. */
  readonly objects: number | undefined;
}

export class RequestLogProxy {
  private constructor(
    readonly log: LoggedRequest[],
    private readonly server: Server,
    private readonly agent: Agent,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<RequestLogProxy> {
    const upstream = new URL(target);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const log: LoggedRequest[] = [];
    const server = createServer((incoming, outgoing) => {
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
          agent,
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            const body = Buffer.concat(chunks);
            const url = new URL(incoming.url ?? '/', 'http://proxy.invalid');
            let totalCount: number | undefined;
            let objects: number | undefined;
            try {
              const parsed = JSON.parse(body.toString('utf8')) as {
                meta?: { total_count?: number };
                objects?: unknown[];
              };
              totalCount = parsed.meta?.total_count;
              objects = parsed.objects?.length;
            } catch {
              // Not JSON: logged without counts.
            }
            if (!url.pathname.startsWith('/__admin')) {
              log.push({
                method: incoming.method ?? 'GET',
                path: url.pathname,
                query: Object.fromEntries(url.searchParams),
                status: answer.statusCode ?? 0,
                totalCount,
                objects,
              });
            }
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            outgoing.end(body);
          });
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      incoming.pipe(forwarded);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    return new RequestLogProxy(log, server, agent, `http://127.0.0.1:${port}`);
  }

  /** Empties the log and returns what it held. */
  take(): LoggedRequest[] {
    return this.log.splice(0, this.log.length);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    this.agent.destroy();
  }
}

import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createHealthzRoute } from '../../src/http/healthz-route.js';
import { startHttpServer } from '../../src/http/http-server.js';
import { createLogger } from '../../src/util/logger.js';

/**
 * The server's limit on the connections a client can hold at once.
 */

function status(url: string): Promise<number> {
  return fetch(`${url}/healthz`).then((response) => response.status);
}

describe("the HTTP server's limits", () => {
  it('holds at most maxConnections at once, and serves again once they close', async () => {
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      routes: [createHealthzRoute(() => Promise.resolve({ healthy: true, streams: [] }))],
      log: createLogger({ level: 'silent', secrets: [], pretty: false }),
      limits: {
        headersTimeoutMs: 300,
        requestTimeoutMs: 300,
        keepAliveTimeoutMs: 300,
        maxConnections: 2,
      },
    });
    const { port } = server;
    const sockets: Socket[] = [];
    /** A connection that sends nothing; resolves with how long until the server closed it. */
    const open = (): Promise<number> => {
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      const started = Date.now();
      socket.on('error', () => {});
      return new Promise((done) => socket.on('close', () => done(Date.now() - started)));
    };
    try {
      const held = [open(), open()];
      await new Promise((resolve) => setTimeout(resolve, 200));
      // A third connection beyond the cap is closed at once.
      expect(await open()).toBeLessThan(1_000);
      for (const socket of sockets) socket.destroy();
      await Promise.all(held);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await status(server.url)).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('the HTTP server, to a client that sends its headers too slowly', () => {
  it('answers 408 and closes the connection once the headers timeout has passed', async () => {
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      routes: [createHealthzRoute(() => Promise.resolve({ healthy: true, streams: [] }))],
      log: createLogger({ level: 'silent', secrets: [], pretty: false }),
      limits: {
        headersTimeoutMs: 300,
        requestTimeoutMs: 300,
        keepAliveTimeoutMs: 300,
        maxConnections: 10,
      },
    });
    try {
      const socket = connect(server.port, '127.0.0.1', () => {
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      });
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      socket.on('error', () => {});
      const started = Date.now();
      const closedAfterMs = await new Promise<number>((done) =>
        socket.on('close', () => done(Date.now() - started)),
      );
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(closedAfterMs).toBeLessThan(5_000);
    } finally {
      await server.close();
    }
  });
});

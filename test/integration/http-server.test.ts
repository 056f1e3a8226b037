import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createHealthzRoute } from '../../src/http/healthz-route.js';
import { startHttpServer } from '../../src/http/http-server.js';
import { createLogger } from '../../src/util/logger.js';

function send(
  url: string,
  method: string,
): Promise<{ status: number; length: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/healthz`, { method, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          length: String(response.headers['content-length']),
          body,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the HTTP server', () => {
  it('answers HEAD /healthz like GET, without the body', async () => {
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      routes: [createHealthzRoute(() => Promise.resolve({ healthy: false, streams: [] }))],
      log: createLogger({ level: 'silent', secrets: [], pretty: false }),
    });
    try {
      const get = await send(server.url, 'GET');
      const head = await send(server.url, 'HEAD');
      expect(get.status).toBe(503);
      expect(get.body).toBe('{"healthy":false,"streams":[]}\n');
      expect(head).toEqual({ status: 503, length: get.length, body: '' });
    } finally {
      await server.close();
    }
  });

  it('answers a failing route 500 with a body that names nothing of the error, which is logged', async () => {
    const lines: string[] = [];
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      routes: [
        {
          method: 'GET',
          path: '/healthz',
          answer: () =>
            Promise.reject(
              new Error('relation "telephony.sync_runs" does not exist at db.internal'),
            ),
        },
      ],
      log: createLogger({
        level: 'error',
        secrets: [],
        pretty: false,
        write: (line) => lines.push(line),
      }),
    });
    try {
      const answer = await send(server.url, 'GET');
      expect(answer.status).toBe(500);
      expect(JSON.parse(answer.body)).toEqual({
        error: 'internal error',
        message: 'see the server log',
      });
      expect(lines.join('\n')).toContain('sync_runs');
    } finally {
      await server.close();
    }
  });
});

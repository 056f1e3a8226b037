import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  KeepAliveClient,
  type ClientRequest,
  type ResponseHandler,
} from '../../src/api/keep-alive-client.js';

/**
 * KeepAliveClient against a raw TCP server that answers each request with whatever bytes a test
 * gives it, so that connections, framing and hostile answers are what the client really meets.
 */

interface RawServer {
  readonly origin: string;
  /** Connections accepted so far. */
  readonly connections: () => number;
  /** Request heads received so far, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

/** Answers the n-th request (from 0) on any connection with `answer(n, socket)`. */
async function rawServer(answer: (n: number, socket: net.Socket) => void): Promise<RawServer> {
  let accepted = 0;
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (data) => {
      buffered += data.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        requests.push(buffered.slice(0, end + 4 + length));
        buffered = buffered.slice(end + 4 + length);
        answer(requests.length - 1, socket);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Outcome {
  readonly started: boolean;
  readonly status?: number;
  readonly body?: string;
  readonly error?: Error;
}

/** Sends `request` and settles with what the handler was told. */
function send(client: KeepAliveClient, request: Partial<ClientRequest> = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    let started = false;
    let status: number | undefined;
    const pieces: Buffer[] = [];
    const handler: ResponseHandler = {
      onRequestStart: () => (started = true),
      onResponseStart: (_controller, code) => {
        if (code >= 200) status = code;
      },
      onResponseData: (_controller, chunk) => pieces.push(Buffer.from(chunk)),
      onResponseEnd: () =>
        resolve({ started, status, body: Buffer.concat(pieces).toString('utf8') }),
      onResponseError: (_controller, error) => resolve({ started, status, error }),
    };
    client.dispatch(
      { method: 'GET', path: '/v1/x', headers: { accept: 'application/json' }, ...request },
      handler,
    );
  });
}

const ok = (body: string, extra = ''): string =>
  `HTTP/1.1 200 OK\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

const servers: RawServer[] = [];
const clients: KeepAliveClient[] = [];

async function setUp(
  answer: (n: number, socket: net.Socket) => void,
  connections = 2,
): Promise<{ server: RawServer; client: KeepAliveClient }> {
  const server = await rawServer(answer);
  const client = new KeepAliveClient(server.origin, {
    connections,
    connectTimeoutMs: 2_000,
    keepAliveMs: 5_000,
  });
  servers.push(server);
  clients.push(client);
  return { server, client };
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe('KeepAliveClient', () => {
  it('sends the method, path, host and headers, and reuses one connection for requests in turn', async () => {
    const { server, client } = await setUp((n, socket) => socket.write(ok(`answer ${n}`)));
    for (let n = 0; n < 5; n++) {
      expect(await send(client)).toEqual({ started: true, status: 200, body: `answer ${n}` });
    }
    expect(server.connections()).toBe(1);
    const host = new URL(server.origin).host;
    expect(server.requests[0]).toBe(
      `GET /v1/x HTTP/1.1\r\nhost: ${host}\r\naccept: application/json\r\n\r\n`,
    );
  });

  it('sends a body with its length', async () => {
    const { server, client } = await setUp((_n, socket) => socket.write(ok('{}')));
    await send(client, { method: 'POST', body: '{"a":"é"}' });
    // The server keeps what it received as latin1: the body's UTF-8 bytes, one character each.
    const body = Buffer.from('{"a":"é"}', 'utf8');
    expect(
      server.requests[0]!.endsWith(`content-length: 10\r\n\r\n${body.toString('latin1')}`),
    ).toBe(true);
  });

  it('opens no more connections than it is given, and queues the rest', async () => {
    const { server, client } = await setUp(
      (n, socket) => setTimeout(() => socket.write(ok(`answer ${n}`)), 20),
      3,
    );
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => send(client)));
    expect(outcomes.every((outcome) => outcome.status === 200)).toBe(true);
    expect(new Set(outcomes.map((outcome) => outcome.body)).size).toBe(12);
    expect(server.connections()).toBe(3);
  });

  it('opens a new connection after an answer that says close, or one read until the close', async () => {
    const { server, client } = await setUp((n, socket) => {
      if (n === 0) socket.write(ok('first', 'Connection: close\r\n'));
      else if (n === 1) socket.end('HTTP/1.1 200 OK\r\n\r\nread until the close');
      else socket.write(ok('third'));
    });
    expect((await send(client)).body).toBe('first');
    expect((await send(client)).body).toBe('read until the close');
    expect((await send(client)).body).toBe('third');
    expect(server.connections()).toBe(3);
  });

  it("drops an idle connection a second before the server's Keep-Alive timeout says it would", async () => {
    const { server, client } = await setUp((n, socket) =>
      socket.write(
        ok(
          `answer ${n}`,
          n < 2 ? 'Keep-Alive: timeout=1\r\n' : 'Keep-Alive: timeout=3, max=100\r\n',
        ),
      ),
    );
    // timeout=1: no time left to reuse it, so each of the first two answers ends its connection.
    expect((await send(client)).body).toBe('answer 0');
    expect((await send(client)).body).toBe('answer 1');
    expect((await send(client)).body).toBe('answer 2');
    expect(server.connections()).toBe(3);
    // timeout=3: kept for two seconds, so the next request takes it at once.
    expect((await send(client)).body).toBe('answer 3');
    expect(server.connections()).toBe(3);
  });

  it('fails an exchange whose connection closes mid-body, and the next one goes through', async () => {
    const { client } = await setUp((n, socket) => {
      if (n === 0) socket.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ntruncated');
      else socket.write(ok('whole'));
    });
    const broken = await send(client);
    expect(broken.started).toBe(true);
    expect(broken.error?.message).toMatch(/closed before the answer ended/);
    expect((await send(client)).body).toBe('whole');
  });

  it('fails an answer it cannot read, and drops its connection', async () => {
    const { server, client } = await setUp((n, socket) => {
      if (n === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n');
      else socket.write(ok('next'));
    });
    expect((await send(client)).error?.message).toMatch(/unreadable content-length/);
    expect((await send(client)).body).toBe('next');
    expect(server.connections()).toBe(2);
  });

  it('tells a refused connection as an error before the request started', async () => {
    const { server, client } = await setUp(() => undefined);
    await server.close();
    servers.splice(0);
    const outcome = await send(client);
    expect(outcome.started).toBe(false);
    expect(outcome.error).toBeInstanceOf(Error);
  });

  it('drops the connection when the handler aborts, and tells nothing more', async () => {
    const { server, client } = await setUp((n, socket) =>
      socket.write(n === 0 ? 'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npart' : ok('next')),
    );
    const told: string[] = [];
    await new Promise<void>((resolve) => {
      client.dispatch(
        { method: 'GET', path: '/v1/x', headers: {} },
        {
          onRequestStart: () => told.push('start'),
          onResponseStart: () => told.push('head'),
          onResponseData: (controller) => {
            told.push('data');
            controller.abort(new Error('enough'));
            resolve();
          },
          onResponseEnd: () => told.push('end'),
          onResponseError: () => told.push('error'),
        },
      );
    });
    expect((await send(client)).body).toBe('next');
    expect(told).toEqual(['start', 'head', 'data', 'error']);
    expect(server.connections()).toBe(2);
  });

  it('refuses a path or header value that would change what is sent, sending nothing', async () => {
    const { server, client } = await setUp((_n, socket) => socket.write(ok('')));
    await expect(send(client, { path: '/v1/x HTTP/1.1\r\nx-injected: 1' })).rejects.toThrow(/path/);
    await expect(send(client, { path: '/v1/é' })).rejects.toThrow(/path/);
    await expect(send(client, { headers: { accept: 'a\r\nx-injected: 1' } })).rejects.toThrow(
      /header/,
    );
    expect(server.connections()).toBe(0);
  });

  it('fails what is waiting or in flight when closed', async () => {
    const { client } = await setUp(() => undefined, 1);
    const inFlight = send(client);
    const waiting = send(client);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await client.close();
    expect((await inFlight).error).toBeInstanceOf(Error);
    expect((await waiting).error?.message).toMatch(/closed/);
  });
});

describe('KeepAliveClient over TLS', () => {
  /** A self-signed certificate for localhost, made for the test by openssl. */
  async function certificate(): Promise<{ dir: string; cert: string; key: string }> {
    const dir = await mkdtemp(join(tmpdir(), 'telesync-tls-'));
    const keyPath = join(dir, 'key.pem');
    const certPath = join(dir, 'cert.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ]);
    return { dir, cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
  }

  async function tlsServer(
    credentials: { cert: string; key: string },
    received: string[],
  ): Promise<{ port: number; close: () => Promise<void> }> {
    const server = tls.createServer(credentials, (socket) => {
      socket.on('data', (data: Buffer) => {
        received.push(data.toString('latin1'));
        socket.write(ok('over tls'));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as net.AddressInfo).port,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  it('refuses a server whose certificate it cannot verify, sending nothing', async () => {
    const { dir, ...credentials } = await certificate();
    const received: string[] = [];
    const server = await tlsServer(credentials, received);
    const client = new KeepAliveClient(`https://localhost:${server.port}`, {
      connections: 1,
      connectTimeoutMs: 5_000,
      keepAliveMs: 5_000,
    });
    clients.push(client);
    const outcome = await send(client, { headers: { authorization: 'Basic c2VjcmV0' } });
    expect(outcome.started).toBe(false);
    expect(outcome.error?.message).toMatch(/self-signed certificate/);
    expect(received).toEqual([]);
    await server.close();
    await rm(dir, { recursive: true });
  });

  it('reads an answer over TLS from a server it trusts (NODE_EXTRA_CA_CERTS)', async () => {
    const { dir, ...credentials } = await certificate();
    const received: string[] = [];
    const server = await tlsServer(credentials, received);
    const module = fileURLToPath(new URL('../../src/api/keep-alive-client.ts', import.meta.url));
    // A process of its own: Node reads NODE_EXTRA_CA_CERTS only as it starts.
    const script = `
      const { KeepAliveClient } = await import(${JSON.stringify(module)});
      const client = new KeepAliveClient('https://localhost:${server.port}', { connections: 1, connectTimeoutMs: 5000, keepAliveMs: 5000 });
      const pieces = [];
      client.dispatch({ method: 'GET', path: '/v1/x', headers: {} }, {
        onRequestStart() {}, onResponseStart() {},
        onResponseData(_c, chunk) { pieces.push(Buffer.from(chunk)); },
        onResponseEnd() { process.stdout.write(Buffer.concat(pieces)); client.close(); },
        onResponseError(_c, error) { console.error(error.message); process.exitCode = 1; client.close(); },
      });`;
    const output = await run(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
    );
    expect(output).toBe('over tls');
    expect(received[0]).toMatch(/^GET \/v1\/x HTTP\/1\.1\r\nhost: localhost:\d+\r\n\r\n$/);
    await server.close();
    await rm(dir, { recursive: true });
  });
});

/** Runs a command to its end; its standard output, or a rejection with its standard error. */
function run(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env, timeout: 30_000 }, (error, stdout, stderr) =>
      error === null
        ? resolve(stdout)
        : reject(new Error(`${command}: ${stderr || error.message}`)),
    );
  });
}

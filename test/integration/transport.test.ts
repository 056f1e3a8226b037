import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/api-errors.js';
import { parseListBody } from '../../src/api/received-json.js';
import { RequestMeter } from '../../src/api/request-meter.js';
import { HttpTransport, type RetryEvent, type TransportOptions } from '../../src/api/transport.js';

const TOKEN = 'tok_9f8e7d6c5b4a39281706';
const AUTH_ID = 'MA_TEST_ACCOUNT';

type Reply = (req: IncomingMessage, res: ServerResponse) => void;

interface Arrival {
  atMs: number;
  url: string;
  authorization: string | undefined;
  userAgent: string | undefined;
}

/** A local server that answers each request with the next reply of a script (the last repeats). */
async function scriptedServer(
  script: Reply[],
): Promise<{ url: string; arrivals: Arrival[]; server: Server }> {
  const arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    arrivals.push({
      atMs: performance.now(),
      url: req.url ?? '',
      authorization: req.headers.authorization,
      userAgent: req.headers['user-agent'],
    });
    const reply = script[Math.min(arrivals.length - 1, script.length - 1)]!;
    req.resume();
    req.on('end', () => reply(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, arrivals, server };
}

const servers: Server[] = [];
const transports: HttpTransport[] = [];
afterEach(async () => {
  await Promise.all(transports.splice(0).map((transport) => transport.close()));
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

function transportFor(url: string, overrides: Partial<TransportOptions> = {}): HttpTransport {
  const transport = new HttpTransport({
    baseUrl: url,
    authId: AUTH_ID,
    authToken: TOKEN,
    maxRps: 1000,
    concurrency: 4,
    timeoutMs: 2_000,
    maxRetries: 3,
    backoff: { baseDelayMs: 20, maxDelayMs: 200 },
    random: () => 0,
    ...overrides,
  });
  transports.push(transport);
  return transport;
}

const EMPTY_LIST = JSON.stringify({
  api_id: 'list-1',
  meta: { limit: 20, offset: 0, next: null, previous: null, total_count: 0 },
  objects: [],
});

const ok: Reply = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(EMPTY_LIST);
};
const status =
  (code: number, body: object, headers: Record<string, string> = {}): Reply =>
  (_req, res) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
const reset: Reply = (req) => req.socket.destroy();
const stall: Reply = () => {
  // Never answers: the client's timeout must end the exchange.
};
const truncated: Reply = (_req, res) => {
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': String(EMPTY_LIST.length),
  });
  res.write(EMPTY_LIST.slice(0, 30));
  setTimeout(() => res.socket?.destroy(), 5);
};
const garbage: Reply = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"api_id": "x", "meta": ');
};

const listPath = `/v1/Account/${AUTH_ID}/Endpoint/`;
const get = (transport: HttpTransport, meter?: RequestMeter, events?: RetryEvent[]) => {
  void events;
  return transport.request(
    { method: 'GET', path: listPath },
    parseListBody,
    meter ? { meter } : {},
  );
};

function allText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error) {
    parts.push(current.message, current.stack ?? '', JSON.stringify(current));
    current = current.cause;
  }
  return parts.join('\n');
}

describe('HttpTransport', () => {
  it('sends Basic auth and a User-Agent naming telesync, and reads the body', async () => {
    const { url, arrivals } = await scriptedServer([ok]);
    const page = await get(transportFor(url));
    expect(page.meta.total_count).toBe(0);
    expect(arrivals[0]?.authorization).toBe(
      `Basic ${Buffer.from(`${AUTH_ID}:${TOKEN}`).toString('base64')}`,
    );
    expect(arrivals[0]?.userAgent).toMatch(/^telesync\/\d+\.\d+\.\d+ /);
    expect(arrivals[0]?.url).toBe(listPath);
  });

  it('retries a 503 with exponential backoff and counts requests, retries and waits', async () => {
    const { url, arrivals } = await scriptedServer([
      status(503, { error: 'busy' }),
      status(502, {}),
      ok,
    ]);
    const meter = new RequestMeter();
    const page = await get(transportFor(url), meter);
    expect(page.records).toEqual([]);
    expect(arrivals).toHaveLength(3);
    // random() = 0 gives half of each exponential step: 20/2 then 40/2.
    expect(meter.snapshot()).toMatchObject({
      requests: 3,
      retries: 2,
      waitMs: 10 + 20,
      outcomes: { '503': 1, '502': 1, '200': 1 },
    });
    expect(arrivals[2]!.atMs - arrivals[1]!.atMs).toBeGreaterThanOrEqual(19);
  });

  it('honours Retry-After on a 429 as a floor for the wait', async () => {
    const { url, arrivals } = await scriptedServer([
      status(429, { error: 'slow down' }, { 'retry-after': '1' }),
      ok,
    ]);
    const meter = new RequestMeter();
    await get(transportFor(url), meter);
    expect(arrivals).toHaveLength(2);
    expect(meter.waitMs).toBe(1000);
    expect(arrivals[1]!.atMs - arrivals[0]!.atMs).toBeGreaterThanOrEqual(990);
  });

  it('pauses every request of the transport while a Retry-After runs, not just the one that got it', async () => {
    const { url, arrivals } = await scriptedServer([
      status(429, { error: 'slow down' }, { 'retry-after': '1' }),
      ok,
    ]);
    const transport = transportFor(url, { concurrency: 1 });
    const first = get(transport);
    // Queued behind the first: it must not reach the server until the pause is over.
    const second = get(transport);
    await Promise.all([first, second]);
    expect(arrivals).toHaveLength(3);
    expect(arrivals[1]!.atMs - arrivals[0]!.atMs).toBeGreaterThanOrEqual(990);
    expect(arrivals[2]!.atMs - arrivals[0]!.atMs).toBeGreaterThanOrEqual(990);
  });

  it('retries connection resets and truncated bodies', async () => {
    const { url, arrivals } = await scriptedServer([reset, truncated, ok]);
    const meter = new RequestMeter();
    await get(transportFor(url), meter);
    expect(arrivals).toHaveLength(3);
    expect(meter.snapshot().outcomes).toMatchObject({ network: 2, '200': 1 });
  });

  it('times out a stalled exchange, retries it, and gives up after maxRetries with a timeout error', async () => {
    const { url, arrivals } = await scriptedServer([stall]);
    const error = await get(transportFor(url, { timeoutMs: 150, maxRetries: 2 })).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ kind: 'timeout', retryable: true, attempts: 3 });
    expect((error as ApiError).message).toMatch(
      /after 3 attempts: no complete answer within the request timeout/,
    );
    expect(arrivals).toHaveLength(3);
  });

  it('retries a body that is not a valid response, then reports it as malformed', async () => {
    const { url, arrivals } = await scriptedServer([garbage]);
    const error = await get(transportFor(url, { maxRetries: 1 })).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ kind: 'malformed', attempts: 2 });
    expect(arrivals).toHaveLength(2);
  });

  it.each([
    [400, 'end_time range exceeds 30 days'],
    [401, 'authentication failed'],
    [404, 'not found'],
    [405, 'method not allowed'],
  ])('does not retry a %i, and reports the service message and api_id', async (code, message) => {
    const { url, arrivals } = await scriptedServer([
      status(code, { api_id: 'err-123', error: message }),
    ]);
    const error = await get(transportFor(url)).catch((caught: unknown) => caught);
    expect(arrivals).toHaveLength(1);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      kind: 'http',
      status: code,
      retryable: false,
      apiId: 'err-123',
      serviceMessage: message,
    });
    expect((error as ApiError).message).toContain(`GET ${listPath} failed: ${code}`);
    expect((error as ApiError).message).toContain('[api_id err-123]');
  });

  it('never puts the auth token in an error or a retry event, even when the service echoes it', async () => {
    const echo =
      (code: number): Reply =>
      (req, res) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: `careless proxy echoes ${req.headers.authorization ?? ''} and ${TOKEN}`,
          }),
        );
      };
    const { url } = await scriptedServer([echo(500), echo(401)]);
    const events: RetryEvent[] = [];
    const error = await get(transportFor(url, { onRetry: (event) => events.push(event) })).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ status: 401 });
    expect(events).toHaveLength(1);
    const texts = [
      allText(error),
      ...events.map(
        (event) => `${JSON.stringify({ ...event, error: undefined })}\n${allText(event.error)}`,
      ),
    ];
    for (const text of texts) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(Buffer.from(`${AUTH_ID}:${TOKEN}`).toString('base64'));
    }
  });

  it('keeps the token out of an error even when the token is passed as an identifier', async () => {
    const { url } = await scriptedServer([status(404, { error: 'not found' })]);
    const error = await transportFor(url)
      .request({ method: 'GET', path: `/v1/Account/${AUTH_ID}/Message/${TOKEN}/` }, parseListBody)
      .catch((caught: unknown) => caught);
    expect((error as ApiError).message).toContain('/Message/[redacted]/');
    expect(allText(error)).not.toContain(TOKEN);
  });

  it('starts no more than maxRps requests in any one-second window', async () => {
    const { url, arrivals } = await scriptedServer([ok]);
    const transport = transportFor(url, { maxRps: 20, concurrency: 8 });
    await Promise.all(Array.from({ length: 50 }, () => get(transport)));
    expect(arrivals).toHaveLength(50);
    const times = arrivals.map((arrival) => arrival.atMs).sort((a, b) => a - b);
    let busiest = 0;
    for (let i = 0; i < times.length; i++) {
      let j = i;
      while (j < times.length && times[j]! < times[i]! + 1000) j++;
      busiest = Math.max(busiest, j - i);
    }
    expect(busiest).toBeLessThanOrEqual(20);
  });
});

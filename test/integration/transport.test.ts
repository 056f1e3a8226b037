import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/api-errors.js';
import { parseListBody } from '../../src/api/received-json.js';
import { RequestMeter } from '../../src/api/request-meter.js';
import { StoppedError } from '../../src/util/stopped-error.js';
import {
  ForeignNextPageError,
  InvalidIdentifierError,
  TelephonyClient,
} from '../../src/api/telephony-client.js';
import {
  HttpTransport,
  RESPONSE_MAX_BYTES,
  type RetryEvent,
  type TransportOptions,
} from '../../src/api/transport.js';

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

  it('honours Retry-After on a 503 as a floor for the wait, as on a 429', async () => {
    const { url, arrivals } = await scriptedServer([
      status(503, { error: 'down for maintenance' }, { 'retry-after': '1' }),
      ok,
    ]);
    const meter = new RequestMeter();
    await get(transportFor(url), meter);
    expect(arrivals).toHaveLength(2);
    // Without the header the backoff would be 10 ms (the test's policy).
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
      /^no complete answer within the request timeout .*\(after 3 attempts\)$/,
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
    // Cause first; the request is a field of the error, not part of its message.
    expect((error as ApiError).message).toMatch(new RegExp(`^${code} `));
    expect(error).toMatchObject({ method: 'GET', path: listPath });
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

  it('keeps the credentials out of an error whose body spells the Authorization header in \\u escapes', async () => {
    const { url } = await scriptedServer([
      (req, res) => {
        const escaped = [...(req.headers.authorization ?? '')]
          .map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
          .join('');
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(`{"api_id":"a","error":"you sent ${escaped}"}`);
      },
    ]);
    const error = await get(transportFor(url)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 401, serviceMessage: 'you sent [redacted]' });
    expect(allText(error)).not.toContain(Buffer.from(`${AUTH_ID}:${TOKEN}`).toString('base64'));
  });

  it('keeps the token out of an error even when the token is passed as an identifier', async () => {
    const { url } = await scriptedServer([status(404, { error: 'not found' })]);
    const error = await transportFor(url)
      .request({ method: 'GET', path: `/v1/Account/${AUTH_ID}/Message/${TOKEN}/` }, parseListBody)
      .catch((caught: unknown) => caught);
    expect((error as ApiError).path).toContain('/Message/[redacted]/');
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

const startPath = `/v1/Account/${AUTH_ID}/Call/4f045f7a-b04a-4364-8523-74e6072f4f72/Stream/`;
const post = (transport: HttpTransport, meter?: RequestMeter) =>
  transport.request(
    { method: 'POST', path: startPath, body: { service_url: 'wss://media.example.com/a' } },
    (body) => JSON.parse(Buffer.from(body).toString('utf8')) as unknown,
    meter ? { meter } : {},
  );
const started: Reply = (_req, res) => {
  res.writeHead(201, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ api_id: 'p', message: 'audio streaming started', stream_id: 's' }));
};

describe('a request that changes the service (POST)', () => {
  it.each([
    ['a 502', status(502, { error: 'bad gateway' })],
    ['a 503', status(503, { error: 'busy' })],
    ['a reset after sending', reset],
    ['a truncated answer', truncated],
  ])('is sent once when %s leaves unknown whether the service acted', async (_what, reply) => {
    const { url, arrivals } = await scriptedServer([reply, started]);
    const error = await post(transportFor(url)).catch((caught: unknown) => caught);
    expect(arrivals).toHaveLength(1);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ retryable: false, sent: true });
  });

  it('is sent once when it times out', async () => {
    const { url, arrivals } = await scriptedServer([stall, started]);
    const error = await post(transportFor(url, { timeoutMs: 150 })).catch(
      (caught: unknown) => caught,
    );
    expect(arrivals).toHaveLength(1);
    expect(error).toMatchObject({ kind: 'timeout', retryable: false, sent: true });
  });

  it('is retried after a 429: the service did not act on it', async () => {
    const { url, arrivals } = await scriptedServer([status(429, { error: 'slow down' }), started]);
    expect(await post(transportFor(url))).toMatchObject({ stream_id: 's' });
    expect(arrivals).toHaveLength(2);
  });

  it('is retried when the connection is refused: it never left telesync', async () => {
    const { url, server } = await scriptedServer([started]);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const meter = new RequestMeter();
    const error = await post(transportFor(url, { maxRetries: 2 }), meter).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ kind: 'network', sent: false, attempts: 3 });
    expect(meter.snapshot()).toMatchObject({ requests: 3, retries: 2 });
  });
});

describe('hostile answers', () => {
  it('caps a Retry-After of an hour, says so once in the retry event, and never busy-loops', async () => {
    const { url, arrivals } = await scriptedServer([
      status(429, { error: 'slow down' }, { 'retry-after': '3600' }),
      status(429, { error: 'slow down' }, { 'retry-after': '99999999' }),
      ok,
    ]);
    const events: RetryEvent[] = [];
    const meter = new RequestMeter();
    const started = performance.now();
    await get(
      transportFor(url, { retryAfterMaxSeconds: 0.2, onRetry: (event) => events.push(event) }),
      meter,
    );
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(arrivals).toHaveLength(3);
    expect(meter.waitMs).toBe(400);
    expect(events.map((event) => event.note)).toEqual([
      'the service asked to wait 3600 s (Retry-After); telesync waits at most 0.2 s before retrying',
      undefined,
    ]);
    expect(events.map((event) => event.error.retryAfterSeconds)).toEqual([3600, 99999999]);
  });

  it('pauses the account on a 429 without Retry-After, and the retry still waits its backoff', async () => {
    const { url, arrivals } = await scriptedServer([status(429, { error: 'slow down' }), ok]);
    const transport = transportFor(url, { backoff: { baseDelayMs: 600, maxDelayMs: 600 } });
    const first = get(transport);
    while (arrivals.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 40));
    // Started after the 429 came back: it must wait out the shortest backoff (300 ms) too.
    const second = get(transport);
    await Promise.all([first, second]);
    expect(arrivals).toHaveLength(3);
    for (const later of arrivals.slice(1)) {
      expect(later.atMs - arrivals[0]!.atMs).toBeGreaterThanOrEqual(290);
    }
  });

  it('stops reading a body past the size cap and fails the request, not retried', async () => {
    const big = `{"api_id":"x","meta":{},"objects":[${'"x",'.repeat(300_000)}"x"]}`;
    const { url, arrivals } = await scriptedServer([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // Chunked, no Content-Length: the cap is found while reading.
        res.write(big.slice(0, 600_000));
        res.end(big.slice(600_000));
      },
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(big);
      },
    ]);
    const transport = transportFor(url, { maxBodyBytes: 100_000 });
    for (const expected of [1, 2]) {
      const error = (await get(transport).catch((caught: unknown) => caught)) as ApiError;
      expect(error).toBeInstanceOf(ApiError);
      expect(error.kind).toBe('too_large');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('the answer is larger than 100000 bytes');
      expect(arrivals).toHaveLength(expected);
    }
    expect(RESPONSE_MAX_BYTES).toBe(32 * 1024 * 1024);
  });

  it('reports a redirect as a redirect naming the host, and does not follow it', async () => {
    const { url, arrivals } = await scriptedServer([
      status(302, {}, { location: 'https://elsewhere.example.com/steal?token=abc' }),
    ]);
    const error = (await get(transportFor(url)).catch((caught: unknown) => caught)) as ApiError;
    expect(error).toBeInstanceOf(ApiError);
    expect(error.kind).toBe('http');
    expect(error.status).toBe(302);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('302 redirected');
    expect(error.message).toContain('a redirect to elsewhere.example.com, not followed');
    expect(error.message).not.toContain('steal');
    expect(arrivals).toHaveLength(1);
  });

  it('keeps a request timeout past the timer limit a long timeout, not an instant one', async () => {
    const { url } = await scriptedServer([ok]);
    const list = await get(transportFor(url, { timeoutMs: 99_999_999_999 }));
    expect(list.apiId).toBe('list-1');
  });
});

describe('a stop request', () => {
  it('ends a Retry-After wait at once, and the request in flight is still answered', async () => {
    const { url, arrivals } = await scriptedServer([
      status(429, { error: 'slow down' }, { 'retry-after': '100' }),
    ]);
    const transport = transportFor(url, { retryAfterMaxSeconds: 100 });
    const stop = new AbortController();
    const started = performance.now();
    const waiting = transport.request({ method: 'GET', path: listPath }, parseListBody, {
      stopSignal: stop.signal,
    });
    // A second request queued behind the pause gives up too.
    while (arrivals.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const queued = transport.request({ method: 'GET', path: listPath }, parseListBody, {
      stopSignal: stop.signal,
    });
    setTimeout(() => stop.abort(new Error('received SIGTERM')), 100);
    await expect(waiting).rejects.toBeInstanceOf(StoppedError);
    await expect(queued).rejects.toBeInstanceOf(StoppedError);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(arrivals).toHaveLength(1);
  });

  it('ends a backoff pause between retries at once', async () => {
    const { url, arrivals } = await scriptedServer([status(503, { error: 'down' })]);
    const transport = transportFor(url, { backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 } });
    const stop = new AbortController();
    const started = performance.now();
    const request = transport.request({ method: 'GET', path: listPath }, parseListBody, {
      stopSignal: stop.signal,
    });
    setTimeout(() => stop.abort(new Error('received SIGTERM')), 150);
    await expect(request).rejects.toThrow(/stopped on request while waiting to be sent/);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(arrivals).toHaveLength(1);
  });

  it('never cancels an exchange in flight: its answer is returned', async () => {
    const slowOk: Reply = (req, res) => setTimeout(() => ok(req, res), 300);
    const { url } = await scriptedServer([slowOk]);
    const stop = new AbortController();
    const request = transportFor(url).request({ method: 'GET', path: listPath }, parseListBody, {
      stopSignal: stop.signal,
    });
    setTimeout(() => stop.abort(), 100);
    expect((await request).meta.total_count).toBe(0);
  });
});

describe('the exchange itself', () => {
  it("ends an exchange in flight when the caller's signal aborts: stopped, not retried", async () => {
    const { url, arrivals } = await scriptedServer([stall]);
    const controller = new AbortController();
    const meter = new RequestMeter();
    const request = transportFor(url, { timeoutMs: 5_000 }).request(
      { method: 'GET', path: listPath },
      parseListBody,
      { signal: controller.signal, meter },
    );
    setTimeout(() => controller.abort(), 100);
    const startedMs = performance.now();
    const error = await request.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoppedError);
    expect(performance.now() - startedMs).toBeLessThan(2_000);
    expect(arrivals).toHaveLength(1);
    expect(meter.requests).toBe(1);
  });

  it('times out an answer whose body stalls after its headers, within the one timeout', async () => {
    const { url, arrivals } = await scriptedServer([
      (_req, res) => {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': String(EMPTY_LIST.length),
        });
        // Part of the body, then nothing: the timeout covers headers and body together.
        res.write(EMPTY_LIST.slice(0, 20));
      },
    ]);
    const startedMs = performance.now();
    const error = (await get(transportFor(url, { timeoutMs: 200, maxRetries: 1 })).catch(
      (caught: unknown) => caught,
    )) as ApiError;
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ kind: 'timeout', retryable: true, attempts: 2 });
    expect(arrivals).toHaveLength(2);
    expect(performance.now() - startedMs).toBeLessThan(2_000);
  });

  it('fails at once, sending nothing, when the signal has already aborted', async () => {
    const { url, arrivals } = await scriptedServer([ok]);
    const error = (await transportFor(url)
      .request({ method: 'GET', path: listPath }, parseListBody, {
        signal: AbortSignal.abort(),
      })
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toBeInstanceOf(StoppedError);
    expect(arrivals).toHaveLength(0);
  });

  it('sends every path below the path of a base address that has one', async () => {
    const { url, arrivals } = await scriptedServer([ok]);
    const transport = transportFor(`${url}/gateway/telephony`);
    await transport.request(
      { method: 'GET', path: listPath, query: new URLSearchParams({ limit: '20', offset: '40' }) },
      parseListBody,
    );
    expect(arrivals.map((arrival) => arrival.url)).toEqual([
      `/gateway/telephony${listPath}?limit=20&offset=40`,
    ]);
  });

  it('reads a body sent in many chunks whole, byte for byte, and counts its bytes', async () => {
    const objects = Array.from({ length: 200 }, (_, index) => ({
      i: index,
      text: `é${'x'.repeat(900)}✓`,
    }));
    const text = JSON.stringify({
      api_id: 'chunks',
      meta: { limit: 20, offset: 0, next: null, previous: null, total_count: 200 },
      objects,
    });
    const { url } = await scriptedServer([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const bytes = Buffer.from(text, 'utf8');
        // Splits inside multi-byte characters too.
        let at = 0;
        const next = (): void => {
          if (at >= bytes.length) {
            res.end();
            return;
          }
          res.write(bytes.subarray(at, at + 4_097));
          at += 4_097;
          setImmediate(next);
        };
        next();
      },
    ]);
    const meter = new RequestMeter();
    const body = await transportFor(url).request(
      { method: 'GET', path: listPath },
      (bytes) => bytes,
      { meter },
    );
    expect(Buffer.from(body).toString('utf8')).toBe(text);
    expect(meter.bytesReceived).toBe(Buffer.byteLength(text));
  });
});

describe('the client against hostile answers', () => {
  const page = (next: string | null, id: string) =>
    status(200, {
      api_id: id,
      meta: { limit: 1, offset: 0, next, previous: null, total_count: 2 },
      objects: [{ endpoint_id: id }],
    });

  it.each([
    ['another account', '/v1/Account/MA_OTHER_ACCOUNT/Endpoint/?limit=20&offset=20'],
    ['another resource', `/v1/Account/${AUTH_ID}/Message/?limit=20&offset=20`],
    ['another host', `https://elsewhere.example.com${listPath}?offset=20`],
    ['a protocol-relative host', `//elsewhere.example.com${listPath}?offset=20`],
    ['a dot-segment escape', `${listPath}../../MA_OTHER_ACCOUNT/Endpoint/?offset=20`],
    ['an encoded dot-segment escape', `${listPath}%2e%2e/%2e%2e/MA_OTHER_ACCOUNT/Endpoint/`],
  ])('never follows a meta.next to %s', async (_name, next) => {
    const { url, arrivals } = await scriptedServer([page(next, '1'), page(null, '2')]);
    const client = new TelephonyClient(transportFor(url), AUTH_ID);
    const pages: string[] = [];
    const error = await (async () => {
      for await (const one of client.iterateEndpoints()) pages.push(one.apiId ?? '');
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ForeignNextPageError);
    expect(pages).toEqual(['1']);
    expect(arrivals).toHaveLength(1);
  });

  it("follows a meta.next within the account's own list", async () => {
    const { url, arrivals } = await scriptedServer([
      page(`${listPath}?limit=1&offset=1`, '1'),
      page('', '2'),
    ]);
    const client = new TelephonyClient(transportFor(url), AUTH_ID);
    const pages: string[] = [];
    for await (const one of client.iterateEndpoints()) pages.push(one.apiId ?? '');
    expect(pages).toEqual(['1', '2']);
    expect(arrivals.map((arrival) => arrival.url)).toEqual([
      listPath,
      `${listPath}?limit=1&offset=1`,
    ]);
  });

  it.each(['.', '..', '../Call', 'a/b', '%2e%2e', '', 'not-a-uuid'])(
    'refuses the ref %j before any request (message, pack, call streams)',
    async (ref) => {
      const { url, arrivals } = await scriptedServer([ok]);
      const client = new TelephonyClient(transportFor(url), AUTH_ID);
      for (const attempt of [
        () => client.getMessage(ref),
        () => client.getPowerpack(ref),
        () => client.listCallStreams(ref),
        () => client.startStream(ref, { service_url: 'wss://media.example.com/a' }),
      ]) {
        const error = await attempt().catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(InvalidIdentifierError);
      }
      const streams = await (async () => {
        for await (const _ of client.iterateCallStreams(ref)) void _;
      })().catch((caught: unknown) => caught);
      expect(streams).toBeInstanceOf(InvalidIdentifierError);
      expect(arrivals).toHaveLength(0);
    },
  );

  it('reads GET VerifiedCallerId/{phone_number} answered with the caller ID itself', async () => {
    const single = {
      alias: 'test',
      api_id: 'ee7c3cb1-c921-42c9-832b-950fb8344b9b',
      country: 'IN',
      created_at: '2023-09-22T14:11:03.091534Z',
      modified_at: '2023-09-22T14:11:03.091534Z',
      phone_number: '+919768368718',
      subaccount: '',
      verification_uuid: '0f978b20-9e2b-4cfe-99fe-f7087c03b8e1',
    };
    const { url, arrivals } = await scriptedServer([status(200, single)]);
    const client = new TelephonyClient(transportFor(url), AUTH_ID);
    const list = await client.listVerifiedCallerIds({ phoneNumber: '+919768368718' });
    expect(arrivals[0]!.url).toBe(`/v1/Account/${AUTH_ID}/VerifiedCallerId/%2B919768368718`);
    expect(list.meta.total_count).toBe(1);
    expect(list.records.map((record) => record.value)).toEqual([single]);
    const error = await client
      .listVerifiedCallerIds({ phoneNumber: '../Message' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidIdentifierError);
    expect(arrivals).toHaveLength(1);
  });
});

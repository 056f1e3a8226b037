import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signStreamCallbackV3 } from '../../src/api/stream-callback-signature.js';
import {
  createStreamCallbackService,
  type StreamCallbackService,
} from '../../src/app/stream-callback-service.js';
import { loadConfig } from '../../src/config/load-config.js';
import { startHttpServer, type RunningHttpServer } from '../../src/http/http-server.js';
import { createMetricsRoute } from '../../src/http/metrics-route.js';
import { SchedulerMetrics } from '../../src/scheduler/metrics.js';
import { createLogger } from '../../src/util/logger.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../../src/util/micros.js';
import { parsePrometheusText, sumOf } from '../support/prometheus-text.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * The callback route of `schedule` as the app builds it, on a real HTTP server against real
 * PostgreSQL, fed with callbacks signed as the service signs them. The public URL is not the
 * server's address: a signature is good only for the address the service was given.
 */

const PUBLIC_URL = 'https://telesync.example.com/';
const CALLBACK_URL = 'https://telesync.example.com/callbacks/stream';
const ONE = { authId: 'MA_ROUTE_ONE', authToken: 'token-route-one-0123456789' };
const TWO = { authId: 'MA_ROUTE_TWO', authToken: 'token-route-two-0123456789' };

let handle: TestDatabase;
let server: RunningHttpServer;
let service: StreamCallbackService;
const logLines: string[] = [];

beforeAll(async () => {
  handle = await createTestDatabase();
  const config = loadConfig(
    {
      TELESYNC_AUTH_ID: ONE.authId,
      TELESYNC_AUTH_TOKEN: ONE.authToken,
      TOKEN_TWO: TWO.authToken,
      TELESYNC_PUBLIC_URL: PUBLIC_URL,
    },
    {
      path: '/etc/telesync.json',
      text: JSON.stringify({ accounts: [{ auth_id: TWO.authId, auth_token_env: 'TOKEN_TWO' }] }),
    },
  );
  const log = createLogger({
    level: 'debug',
    secrets: [ONE.authToken, TWO.authToken],
    pretty: false,
    write: (line) => logLines.push(line),
  });
  const metrics = new SchedulerMetrics({ now: () => Date.now(), processMetrics: false });
  service = createStreamCallbackService({
    config,
    accounts: config.accounts,
    database: handle.database,
    log,
    metrics,
    serving: true,
  });
  if (!service.on) throw new Error(service.reason);
  server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    routes: [...service.routes, createMetricsRoute(() => metrics.render())],
    log,
  });
});

afterAll(async () => {
  await server?.close();
  await handle?.close();
});

/** Now as the service writes a Timestamp, shifted by `offsetSeconds`, microseconds kept. */
function timestamp(offsetSeconds = 0): string {
  return formatIsoMicros(epochMicrosFromMillis(Date.now()) + offsetSeconds * 1_000_000 + 123);
}

let nonceSerial = 0;
interface Delivery {
  readonly method: 'GET' | 'POST';
  readonly fields: Record<string, string>;
  readonly nonce: string;
  readonly signature: string | undefined;
}

function signed(
  method: 'GET' | 'POST',
  fields: Record<string, string>,
  options: { token?: string; nonce?: string; url?: string } = {},
): Delivery {
  const nonce = options.nonce ?? `nonce-${process.pid}-${++nonceSerial}`;
  const url = options.url ?? CALLBACK_URL;
  const query = new URLSearchParams(fields).toString();
  const signature = signStreamCallbackV3({
    method,
    url: method === 'GET' ? `${url}?${query}` : url,
    params: method === 'POST' ? fields : {},
    nonce,
    authToken: options.token ?? ONE.authToken,
  });
  return { method, fields, nonce, signature };
}

async function send(
  delivery: Delivery,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'X-Plivo-Signature-V3-Nonce': delivery.nonce };
  if (delivery.signature !== undefined) headers['X-Plivo-Signature-V3'] = delivery.signature;
  const form = new URLSearchParams(delivery.fields).toString();
  const response =
    delivery.method === 'GET'
      ? await fetch(`${server.url}/callbacks/stream?${form}`, { headers })
      : await fetch(`${server.url}/callbacks/stream`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
          body: form,
        });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function event(
  streamId: string,
  name: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    Event: name,
    StreamID: streamId,
    CallUUID: `call-${streamId}`,
    Timestamp: timestamp(),
    ...extra,
  };
}

async function callStream(accountId: string, streamId: string): Promise<void> {
  await handle.database.db
    .insertInto('call_streams')
    .values({
      account_id: accountId,
      stream_id: streamId,
      call_uuid: `call-${streamId}`,
      raw: '{}',
    })
    .execute();
}

async function storedEvents(streamId: string) {
  return handle.database.db
    .selectFrom('stream_events')
    .select(['account_id', 'event', 'stream_status', 'error', 'raw'])
    .where('stream_id', '=', streamId)
    .orderBy('id')
    .execute();
}

async function streamStatus(accountId: string, streamId: string) {
  const row = await handle.database.db
    .selectFrom('call_streams')
    .select('status')
    .where('account_id', '=', accountId)
    .where('stream_id', '=', streamId)
    .executeTakeFirst();
  return row?.status;
}

async function queuedCalls(accountId: string): Promise<string[]> {
  const rows = await handle.database.db
    .selectFrom('call_stream_refs')
    .select('call_uuid')
    .where('account_id', '=', accountId)
    .orderBy('call_uuid')
    .execute();
  return rows.map((row) => row.call_uuid);
}

async function eventCount(): Promise<number> {
  const result = await sql<{ n: number }>`
    SELECT count(*)::integer AS n FROM ${sql.id(handle.database.schema, 'stream_events')}
  `.execute(handle.database.root);
  return result.rows[0]!.n;
}

async function callbackMetrics(): Promise<Record<string, number>> {
  const response = await fetch(`${server.url}/metrics`);
  const samples = parsePrometheusText(await response.text()).filter(
    (sample) => sample.name === 'telesync_stream_callbacks_total',
  );
  return Object.fromEntries(
    samples.map((sample) => [`${sample.labels.outcome}/${sample.labels.reason}`, sample.value]),
  );
}

describe('the stream callback route of schedule', () => {
  it('serves GET and POST at the configured path, verifying against the public URL', () => {
    expect(service).toMatchObject({
      on: true,
      callbackUrl: CALLBACK_URL,
      path: '/callbacks/stream',
    });
  });

  it('stores a POSTed StartStream then StopStream: connected, then stopped, and queues the call', async () => {
    await callStream(ONE.authId, 'post-1');
    const started = await send(signed('POST', event('post-1', 'StartStream')));
    expect(started).toEqual({
      status: 200,
      body: {
        accepted: true,
        stored: true,
        event: 'StartStream',
        stream_id: 'post-1',
        stream_status: 'connected',
      },
    });
    expect(await streamStatus(ONE.authId, 'post-1')).toBe('connected');
    const stopped = await send(
      signed('POST', event('post-1', 'StopStream', { Timestamp: timestamp(1) })),
    );
    expect(stopped.status).toBe(200);
    expect(await storedEvents('post-1')).toEqual([
      expect.objectContaining({
        account_id: ONE.authId,
        event: 'StartStream',
        stream_status: 'connected',
      }),
      expect.objectContaining({
        account_id: ONE.authId,
        event: 'StopStream',
        stream_status: 'stopped',
      }),
    ]);
    expect(await streamStatus(ONE.authId, 'post-1')).toBe('stopped');
    expect(await queuedCalls(ONE.authId)).toContain('call-post-1');
  });

  it('stores GET callbacks, and a DroppedStream without StartStream as a failed connect with its error', async () => {
    await callStream(ONE.authId, 'get-1');
    await callStream(ONE.authId, 'get-failed');
    expect((await send(signed('GET', event('get-1', 'StartStream')))).status).toBe(200);
    expect(
      (await send(signed('GET', event('get-1', 'StopStream', { Timestamp: timestamp(1) })))).status,
    ).toBe(200);
    expect(await streamStatus(ONE.authId, 'get-1')).toBe('stopped');

    const failed = await send(
      signed(
        'GET',
        event('get-failed', 'DroppedStream', {
          Error: 'connection refused by wss://media.example.com',
        }),
      ),
    );
    expect(failed.body).toMatchObject({ stored: true, stream_status: 'failed' });
    expect(await storedEvents('get-failed')).toEqual([
      {
        account_id: ONE.authId,
        event: 'DroppedStream',
        stream_status: 'failed',
        error: 'connection refused by wss://media.example.com',
        raw: expect.objectContaining({ Event: 'DroppedStream', StreamID: 'get-failed' }) as unknown,
      },
    ]);
    expect(await streamStatus(ONE.authId, 'get-failed')).toBe('failed');
  });

  it("stores a callback signed with the second account's token under that account", async () => {
    await callStream(TWO.authId, 'two-1');
    const answer = await send(
      signed('POST', event('two-1', 'StartStream'), { token: TWO.authToken }),
    );
    expect(answer.status).toBe(200);
    expect((await storedEvents('two-1')).map((row) => row.account_id)).toEqual([TWO.authId]);
    expect(await streamStatus(TWO.authId, 'two-1')).toBe('connected');
  });

  it('stores a delivery sent again (a retry, new nonce) once, and answers it 200', async () => {
    const fields = event('dup-1', 'StartStream');
    expect((await send(signed('POST', fields))).body).toMatchObject({ stored: true });
    const again = await send(signed('POST', fields));
    expect(again).toMatchObject({ status: 200, body: { accepted: true, stored: false } });
    expect(await storedEvents('dup-1')).toHaveLength(1);
  });

  it('refuses forged, replayed, stale, unsigned and Host-signed callbacks with 403, storing nothing, and counts them', async () => {
    const before = await callbackMetrics();
    const original = signed('POST', event('refused-1', 'StartStream'));
    expect((await send(original)).status).toBe(200);
    const count = await eventCount();

    const forged = await send(
      signed('POST', event('forged-1', 'StartStream'), { token: 'not-a-token-of-ours' }),
    );
    const tampered = await send({
      ...original,
      fields: { ...original.fields, StreamID: 'tampered-1' },
    });
    const replayed = await send(original);
    const stale = await send(
      signed('POST', event('stale-1', 'StartStream', { Timestamp: timestamp(-3600) })),
    );
    const unsigned = await send({
      ...signed('GET', event('unsigned-1', 'StartStream')),
      signature: undefined,
    });
    const hostSigned = await send(
      signed('GET', event('host-1', 'StartStream'), { url: `${server.url}/callbacks/stream` }),
    );
    expect(
      [forged, tampered, replayed, stale, unsigned, hostSigned].map((answer) => [
        answer.status,
        answer.body.error,
      ]),
    ).toEqual([
      [403, 'forged'],
      [403, 'forged'],
      [403, 'replayed'],
      [403, 'stale'],
      [403, 'unsigned'],
      [403, 'forged'],
    ]);
    expect(await eventCount()).toBe(count);
    for (const streamId of ['forged-1', 'tampered-1', 'stale-1', 'unsigned-1', 'host-1'])
      expect(await storedEvents(streamId)).toEqual([]);

    const after = await callbackMetrics();
    const delta = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
    expect({
      stored: delta('accepted/stored'),
      forged: delta('refused/forged'),
      replayed: delta('refused/replayed'),
      stale: delta('refused/stale'),
      unsigned: delta('refused/unsigned'),
    }).toEqual({ stored: 1, forged: 3, replayed: 1, stale: 1, unsigned: 1 });
  });

  it('answers a signed but malformed callback 400, a text body 415 and an oversized one 413, storing nothing', async () => {
    const count = await eventCount();
    const malformed = await send(
      signed('POST', { Event: 'StartStream', StreamID: 'bad-1', Timestamp: 'yesterday' }),
    );
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toContain('CallUUID is missing');
    expect(malformed.body.message).toContain('Timestamp must be a date-time');

    const plain = signed('POST', event('text-1', 'StartStream'));
    const text = await fetch(`${server.url}/callbacks/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain',
        'X-Plivo-Signature-V3': plain.signature!,
        'X-Plivo-Signature-V3-Nonce': plain.nonce,
      },
      body: new URLSearchParams(event('text-1', 'StartStream')).toString(),
    });
    expect(text.status).toBe(415);
    const huge = await fetch(`${server.url}/callbacks/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        // Of the right shape, so that the size is what refuses it.
        'X-Plivo-Signature-V3': `${'A'.repeat(43)}=`,
        'X-Plivo-Signature-V3-Nonce': 'nonce-huge',
      },
      body: `Event=StartStream&Padding=${'x'.repeat(200_000)}`,
    });
    expect(huge.status).toBe(413);
    expect(await eventCount()).toBe(count);
    const counted = await callbackMetrics();
    expect(counted['refused/malformed']).toBeGreaterThanOrEqual(1);
    expect(counted['refused/unsupported_media_type']).toBeGreaterThanOrEqual(1);
    expect(counted['refused/too_large']).toBeGreaterThanOrEqual(1);
  });

  it('never logs a token', () => {
    const text = logLines.join('\n');
    expect(text).toContain('stream callback refused (forged)');
    expect(text).not.toContain(ONE.authToken);
    expect(text).not.toContain(TWO.authToken);
  });

  it('lists every outcome in /metrics from the start, at 0 when none happened', async () => {
    const samples = parsePrometheusText(await (await fetch(`${server.url}/metrics`)).text());
    expect(
      sumOf(samples, 'telesync_stream_callbacks_total', {
        outcome: 'failed',
        reason: 'store_failed',
      }),
    ).toBe(0);
    expect(
      samples.filter((sample) => sample.name === 'telesync_stream_callbacks_total').length,
    ).toBe(14);
  });

  it('stores a signed JSON object body like a form', async () => {
    const fields = event('json-1', 'StartStream');
    const delivery = signed('POST', fields);
    const response = await fetch(`${server.url}/callbacks/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-Plivo-Signature-V3': delivery.signature!,
        'X-Plivo-Signature-V3-Nonce': delivery.nonce,
      },
      body: JSON.stringify(fields),
    });
    expect(response.status).toBe(200);
    expect(await storedEvents('json-1')).toEqual([
      {
        account_id: ONE.authId,
        event: 'StartStream',
        stream_status: 'connected',
        error: null,
        raw: fields,
      },
    ]);
  });

  it('stores callbacks named like Object.prototype and with U+0000, escaped and said so', async () => {
    const before = await callbackMetrics();
    const odd = await send(
      signed('POST', {
        ...event('proto-1', 'StartStream'),
        constructor: '1',
        toString: '2',
        hasOwnProperty: '3',
      }),
    );
    expect(odd.status).toBe(200);
    const nul = await send(
      signed('POST', { ...event('nul-1', 'DroppedStream'), Error: 'closed\0by peer', 'X\0': 'v' }),
    );
    expect(nul.status).toBe(200);
    const rows = await handle.database.db
      .selectFrom('stream_events')
      .select(['stream_id', 'error', 'raw', 'nul_escaped'])
      .where('stream_id', 'in', ['proto-1', 'nul-1'])
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      {
        stream_id: 'proto-1',
        error: null,
        raw: expect.objectContaining({
          constructor: '1',
          toString: '2',
          hasOwnProperty: '3',
        }) as unknown,
        nul_escaped: false,
      },
      {
        stream_id: 'nul-1',
        error: 'closed\\u0000by peer',
        raw: expect.objectContaining({ 'X\\u0000': 'v' }) as unknown,
        nul_escaped: true,
      },
    ]);
    const after = await callbackMetrics();
    expect((after['accepted/stored'] ?? 0) - (before['accepted/stored'] ?? 0)).toBe(2);
  });

  it('refuses a callback accepted before by another receiver on the same database (a restart, another instance)', async () => {
    const config = loadConfig({
      TELESYNC_AUTH_ID: ONE.authId,
      TELESYNC_AUTH_TOKEN: ONE.authToken,
      TELESYNC_PUBLIC_URL: PUBLIC_URL,
    });
    const metrics = new SchedulerMetrics({ now: () => Date.now(), processMetrics: false });
    const other = createStreamCallbackService({
      config,
      accounts: config.accounts,
      database: handle.database,
      log: createLogger({ level: 'silent', secrets: [], pretty: false }),
      metrics,
      serving: true,
    });
    if (!other.on) throw new Error(other.reason);
    const second = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      routes: [...other.routes, createMetricsRoute(() => metrics.render())],
      log: createLogger({ level: 'silent', secrets: [], pretty: false }),
    });
    try {
      const delivery = signed('POST', event('restart-1', 'StartStream'));
      expect((await send(delivery)).status).toBe(200);
      const form = new URLSearchParams(delivery.fields).toString();
      const replay = await fetch(`${second.url}/callbacks/stream`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'X-Plivo-Signature-V3': delivery.signature!,
          'X-Plivo-Signature-V3-Nonce': delivery.nonce,
        },
        body: form,
      });
      expect(replay.status).toBe(403);
      expect(await replay.json()).toMatchObject({ error: 'replayed' });
      // Same signature, other field boundaries (V3 joins name and value without a separator).
      const { CallUUID, ...rest } = delivery.fields;
      const resplit = new URLSearchParams({ ...rest, CallUUI: `D${CallUUID!}` }).toString();
      const moved = await fetch(`${second.url}/callbacks/stream`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'X-Plivo-Signature-V3': delivery.signature!,
          'X-Plivo-Signature-V3-Nonce': delivery.nonce,
        },
        body: resplit,
      });
      expect(moved.status).not.toBe(200);
      expect(await storedEvents('restart-1')).toHaveLength(1);
      const kept = await handle.database.db
        .selectFrom('stream_callback_nonces')
        .select(['account_id', 'signature'])
        .where('nonce', '=', delivery.nonce)
        .execute();
      expect(kept).toEqual([{ account_id: ONE.authId, signature: delivery.signature }]);
    } finally {
      await second.close();
    }
  });
});

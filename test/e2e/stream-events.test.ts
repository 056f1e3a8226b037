import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPlayAudioMessage } from '../../src/api/play-audio.js';
import { scheduleVariable } from '../../src/config/load-config.js';
import { STREAMS } from '../../src/sync/stream-registry.js';
import { startMediaServer, type MediaServer } from '../support/media-server.js';
import { parsePrometheusText, sumOf } from '../support/prometheus-text.js';
import { runTelesync, startTelesync, type TelesyncProcess } from '../support/run-telesync.js';
import { freePort, waitFor } from '../support/telesync-process.js';
import {
  createTestCertificateAuthority,
  type TestCertificateAuthority,
} from '../support/test-certificate-authority.js';
import { startCliFixture, type StartedCliFixture } from '../support/cli-fixture.js';
import { harnessTarget } from '../support/test-database.js';

/**
 * The whole life of an audio stream, with real processes:
 *
 *   telesync stream start ──► telesync simulate ──wss (test CA)──► media server (this test)
 *                                   │  signed callbacks                 │ playAudio back
 *                                   ▼                                   ▼
 *                  public address (a forwarding proxy) ──► telesync schedule ──► PostgreSQL
 *
 * The public address is a proxy in front of schedule's HTTP port, as in production; it also keeps
 * a copy of each genuine callback, which the test then replays, forges and strips of its signature.
 */

const ACCOUNT = { authId: 'MAE2ESTREAMEVENTS001', authToken: 'tok_e2e_stream_events_0123456789' };
const MEDIA_SECONDS = '1';

interface CapturedCallback {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly status: number;
}

/**
 * The story needs a server database: `lookup streams` and the test's reads of stream_events run
 * while `schedule` stores callbacks, several processes on one database at once, which the embedded
 * database refuses by design (one process at a time; EmbeddedDatabaseBusyError). With PGlite the
 * callback route's storing is proven by schedule-stream-callbacks.test.ts instead.
 */
const needsServerDatabase = harnessTarget().kind !== 'postgres';

let ca: TestCertificateAuthority;
let media: MediaServer;
let cli: StartedCliFixture<{ url: string; close(): Promise<void> }>;
let simulator: TelesyncProcess;
let simUrl: string;
let scheduler: TelesyncProcess;
let schedulePort: number;
let proxy: Server;
let publicUrl: string;
const captured: CapturedCallback[] = [];
let env: Record<string, string>;
let liveCalls: string[];

beforeAll(async () => {
  if (needsServerDatabase) return;
  ca = createTestCertificateAuthority();
  media = await startMediaServer({ cert: ca.serverCertPem, key: ca.serverKeyPem });

  const simPort = await freePort();
  simulator = startTelesync(
    [
      'simulate',
      '--port',
      String(simPort),
      '--seed',
      'e2e-stream-events',
      '--calls',
      '200',
      '--account',
      `${ACCOUNT.authId}:${ACCOUNT.authToken}`,
      '--media-ca',
      ca.caFile,
      '--stream-audio-seconds',
      MEDIA_SECONDS,
    ],
    { TELESYNC_LOG_LEVEL: 'warn' },
    { timeoutMs: 170_000 },
  );
  await simulator.waitForStdout(/listening on/, 30_000);
  simUrl = `http://127.0.0.1:${simPort}`;

  schedulePort = await freePort();
  proxy = startForwardingProxy(schedulePort);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  publicUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  // The simulator runs as its own process (above); the fixture gives the migrated database and env.
  cli = await startCliFixture({
    service: () => Promise.resolve({ url: simUrl, close: () => Promise.resolve() }),
    account: ACCOUNT,
  });
  env = cli.envWith({ TELESYNC_PUBLIC_URL: publicUrl });

  scheduler = startTelesync(
    ['schedule'],
    {
      ...env,
      TELESYNC_HTTP_PORT: String(schedulePort),
      ...Object.fromEntries(
        STREAMS.map((s) => s.name).map((stream) => [scheduleVariable(stream), 'off']),
      ),
      // Scheduled, so schedule starts, but no tick comes during the test.
      TELESYNC_SCHEDULE_ENDPOINTS: '0 0 1 1 *',
    },
    { timeoutMs: 170_000 },
  );
  await scheduler.waitForStdout(/^Stream callbacks: /m, 30_000);
  expect(scheduler.stdout()).toContain(`Stream callbacks: ${publicUrl}/callbacks/stream`);

  const dataset = (await admin('GET', 'dataset')) as {
    accounts: { liveCallUuids: string[] }[];
  };
  liveCalls = dataset.accounts[0]!.liveCallUuids;
  expect(liveCalls.length).toBeGreaterThanOrEqual(2);
});

afterAll(async () => {
  scheduler?.kill('SIGTERM');
  simulator?.kill('SIGTERM');
  await Promise.allSettled([scheduler?.exited, simulator?.exited]);
  await new Promise((resolve) => proxy?.close(resolve));
  await media?.close();
  ca?.remove();
  await cli?.close();
});

/** Forwards every request to schedule's port and keeps a copy of each callback with its answer. */
function startForwardingProxy(targetPort: number): Server {
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      fetch(`http://127.0.0.1:${targetPort}${request.url ?? '/'}`, {
        method: request.method,
        headers: forwardedHeaders(request.headers),
        ...(request.method === 'POST' ? { body } : {}),
      })
        .then(async (answer) => {
          const text = await answer.text();
          captured.push({
            method: request.method ?? 'GET',
            url: request.url ?? '/',
            headers: request.headers,
            body,
            status: answer.status,
          });
          response.writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'text/plain',
          });
          response.end(text);
        })
        .catch((error: unknown) => {
          response.writeHead(502);
          response.end(String(error));
        });
    });
  });
}

function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name))
      out[name] = value;
  return out;
}

async function admin(method: 'GET' | 'POST', path: string): Promise<unknown> {
  const response = await fetch(`${simUrl}/__admin/${path}`, { method });
  expect(response.status, `${method} /__admin/${path}`).toBe(200);
  return response.json();
}

interface StreamStatsOfSimulator {
  streams: {
    byStream: Record<string, { playAudio: { accepted: number; refused: number; audioMs: number } }>;
  };
  callbacks: { sent: number; delivered: number; failed: number };
}

async function storedEvents(streamId: string) {
  return cli.database.inspect(({ db }) =>
    db
      .selectFrom('stream_events')
      .select(['account_id', 'call_uuid', 'event', 'stream_status', 'error'])
      .where('stream_id', '=', streamId)
      .orderBy('event_time')
      .orderBy('id')
      .execute(),
  );
}

async function eventCount(): Promise<number> {
  const rows = await cli.database.inspect(({ db }) =>
    db.selectFrom('stream_events').select('id').execute(),
  );
  return rows.length;
}

async function streamRow(streamId: string) {
  return cli.database.inspect(({ db }) =>
    db
      .selectFrom('call_streams')
      .select(['status', 'end_time'])
      .where('stream_id', '=', streamId)
      .executeTakeFirst(),
  );
}

async function waitForEvents(streamId: string, count: number) {
  return waitFor(
    async () => {
      const rows = await storedEvents(streamId);
      return rows.length >= count ? rows : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: `${count} stored events of stream ${streamId}` },
  );
}

async function startStream(call: string, args: readonly string[]): Promise<string> {
  const result = await runTelesync(['stream', 'start', call, ...args, '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { stream_id: string }).stream_id;
}

describe.skipIf(needsServerDatabase)('the life of an audio stream, end to end', () => {
  let streamId: string;

  it('connects: audio reaches the media server, playAudio is checked, StartStream is stored', async () => {
    const call = liveCalls[0]!;
    streamId = await startStream(call, [
      '--url',
      `${media.url}/audio`,
      '--bidirectional',
      '--timeout',
      '3600',
      '--content-type',
      'audio/x-mulaw;rate=8000',
      '--extra-headers',
      'tenant=acme,shard=7',
    ]);

    const session = await media.session('/audio', 30_000);
    await waitFor(() => session.messages.some((message) => message.event === 'media'), {
      timeoutMs: 20_000,
      what: 'media messages',
    });
    expect(session.messages[0]).toMatchObject({
      event: 'start',
      start: { streamId, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } },
      extra_headers: expect.stringContaining('tenant=acme') as unknown,
    });
    const firstMedia = session.messages.find((message) => message.event === 'media') as {
      media: { payload: string };
    };
    // 20 ms of µ-law at 8000 Hz: 160 bytes.
    expect(Buffer.from(firstMedia.media.payload, 'base64')).toHaveLength(160);

    // 100 ms of µ-law silence, then a message with a sample rate the service does not take.
    session.socket.send(
      JSON.stringify(
        buildPlayAudioMessage({
          contentType: 'audio/x-mulaw',
          sampleRate: 8000,
          audio: new Uint8Array(800).fill(0xff),
        }),
      ),
    );
    session.socket.send(
      JSON.stringify({
        event: 'playAudio',
        media: { contentType: 'audio/x-mulaw', sampleRate: 12000, payload: 'AAAA' },
      }),
    );
    const played = await waitFor(
      async () => {
        const stats = (await admin('GET', 'stats')) as StreamStatsOfSimulator;
        const counts = stats.streams.byStream[streamId]?.playAudio;
        return counts !== undefined && counts.accepted + counts.refused >= 2 ? counts : undefined;
      },
      { timeoutMs: 20_000, what: 'playAudio counted by the simulator' },
    );
    expect(played).toEqual({ accepted: 1, refused: 1, audioMs: 100 });

    expect(await waitForEvents(streamId, 1)).toEqual([
      {
        account_id: ACCOUNT.authId,
        call_uuid: call,
        event: 'StartStream',
        stream_status: 'connected',
        error: null,
      },
    ]);
    // The stream's record, looked up after its event, takes its status.
    const lookup = await runTelesync(['lookup', 'streams', call], env);
    expect(lookup.code, lookup.stderr).toBe(0);
    expect(await streamRow(streamId)).toEqual({ status: 'connected', end_time: null });
  });

  it('stops: StopStream is stored and the stream row says stopped; the call is queued for its billing', async () => {
    await admin('POST', `streams/${streamId}/stop`);
    const events = await waitForEvents(streamId, 2);
    expect(events.map((row) => [row.event, row.stream_status])).toEqual([
      ['StartStream', 'connected'],
      ['StopStream', 'stopped'],
    ]);
    expect((await streamRow(streamId))?.status).toBe('stopped');
    const queued = await cli.database.inspect(({ db }) =>
      db.selectFrom('call_stream_refs').select('call_uuid').execute(),
    );
    expect(queued.map((row) => row.call_uuid)).toContain(liveCalls[0]);
  });

  it('fails to connect: DroppedStream with the error, and the stream is failed', async () => {
    const call = liveCalls[1]!;
    const failedId = await startStream(call, [
      '--url',
      `${media.url}/reject-me`,
      '--callback-method',
      'GET',
    ]);
    const [dropped] = await waitForEvents(failedId, 1);
    expect(dropped).toMatchObject({
      event: 'DroppedStream',
      stream_status: 'failed',
      error: expect.stringMatching(/\S/) as unknown,
    });
    const lookup = await runTelesync(['lookup', 'streams', call], env);
    expect(lookup.code, lookup.stderr).toBe(0);
    expect((await streamRow(failedId))?.status).toBe('failed');
    // The GET callback reached telesync through the public address with its fields in the query.
    expect(
      captured.some(
        (callback) =>
          callback.method === 'GET' &&
          callback.url.includes(`StreamID=${failedId}`) &&
          callback.status === 200,
      ),
    ).toBe(true);
  });

  it('refuses a replayed, a forged and an unsigned callback with 403, storing nothing, and counts them', async () => {
    const genuine = captured.find(
      (callback) =>
        callback.method === 'POST' &&
        callback.status === 200 &&
        callback.body.includes('Event=StartStream'),
    );
    expect(genuine, 'a genuine StartStream callback went through the public address').toBeDefined();
    const before = await eventCount();
    const send = (headers: Record<string, string>, body: string) =>
      fetch(`http://127.0.0.1:${schedulePort}/callbacks/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
    const signedHeaders = forwardedHeaders(genuine!.headers);
    const replayed = await send(signedHeaders, genuine!.body);
    const forged = await send(
      signedHeaders,
      genuine!.body.replace(/StreamID=[^&]+/, 'StreamID=forged-stream'),
    );
    const unsigned = await send({}, genuine!.body);
    expect([replayed.status, forged.status, unsigned.status]).toEqual([403, 403, 403]);
    expect(await replayed.json()).toMatchObject({ error: 'replayed' });
    expect(await forged.json()).toMatchObject({ error: 'forged' });
    expect(await unsigned.json()).toMatchObject({ error: 'unsigned' });
    expect(await eventCount()).toBe(before);
    expect(await storedEvents('forged-stream')).toEqual([]);

    const samples = parsePrometheusText(
      await (await fetch(`http://127.0.0.1:${schedulePort}/metrics`)).text(),
    );
    const counted = (outcome: string, reason: string) =>
      sumOf(samples, 'telesync_stream_callbacks_total', { outcome, reason });
    expect({
      replayed: counted('refused', 'replayed'),
      forged: counted('refused', 'forged'),
      unsigned: counted('refused', 'unsigned'),
    }).toEqual({ replayed: 1, forged: 1, unsigned: 1 });
    expect(counted('accepted', 'stored')).toBe(3);
    const simStats = (await admin('GET', 'stats')) as StreamStatsOfSimulator;
    expect(simStats.callbacks).toMatchObject({ delivered: 3, failed: 0 });
    expect(scheduler.stderr()).not.toContain(ACCOUNT.authToken);
  });
});

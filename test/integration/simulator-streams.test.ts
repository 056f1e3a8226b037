import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildPlayAudioMessage } from '../../src/api/play-audio.js';
import { parseStreamCallback } from '../../src/api/stream-callback.js';
import {
  SIGNATURE_V3_HEADER,
  SIGNATURE_V3_NONCE_HEADER,
  verifyStreamCallbackV3,
} from '../../src/api/stream-callback-signature.js';
import type { StartStreamParams } from '../../src/api/stream-rules.js';
import { decodeMulaw } from '../../src/simulator/media/stream-audio.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { parseEpochMicros } from '../../src/util/micros.js';
import {
  startCallbackReceiver,
  type CallbackReceiver,
  type ReceivedCallback,
} from '../support/callback-receiver.js';
import { inheritedFakedClock } from '../support/faked-clock.js';
import { startMediaServer, waitFor, type MediaServer } from '../support/media-server.js';
import {
  createTestCertificateAuthority,
  type TestCertificateAuthority,
} from '../support/test-certificate-authority.js';

// The whole life of a stream over real sockets on 127.0.0.1: the simulator opens the stream's
// WebSocket to a local TLS media server it trusts through a test CA, streams generated audio,
// checks the playAudio messages it gets back, and calls a local receiver back on each occasion,
// signed as the service signs (checked with telesync's verifier and the official library's).

const plivo = createRequire(import.meta.url)('plivo') as {
  validateV3Signature(
    method: string,
    uri: string,
    nonce: string,
    authToken: string,
    signature: string,
    params?: Record<string, string>,
  ): boolean;
};

const ACCOUNT = { authId: 'MASTREAMS00000000001', authToken: 'streams-token-0123456789abcdefghij' };
const A = `/v1/Account/${ACCOUNT.authId}`;
const AUDIO_SECONDS = 0.2;
const FRAMES = 10;
const RETRY = { attempts: 3, baseDelayMs: 20, maxDelayMs: 80, timeoutMs: 2000 };

let ca: TestCertificateAuthority;
let media: MediaServer;
let receiver: CallbackReceiver;
let sim: RunningSimulator;
let nextCall = 0;

beforeAll(async () => {
  ca = createTestCertificateAuthority();
  media = await startMediaServer({ cert: ca.serverCertPem, key: ca.serverKeyPem });
  receiver = await startCallbackReceiver();
  sim = await startSimulator({
    seed: 'streams-life',
    calls: 100,
    liveCalls: 30,
    accounts: [ACCOUNT],
    connectMedia: true,
    mediaCa: ca.caPem,
    streamAudioSeconds: AUDIO_SECONDS,
    callbackRetry: RETRY,
  });
});

afterAll(async () => {
  await sim?.close();
  await media?.close();
  await receiver?.close();
  ca?.remove();
});

beforeEach(() => {
  sim.resetStats();
  receiver.failNext = 0;
  receiver.failAll = false;
  receiver.hang = false;
});

function authorization(): string {
  return `Basic ${Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64')}`;
}

/** Starts a stream on a live call of its own; returns the call and the stream_id. */
async function startStream(
  params: StartStreamParams,
  on: RunningSimulator = sim,
): Promise<{ call: string; streamId: string }> {
  const call = on.dataset().accounts[0]!.liveCallUuids[nextCall++]!;
  const response = await fetch(`${on.url}${A}/Call/${call}/Stream/`, {
    method: 'POST',
    headers: { authorization: authorization() },
    body: JSON.stringify(params),
  });
  const body = (await response.json()) as { stream_id: string };
  expect(response.status, JSON.stringify(body)).toBe(201);
  return { call, streamId: body.stream_id };
}

async function streamRecord(call: string, streamId: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${sim.url}${A}/Call/${call}/Stream/`, {
    headers: { authorization: authorization() },
  });
  const body = (await response.json()) as { objects: Record<string, unknown>[] };
  return body.objects.find((record) => record.stream_id === streamId)!;
}

async function admin(method: string, path: string, on: RunningSimulator = sim) {
  const response = await fetch(`${on.url}/__admin/${path}`, { method });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function adminStream(streamId: string, on: RunningSimulator = sim) {
  const { body } = await admin('GET', 'streams', on);
  return (body.streams as Record<string, unknown>[]).find((s) => s.stream_id === streamId)!;
}

/** The callbacks received for a stream, in arrival order. */
function callbacksOf(streamId: string): ReceivedCallback[] {
  return receiver.received.filter((callback) => callback.fields.StreamID === streamId);
}

/** Waits until the stream's callbacks that were answered 200 name these events. */
async function deliveredEvents(streamId: string, events: string[]): Promise<ReceivedCallback[]> {
  return waitFor(
    () => {
      const delivered = callbacksOf(streamId).filter((callback) => callback.status === 200);
      return delivered.length >= events.length ? delivered : undefined;
    },
    5000,
    `callbacks ${events.join(', ')} of ${streamId}`,
  ).then((delivered) => {
    expect(delivered.map((callback) => callback.fields.Event)).toEqual(events);
    return delivered;
  });
}

/** Checks a callback's signature with telesync's verifier and the official library's. */
function expectSigned(callback: ReceivedCallback): void {
  const nonce = String(callback.headers[SIGNATURE_V3_NONCE_HEADER.toLowerCase()]);
  const signature = String(callback.headers[SIGNATURE_V3_HEADER.toLowerCase()]);
  const method = callback.method as 'GET' | 'POST';
  const params = method === 'POST' ? callback.form : undefined;
  expect(nonce).toMatch(/^\d{20}$/);
  expect(
    verifyStreamCallbackV3({
      method,
      url: callback.fullUrl,
      ...(params === undefined ? {} : { params }),
      nonce,
      signature,
      authToken: ACCOUNT.authToken,
    }),
  ).toEqual({ valid: true });
  expect(
    plivo.validateV3Signature(
      method,
      callback.fullUrl,
      nonce,
      ACCOUNT.authToken,
      signature,
      params ?? {},
    ),
  ).toBe(true);
  expect(
    verifyStreamCallbackV3({
      method,
      url: callback.fullUrl,
      ...(params === undefined ? {} : { params }),
      nonce,
      signature,
      authToken: `${ACCOUNT.authToken}x`,
    }).valid,
  ).toBe(false);
}

/** Checks the fields are exactly what telesync reads, for this stream and call. */
function expectFields(
  callback: ReceivedCallback,
  ids: { call: string; streamId: string },
  error?: RegExp,
): void {
  const names = ['CallUUID', 'Event', 'StreamID', 'Timestamp', ...(error ? ['Error'] : [])].sort();
  expect(
    Object.keys(callback.fields)
      .filter((name) => name !== 'source')
      .sort(),
  ).toEqual(names);
  const parsed = parseStreamCallback(callback.fields);
  expect(parsed.ok).toBe(true);
  if (!parsed.ok) return;
  expect(parsed.event).toMatchObject({ known: true, streamId: ids.streamId, callUuid: ids.call });
  expect(callback.fields.Timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\+00:00$/);
  // Sent within moments of now (telesync refuses a Timestamp more than 10 minutes away).
  expect(Math.abs(parsed.event.eventTimeMicros / 1000 - Date.now())).toBeLessThan(60_000);
  if (error) expect(parsed.event.error).toMatch(error);
  else expect(parsed.event.error).toBeNull();
}

describe('a bidirectional stream, stopped through the admin API', () => {
  it('opens the WebSocket, sends start with the extra headers and format, then paced 20 ms frames', async () => {
    const ids = await startStream({
      service_url: `${media.url}/bidi?room=1`,
      bidirectional: true,
      content_type: 'audio/x-l16;rate=16000',
      extra_headers: 'tenant=acme,session=42',
      stream_timeout: 600,
      status_callback_url: `${receiver.url}/callbacks/bidi`,
    });
    const session = await media.session('/bidi?room=1');
    await waitFor(() => session.messages.length >= 1 + FRAMES, 5000, 'the audio');
    const [start, ...frames] = session.messages;
    expect(start).toEqual({
      event: 'start',
      sequenceNumber: 1,
      start: {
        callId: ids.call,
        streamId: ids.streamId,
        accountId: ACCOUNT.authId,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 },
      },
      extra_headers: 'tenant=acme,session=42',
    });
    expect(frames).toHaveLength(FRAMES);
    frames.forEach((frame, k) => {
      expect(frame).toMatchObject({
        event: 'media',
        sequenceNumber: k + 2,
        streamId: ids.streamId,
        media: { track: 'inbound', chunk: k + 1 },
        extra_headers: 'tenant=acme,session=42',
      });
      const audio = Buffer.from((frame.media as { payload: string }).payload, 'base64');
      // 20 ms of 16-bit samples at 16 kHz, and a tone rather than silence.
      expect(audio).toHaveLength(640);
      const samples = Array.from({ length: 320 }, (_, i) => audio.readInt16LE(i * 2));
      expect(Math.max(...samples.map(Math.abs))).toBeGreaterThan(4000);
    });
    const times = frames.map((frame) => Number((frame.media as { timestamp: string }).timestamp));
    expect(times.slice(1).map((time, k) => time - times[k]!)).toEqual(Array(FRAMES - 1).fill(20));
    expect(Math.abs(times[0]! - Date.now())).toBeLessThan(60_000);

    const [started] = await deliveredEvents(ids.streamId, ['StartStream']);
    expect(started!.method).toBe('POST');
    expect(started!.url).toBe('/callbacks/bidi');
    expect(started!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expectSigned(started!);
    expectFields(started!, ids);
    expect(await adminStream(ids.streamId)).toMatchObject({ status: 'connected', error: null });

    // playAudio: two valid (100 ms and 50 ms of L16 at 16 kHz, the stream's format), five invalid
    // (two of another format than the stream's); a checkpoint is answered.
    const l16 = buildPlayAudioMessage({
      contentType: 'audio/x-l16',
      sampleRate: 16000,
      audio: new Uint8Array(3200),
      streamId: ids.streamId,
    });
    const shorter = buildPlayAudioMessage({
      contentType: 'audio/x-l16',
      sampleRate: 16000,
      audio: new Uint8Array(1600),
    });
    const invalid = [
      JSON.stringify(
        buildPlayAudioMessage({
          contentType: 'audio/x-mulaw',
          sampleRate: 16000,
          audio: new Uint8Array(400),
        }),
      ),
      JSON.stringify(
        buildPlayAudioMessage({
          contentType: 'audio/x-l16',
          sampleRate: 8000,
          audio: new Uint8Array(400),
        }),
      ),
      JSON.stringify({
        event: 'playAudio',
        media: { contentType: 'audio/x-l16', sampleRate: 16000, payload: 'not base64!' },
      }),
      JSON.stringify({ ...l16, event: 'playaudio' }),
      'this is not JSON',
    ];
    for (const text of [JSON.stringify(l16), JSON.stringify(shorter), ...invalid])
      session.socket.send(text);
    session.socket.send(
      JSON.stringify({ event: 'checkpoint', streamId: ids.streamId, name: 'hi' }),
    );
    const played = await waitFor(
      () => session.messages.find((message) => message.event === 'playedStream'),
      5000,
      'playedStream',
    );
    expect(played).toEqual({ event: 'playedStream', streamId: ids.streamId, name: 'hi' });
    const stats = await waitFor(
      () => {
        const snapshot = sim.stats();
        const counts = snapshot.streams.byStream[ids.streamId]?.playAudio;
        return counts !== undefined && counts.accepted + counts.refused === 7
          ? snapshot
          : undefined;
      },
      5000,
      'the playAudio counts',
    );
    expect(stats.streams.byStream[ids.streamId]).toEqual({
      messagesSent: 1 + FRAMES,
      playAudio: { accepted: 2, refused: 5, audioMs: 150 },
      lastRefusal: 'invalid playAudio: the message is not JSON',
    });
    expect(stats.streams.playAudio).toEqual({ accepted: 2, refused: 5, audioMs: 150 });
    // Refused messages are ignored: the stream goes on.
    expect(session.socket.readyState).toBe(session.socket.OPEN);
    // A valid playAudio in another format than the stream's is refused with both formats named.
    session.socket.send(
      JSON.stringify(
        buildPlayAudioMessage({
          contentType: 'audio/x-mulaw',
          sampleRate: 8000,
          audio: new Uint8Array(400),
        }),
      ),
    );
    const mismatched = await waitFor(
      () => {
        const counts = sim.stats().streams.byStream[ids.streamId];
        return counts?.playAudio.refused === 6 ? counts : undefined;
      },
      5000,
      'the refusal of another format',
    );
    expect(mismatched).toMatchObject({
      playAudio: { accepted: 2, refused: 6, audioMs: 150 },
      lastRefusal:
        "playAudio of audio/x-mulaw;rate=8000 on a stream of audio/x-l16;rate=16000: send audio in the stream's content_type",
    });

    const stopped = await admin('POST', `streams/${ids.streamId}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ stream_id: ids.streamId, status: 'stopped' });
    expect(await session.closed).toBe(1000);
    const delivered = await deliveredEvents(ids.streamId, ['StartStream', 'StopStream']);
    for (const callback of delivered) expectSigned(callback);
    expectFields(delivered[1]!, ids);
    expect(parseEpochMicros(delivered[1]!.fields.Timestamp!)!).toBeGreaterThan(
      parseEpochMicros(delivered[0]!.fields.Timestamp!)!,
    );
    expect(sim.stats().streams).toMatchObject({ started: 1, connected: 1, stopped: 1 });

    // Billed from start to stop in whole seconds (a second or two here), by the minute rounded up.
    const record = await streamRecord(ids.call, ids.streamId);
    expect(record).toMatchObject({
      bidirectional: true,
      rounded_bill_duration: 60,
      billed_amount: '0.00300',
    });
    expect(record.bill_duration).toBeGreaterThanOrEqual(1);
    expect(record.bill_duration).toBeLessThan(30);
    expect(record.end_time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00$/);
    expect(
      parseEpochMicros(String(record.end_time))! - parseEpochMicros(String(record.start_time))!,
    ).toBe((record.bill_duration as number) * 1_000_000);

    const again = await admin('POST', `streams/${ids.streamId}/stop`);
    expect(again.status).toBe(409);
    expect(String(again.body.error)).toMatch(/already ended \(stopped\)/);
    expect((await admin('POST', 'streams/00000000-0000-4000-8000-000000000000/stop')).status).toBe(
      404,
    );
  });
});

describe('a one-way stream of both tracks in µ-law, called back by GET, ended by its timeout', () => {
  it('sends both tracks, refuses playAudio, and stops at stream_timeout', async () => {
    const ids = await startStream({
      service_url: `${media.url}/both`,
      audio_track: 'both',
      content_type: 'audio/x-mulaw;rate=8000',
      stream_timeout: 1,
      status_callback_url: `${receiver.url}/callbacks/timeout?source=sim`,
      status_callback_method: 'GET',
    });
    const session = await media.session('/both');
    await waitFor(() => session.messages.length >= 1 + 2 * FRAMES, 5000, 'the audio');
    const [start, ...frames] = session.messages;
    expect(start).toMatchObject({
      start: {
        tracks: ['inbound', 'outbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
      },
    });
    expect(start).not.toHaveProperty('extra_headers');
    for (const track of ['inbound', 'outbound']) {
      const mine = frames.filter((frame) => (frame.media as { track: string }).track === track);
      expect(mine.map((frame) => (frame.media as { chunk: number }).chunk)).toEqual(
        Array.from({ length: FRAMES }, (_, k) => k + 1),
      );
      for (const frame of mine) {
        const audio = Buffer.from((frame.media as { payload: string }).payload, 'base64');
        expect(audio).toHaveLength(160);
        expect(
          Math.max(...Array.from(audio, (byte) => Math.abs(decodeMulaw(byte)))),
        ).toBeGreaterThan(4000);
      }
    }
    expect(frames.map((frame) => frame.sequenceNumber)).toEqual(
      Array.from({ length: 2 * FRAMES }, (_, k) => k + 2),
    );

    session.socket.send(
      JSON.stringify(
        buildPlayAudioMessage({
          contentType: 'audio/x-mulaw',
          sampleRate: 8000,
          audio: new Uint8Array(80),
        }),
      ),
    );
    await waitFor(
      () => sim.stats().streams.byStream[ids.streamId]?.playAudio.refused === 1,
      5000,
      'the refused playAudio',
    );
    const refused = sim.stats().streams.byStream[ids.streamId];
    expect(refused?.playAudio).toEqual({ accepted: 0, refused: 1, audioMs: 0 });
    expect(refused?.lastRefusal).toMatch(/not bidirectional/);

    expect(await session.closed).toBe(1000);
    const delivered = await deliveredEvents(ids.streamId, ['StartStream', 'StopStream']);
    for (const callback of delivered) {
      expect(callback.method).toBe('GET');
      expect(callback.url).toMatch(/^\/callbacks\/timeout\?source=sim&/);
      expectSigned(callback);
      expectFields(callback, ids);
    }
    expect(sim.stats().streams).toMatchObject({ started: 1, connected: 1, timedOut: 1 });
    const record = await streamRecord(ids.call, ids.streamId);
    expect(record).toMatchObject({ bill_duration: 1, rounded_bill_duration: 60 });
    expect(
      parseEpochMicros(String(record.end_time))! - parseEpochMicros(String(record.start_time))!,
    ).toBe(1_000_000);
    expect(await adminStream(ids.streamId)).toMatchObject({ status: 'timed-out' });
  });
});

describe('disconnected streams', () => {
  it('reports DroppedStream with the close code when the media server closes the socket', async () => {
    const ids = await startStream({
      service_url: `${media.url}/hangup`,
      status_callback_url: `${receiver.url}/callbacks/hangup`,
    });
    const session = await media.session('/hangup');
    await deliveredEvents(ids.streamId, ['StartStream']);
    session.socket.close(4000, 'bye');
    const delivered = await deliveredEvents(ids.streamId, ['StartStream', 'DroppedStream']);
    expectSigned(delivered[1]!);
    expectFields(delivered[1]!, ids, /closed the connection \(code 4000: bye\)/);
    expect(await adminStream(ids.streamId)).toMatchObject({ status: 'disconnected' });
    expect((await streamRecord(ids.call, ids.streamId)).end_time).not.toBeNull();
    expect(sim.stats().streams).toMatchObject({ connected: 1, disconnected: 1 });
  });

  it('drops the connection on an admin disconnect: the media server sees it lost (1006)', async () => {
    const ids = await startStream({
      service_url: `${media.url}/drop`,
      status_callback_url: `${receiver.url}/callbacks/drop`,
    });
    const session = await media.session('/drop');
    await deliveredEvents(ids.streamId, ['StartStream']);
    const dropped = await admin('POST', `streams/${ids.streamId}/disconnect`);
    expect(dropped.status).toBe(200);
    expect(dropped.body).toMatchObject({ status: 'disconnected' });
    expect(await session.closed).toBe(1006);
    const delivered = await deliveredEvents(ids.streamId, ['StartStream', 'DroppedStream']);
    expectFields(delivered[1]!, ids, /lost/);
    const again = await admin('POST', `streams/${ids.streamId}/disconnect`);
    expect(again.status).toBe(409);
  });
});

describe('streams that fail to connect', () => {
  async function closedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as { port: number };
    await new Promise<void>((done) => server.close(() => done()));
    return port;
  }

  it('reports DroppedStream with the reason, bills nothing, and never sends StartStream', async () => {
    const port = await closedPort();
    const cases = [
      { url: `wss://127.0.0.1:${port}/nobody`, error: /refused the connection/ },
      { url: `${media.url}/reject`, error: /answered HTTP 403 instead of switching protocols/ },
    ];
    for (const { url, error } of cases) {
      const ids = await startStream({
        service_url: url,
        status_callback_url: `${receiver.url}/callbacks/failed`,
      });
      const [dropped] = await deliveredEvents(ids.streamId, ['DroppedStream']);
      expectSigned(dropped!);
      expectFields(dropped!, ids, error);
      expect(await adminStream(ids.streamId)).toMatchObject({
        status: 'failed',
        connected_at: null,
      });
      const record = await streamRecord(ids.call, ids.streamId);
      expect(record).toMatchObject({ bill_duration: 0, rounded_bill_duration: 0 });
      expect(record.end_time).toBe(record.start_time);
    }
    expect(sim.stats().streams).toMatchObject({ started: 2, connected: 0, failed: 2 });
    expect(media.sessions.some((session) => session.path === '/nobody')).toBe(false);
  });

  it('fails the connect to a server whose certificate it cannot verify without the test CA', async () => {
    const untrusting = await startSimulator({
      seed: 'streams-untrusting',
      calls: 10,
      accounts: [ACCOUNT],
      connectMedia: true,
    });
    try {
      const call = untrusting.dataset().accounts[0]!.liveCallUuids[0]!;
      const response = await fetch(`${untrusting.url}${A}/Call/${call}/Stream/`, {
        method: 'POST',
        headers: { authorization: authorization() },
        body: JSON.stringify({ service_url: `${media.url}/untrusted` }),
      });
      const { stream_id: streamId } = (await response.json()) as { stream_id: string };
      const failed = await pollAdminStream(untrusting, streamId, 'failed');
      expect(String(failed.error)).toMatch(/certificate/i);
      expect(media.sessions.some((session) => session.path === '/untrusted')).toBe(false);
    } finally {
      await untrusting.close();
    }
  });
});

async function pollAdminStream(
  on: RunningSimulator,
  streamId: string,
  status: string,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const stream = await adminStream(streamId, on);
    if (stream.status === status) return stream;
    if (Date.now() > deadline)
      throw new Error(`stream ${streamId} is ${String(stream.status)}, not ${status}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

describe('callback retries', () => {
  it('retries a failing receiver with a fresh nonce each time until it takes the callback', async () => {
    receiver.failNext = 2;
    const ids = await startStream({
      service_url: `${media.url}/retry`,
      status_callback_url: `${receiver.url}/callbacks/retry`,
    });
    await deliveredEvents(ids.streamId, ['StartStream']);
    const attempts = callbacksOf(ids.streamId);
    expect(attempts.map((attempt) => attempt.status)).toEqual([500, 500, 200]);
    for (const attempt of attempts) expectSigned(attempt);
    // The same callback each time (stored once by telesync), under a new nonce.
    expect(new Set(attempts.map((attempt) => JSON.stringify(attempt.fields))).size).toBe(1);
    expect(
      new Set(attempts.map((attempt) => attempt.headers[SIGNATURE_V3_NONCE_HEADER.toLowerCase()]))
        .size,
    ).toBe(3);
    // The receiver has answered; the simulator counts the delivery once that answer reaches it.
    await waitFor(() => sim.stats().callbacks.delivered === 1, 5000, 'the delivery counted');
    expect(sim.stats().callbacks).toEqual({ sent: 3, delivered: 1, failed: 0, retried: 2 });

    // A receiver that keeps failing: given up after the last attempt.
    receiver.failAll = true;
    expect((await admin('POST', `streams/${ids.streamId}/stop`)).status).toBe(200);
    await waitFor(() => sim.stats().callbacks.failed === 1, 5000, 'the callback given up');
    expect(sim.stats().callbacks).toEqual({ sent: 6, delivered: 1, failed: 1, retried: 4 });
    expect(callbacksOf(ids.streamId).map((attempt) => attempt.fields.Event)).toEqual([
      'StartStream',
      'StartStream',
      'StartStream',
      'StopStream',
      'StopStream',
      'StopStream',
    ]);
  });
});

describe('closing the simulator', () => {
  it('leaves nothing running: a process with a connected stream and a callback retry pending exits by itself', async () => {
    receiver.failAll = true;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', resolve(import.meta.dirname, '../support/close-simulator-child.ts')],
      {
        cwd: resolve(import.meta.dirname, '../..'),
        env: {
          PATH: process.env.PATH ?? '',
          // Under `faketime … vitest`, the child trusts the media server's certificate, made on
          // the faked clock, only on the same clock.
          ...inheritedFakedClock(),
          MEDIA_URL: `${media.url}/closing`,
          CALLBACK_URL: `${receiver.url}/callbacks/closing`,
          MEDIA_CA: ca.caFile,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    const session = await media.session('/closing', 15_000);
    const outcome = await Promise.race([
      exited,
      new Promise<'still running'>((done) => setTimeout(() => done('still running'), 15_000)),
    ]);
    if (outcome === 'still running') child.kill('SIGKILL');
    expect(outcome, output).toBe(0);
    expect(output).toContain('closed with the stream connected and a callback retry pending');
    expect(await session.closed).toBe(1006);
  });
});

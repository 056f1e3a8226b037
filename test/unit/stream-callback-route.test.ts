import { describe, expect, it } from 'vitest';
import { CallbackNonceLedger } from '../../src/api/callback-replay-guard.js';
import { signStreamCallbackV3 } from '../../src/api/stream-callback-signature.js';
import type {
  StreamEventInput,
  StreamEventOutcome,
} from '../../src/db/repositories/stream-events-repository.js';
import {
  createStreamCallbackReceiver,
  type StreamCallbackRequest,
  type StreamCallbackVerdict,
} from '../../src/http/stream-callback-route.js';
import { createLogger } from '../../src/util/logger.js';
import { formatIsoMicros, toEpochMicros } from '../../src/util/micros.js';

const CALLBACK_URL = 'https://telesync.example.com/callbacks/stream';
const ACCOUNTS = [
  { authId: 'MA_ONE', authToken: 'token-of-one' },
  { authId: 'MA_TWO', authToken: 'token-of-two' },
];
const NOW = toEpochMicros('2026-01-05T10:00:00.000000Z');

function fields(streamId: string, event = 'StartStream'): Record<string, string> {
  return {
    Event: event,
    StreamID: streamId,
    CallUUID: `call-${streamId}`,
    Timestamp: formatIsoMicros(NOW - 1_876_544),
  };
}

function post(
  body: Record<string, string>,
  options: { token?: string; nonce?: string } = {},
): StreamCallbackRequest {
  const nonce = options.nonce ?? `nonce-${Math.random()}`;
  return {
    method: 'POST',
    query: '',
    contentType: 'application/x-www-form-urlencoded',
    body: new URLSearchParams(body).toString(),
    nonce,
    signature: signStreamCallbackV3({
      method: 'POST',
      url: CALLBACK_URL,
      params: body,
      nonce,
      authToken: options.token ?? 'token-of-one',
    }),
  };
}

interface Harness {
  readonly receive: ReturnType<typeof createStreamCallbackReceiver>;
  readonly stored: StreamEventInput[];
  readonly verdicts: StreamCallbackVerdict[];
  readonly nonces: CallbackNonceLedger;
}

function harness(
  store: (input: StreamEventInput) => Promise<StreamEventOutcome> = () =>
    Promise.resolve({ stored: true, eventStatus: 'connected', streamStatus: 'connected' }),
  extra: { callbackUrl?: string; logLines?: string[]; now?: () => number } = {},
): Harness {
  const stored: StreamEventInput[] = [];
  const verdicts: StreamCallbackVerdict[] = [];
  const nonces = new CallbackNonceLedger();
  const receive = createStreamCallbackReceiver({
    path: '/callbacks/stream',
    callbackUrl: extra.callbackUrl ?? CALLBACK_URL,
    accounts: ACCOUNTS,
    storeEvent: async (input) => {
      const outcome = await store(input);
      stored.push(input);
      return outcome;
    },
    nonces,
    now: extra.now ?? (() => NOW),
    onVerdict: (verdict) => verdicts.push(verdict),
    log: createLogger({
      level: extra.logLines === undefined ? 'silent' : 'warn',
      secrets: [],
      pretty: false,
      write: (line) => extra.logLines?.push(line),
    }),
    maxBodyBytes: 1024,
  });
  return { receive, stored, verdicts, nonces };
}

describe('the stream callback receiver', () => {
  it('stores a signed callback under the account whose token signed it', async () => {
    const subject = harness();
    const answer = await subject.receive(post(fields('s-1'), { token: 'token-of-two' }));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({
      accepted: true,
      stored: true,
      event: 'StartStream',
      stream_id: 's-1',
      stream_status: 'connected',
    });
    expect(subject.stored).toEqual([
      {
        accountId: 'MA_TWO',
        callUuid: 'call-s-1',
        streamId: 's-1',
        event: 'StartStream',
        eventTime: '2026-01-05T09:59:58.123456Z',
        error: null,
        deliveryKey: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
        fields: fields('s-1'),
        nulEscaped: false,
        nonce: {
          value: expect.stringMatching(/^nonce-/) as unknown,
          until: NOW - 1_876_544 + 600 * 1_000_000,
          signature: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/) as unknown,
        },
      },
    ]);
    expect(subject.verdicts).toEqual([{ outcome: 'accepted', reason: 'stored' }]);
  });

  it('remembers the nonce only once stored: a failed store answers 503 and the same delivery can come again', async () => {
    let failures = 1;
    const subject = harness(() => {
      if (failures-- > 0) return Promise.reject(new Error('connection terminated'));
      return Promise.resolve({ stored: true, eventStatus: 'connected', streamStatus: 'connected' });
    });
    const request = post(fields('s-2'), { nonce: 'n-retry' });
    const failed = await subject.receive(request);
    expect(failed.status).toBe(503);
    expect(failed.body).not.toContain('connection terminated');
    expect(subject.nonces.size).toBe(0);
    expect((await subject.receive(request)).status).toBe(200);
    expect(subject.nonces.size).toBe(1);
    expect((await subject.receive(request)).status).toBe(403);
    expect(subject.verdicts).toEqual([
      { outcome: 'failed', reason: 'store_failed' },
      { outcome: 'accepted', reason: 'stored' },
      { outcome: 'refused', reason: 'replayed' },
    ]);
  });

  it('refuses a copy that arrives while the original is being stored', async () => {
    let release: () => void = () => {};
    const subject = harness(
      () =>
        new Promise((resolve) => {
          release = () => resolve({ stored: true, eventStatus: null, streamStatus: null });
        }),
    );
    const request = post(fields('s-3'), { nonce: 'n-twice' });
    const first = subject.receive(request);
    const copy = await subject.receive(request);
    release();
    expect(copy.status).toBe(403);
    expect(copy.verdict).toEqual({ outcome: 'refused', reason: 'replayed' });
    expect((await first).status).toBe(200);
    expect(subject.stored).toHaveLength(1);
  });

  it('answers a stored duplicate 200 without storing it again', async () => {
    const subject = harness(() =>
      Promise.resolve({ stored: false, eventStatus: null, streamStatus: 'connected' }),
    );
    const answer = await subject.receive(post(fields('s-4')));
    expect(answer.status).toBe(200);
    expect(answer.verdict).toEqual({ outcome: 'accepted', reason: 'duplicate' });
    expect(JSON.parse(answer.body)).toMatchObject({ stored: false });
  });

  it('refuses, storing nothing: unsigned, without nonce, forged, stale, future, malformed, too large, JSON', async () => {
    const subject = harness();
    const good = post(fields('s-5'));
    const cases: [string, StreamCallbackRequest, number][] = [
      ['unsigned', { ...good, signature: undefined }, 403],
      ['no_nonce', { ...good, nonce: undefined }, 403],
      ['forged', post(fields('s-5'), { token: 'token-of-nobody' }), 403],
      ['forged', { ...good, body: `${good.body as string}&Error=x` }, 403],
      [
        'stale',
        post({ ...fields('s-5'), Timestamp: formatIsoMicros(NOW - 11 * 60 * 1_000_000) }),
        403,
      ],
      [
        'future',
        post({ ...fields('s-5'), Timestamp: formatIsoMicros(NOW + 11 * 60 * 1_000_000) }),
        403,
      ],
      ['malformed', post({ Event: 'StartStream', StreamID: 's-5' }), 400],
      ['too_large', { ...good, body: { tooLarge: true } }, 413],
      ['unsupported_media_type', { ...good, contentType: 'text/plain' }, 415],
    ];
    for (const [reason, request, status] of cases) {
      const answer = await subject.receive(request);
      expect([reason, answer.status]).toEqual([reason, status]);
      expect(answer.verdict).toEqual({ outcome: 'refused', reason });
      expect(JSON.parse(answer.body)).toMatchObject({ error: reason });
    }
    expect(subject.stored).toEqual([]);
    expect(subject.nonces.size).toBe(0);
  });

  it('verifies a GET against the callback URL plus its query, never another host', async () => {
    const subject = harness();
    const query = new URLSearchParams(fields('s-6', 'StopStream')).toString();
    const sign = (url: string) =>
      signStreamCallbackV3({ method: 'GET', url, nonce: 'n-get', authToken: 'token-of-one' });
    const request: StreamCallbackRequest = {
      method: 'GET',
      query,
      contentType: undefined,
      body: '',
      nonce: 'n-get',
      signature: sign(`http://127.0.0.1:9464/callbacks/stream?${query}`),
    };
    expect((await subject.receive(request)).verdict.reason).toBe('forged');
    const answer = await subject.receive({
      ...request,
      signature: sign(`${CALLBACK_URL}?${query}`),
    });
    expect(answer.status).toBe(200);
    expect(subject.stored.map((input) => [input.accountId, input.event])).toEqual([
      ['MA_ONE', 'StopStream'],
    ]);
  });

  it('refuses a signature header that cannot hold a signature before reading any field', async () => {
    const subject = harness();
    const huge = Array.from({ length: 500 }, (_, i) => `f${i}=${i}`).join('&');
    for (const signature of [
      'junk',
      'a'.repeat(44),
      `${'A'.repeat(43)}=,x`,
      `${'A'.repeat(43)}=,`.repeat(5),
    ]) {
      const answer = await subject.receive({ ...post(fields('s-7')), body: huge, signature });
      expect([signature, answer.verdict.reason]).toEqual([signature, 'forged']);
    }
    // Well-formed but wrong, with more fields than a callback has: refused before any HMAC.
    const wrong = `${'A'.repeat(43)}=`;
    const many = await subject.receive({ ...post(fields('s-7')), body: huge, signature: wrong });
    expect([many.status, many.verdict.reason]).toEqual([400, 'too_many_fields']);
    const query = await subject.receive({
      ...post(fields('s-7')),
      query: Array.from({ length: 100 }, (_, i) => `q${i}=${i}`).join('&'),
    });
    expect(query.verdict.reason).toBe('too_many_fields');
    expect(subject.stored).toEqual([]);
  });

  it('stores a callback whose field names are those of Object.prototype, GET and POST alike', async () => {
    const subject = harness();
    const odd = {
      ...fields('s-8'),
      constructor: '1',
      __proto__: '2',
      toString: '3',
      hasOwnProperty: '4',
    } as Record<string, string>;
    Object.defineProperty(odd, '__proto__', { value: '2', enumerable: true });
    const answer = await subject.receive(post(odd));
    expect([answer.status, answer.verdict.reason]).toEqual([200, 'stored']);
    const query = new URLSearchParams(Object.entries(odd)).toString();
    const get = await subject.receive({
      method: 'GET',
      query,
      contentType: undefined,
      body: '',
      nonce: 'n-proto-get',
      signature: signStreamCallbackV3({
        method: 'GET',
        url: `${CALLBACK_URL}?${query}`,
        nonce: 'n-proto-get',
        authToken: 'token-of-one',
      }),
    });
    expect([get.status, get.verdict.reason]).toEqual([200, 'stored']);
    for (const input of subject.stored)
      expect(Object.keys(input.fields).sort()).toEqual(
        [
          'CallUUID',
          'Event',
          'StreamID',
          'Timestamp',
          '__proto__',
          'constructor',
          'hasOwnProperty',
          'toString',
        ].sort(),
      );
    expect(subject.verdicts).toHaveLength(2);
  });

  it('stores a signed callback with U+0000 escaped (never a retryable answer)', async () => {
    const subject = harness();
    const answer = await subject.receive(
      post({ ...fields('s-9', 'DroppedStream'), Error: 'closed\0', 'Odd\0Name': 'x' }),
    );
    expect([answer.status, answer.verdict.reason]).toEqual([200, 'stored']);
    expect(subject.stored[0]).toMatchObject({
      error: 'closed\\u0000',
      nulEscaped: true,
      fields: { 'Odd\\u0000Name': 'x' },
    });
  });

  it('accepts a JSON object signed over its top-level fields as a form is; other JSON is 400', async () => {
    const subject = harness();
    const body = { ...fields('s-10'), Sequence: 3, Final: true };
    const nonce = 'n-json';
    const signature = signStreamCallbackV3({
      method: 'POST',
      url: CALLBACK_URL,
      params: { ...body, Sequence: '3', Final: 'true' },
      nonce,
      authToken: 'token-of-one',
    });
    const json = (text: string, type = 'application/json'): StreamCallbackRequest => ({
      method: 'POST',
      query: '',
      contentType: `${type}; charset=utf-8`,
      body: text,
      nonce,
      signature,
    });
    const answer = await subject.receive(json(JSON.stringify(body)));
    expect([answer.status, answer.verdict.reason]).toEqual([200, 'stored']);
    expect(subject.stored[0]?.fields).toMatchObject({ Sequence: '3', Final: 'true' });
    for (const text of ['[1,2]', '"text"', 'null', '{"a":{"b":1}}', '{"a":[1]}', '{"a":null}', '{'])
      expect([text, (await subject.receive(json(text))).verdict.reason]).toEqual([
        text,
        'malformed',
      ]);
    const wide = JSON.stringify(
      Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, 'v'])),
    );
    expect((await subject.receive(json(wide))).verdict.reason).toBe('too_many_fields');
    expect(subject.stored).toHaveLength(1);
  });

  it('refuses a nonce another telesync already accepted (the store says replayed)', async () => {
    const subject = harness(() =>
      Promise.resolve({ stored: false, replayed: true, eventStatus: null, streamStatus: null }),
    );
    const answer = await subject.receive(post(fields('s-11')));
    expect([answer.status, answer.verdict]).toEqual([
      403,
      { outcome: 'refused', reason: 'replayed' },
    ]);
  });

  it('answers an unexpected fault 500, counted, with a body that names nothing', async () => {
    const subject = harness(undefined, { callbackUrl: 'not a url' });
    const answer = await subject.receive(post(fields('s-12')));
    expect(answer.status).toBe(500);
    expect(answer.verdict).toEqual({ outcome: 'failed', reason: 'internal_error' });
    expect(answer.body).not.toContain('not a url');
    expect(subject.verdicts).toEqual([{ outcome: 'failed', reason: 'internal_error' }]);
  });

  it('logs refusals of one reason once a minute, with the count held back', async () => {
    const logLines: string[] = [];
    let now = NOW;
    const subject = harness(undefined, { logLines, now: () => now });
    for (let i = 0; i < 5; i++)
      await subject.receive({ ...post(fields('s-13')), signature: 'junk' });
    await subject.receive({ ...post(fields('s-13')), nonce: undefined });
    expect(logLines).toHaveLength(2);
    now += 61 * 1_000_000;
    await subject.receive({ ...post(fields('s-13')), signature: 'junk' });
    expect(logLines).toHaveLength(3);
    expect(logLines[2]).toContain('(4 more like it since)');
    expect(subject.verdicts).toHaveLength(7);
  });
});

import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  buildStreamCallbackSignedUrl,
  SIGNATURE_V3_MAX_CANDIDATES,
  signStreamCallbackV3,
  verifyStreamCallbackV3,
  type CallbackMethod,
  type CallbackParams,
} from '../../src/api/stream-callback-signature.js';

// The official client library, the reference the service's signature is checked against.
const plivo = createRequire(import.meta.url)('plivo') as {
  validateV3Signature(
    method: string,
    uri: string,
    nonce: string,
    authToken: string,
    signature: string,
    params?: Record<string, string | string[]>,
  ): boolean;
};

const TOKEN = 'MzFhYjNlZDk0NTQ2ZDg4NWFmMDc';
const NONCE = '12345678901234567890';

interface Vector {
  name: string;
  method: CallbackMethod;
  url: string;
  params: Record<string, string | string[]>;
  signedUrl: string;
  /** base64(HMAC-SHA256(TOKEN, signedUrl + "." + NONCE)), computed apart from this code (Python hmac). */
  signature: string;
}

const VECTORS: Vector[] = [
  {
    name: 'a POST with form fields',
    method: 'POST',
    url: 'https://telesync.example.com/callbacks/stream',
    params: {
      Event: 'StartStream',
      StreamID: 'abc',
      CallUUID: 'c-1',
      Timestamp: '2026-01-01 10:00:00.123456',
    },
    signedUrl:
      'https://telesync.example.com/callbacks/stream?CallUUIDc-1EventStartStreamStreamIDabcTimestamp2026-01-01 10:00:00.123456',
    signature: 'YY3yctOhA5Tm2MxsvobJgQTds/jcudW2JUIK3tWH+3c=',
  },
  {
    name: 'a GET with the fields in the query string',
    method: 'GET',
    url: 'https://h/cb?Event=StartStream&StreamID=s1&CallUUID=c&Timestamp=2026-01-01+10%3A00%3A00',
    params: {},
    signedUrl:
      'https://h/cb?CallUUID=c&Event=StartStream&StreamID=s1&Timestamp=2026-01-01 10:00:00',
    signature: '0MeQDQ9aHJHeaOm1wJXb8YmSeZ95lsPYUdEhnDV7HGw=',
  },
  {
    name: 'a POST to a URL with a port and a query string, a field given twice',
    method: 'POST',
    url: 'https://telesync.example.com:8443/callbacks/stream?account=MA1&b=x%20y',
    params: { Event: 'StopStream', Error: 'a b+c', Z: ['2', '1'] },
    signedUrl:
      'https://telesync.example.com:8443/callbacks/stream?account=MA1&b=x y.Errora b+cEventStopStreamZ1Z2',
    signature: 'thKAUi1nyOwTZAMoeQMKr/LVhErPojX8i0VBYqu/l58=',
  },
  {
    name: 'a POST without fields',
    method: 'POST',
    url: 'https://h/cb',
    params: {},
    signedUrl: 'https://h/cb',
    signature: 'gWuwap8C02845n5l7tlAr2QtN2ttKgQTSs2O4lDBvK0=',
  },
];

describe('the V3 callback signature', () => {
  describe.each(VECTORS)('$name', (vector) => {
    const input = { method: vector.method, url: vector.url, params: vector.params, nonce: NONCE };

    it('signs the documented text', () => {
      expect(buildStreamCallbackSignedUrl(vector.method, vector.url, vector.params)).toBe(
        vector.signedUrl,
      );
      expect(signStreamCallbackV3({ ...input, authToken: TOKEN })).toBe(vector.signature);
    });

    it('verifies the fixed signature, alone or among others', () => {
      for (const header of [
        vector.signature,
        `${signStreamCallbackV3({ ...input, authToken: 'a-rotated-token' })},${vector.signature}`,
        ` ${vector.signature} `,
      ])
        expect(verifyStreamCallbackV3({ ...input, signature: header, authToken: TOKEN })).toEqual({
          valid: true,
        });
    });

    it("is accepted by the official library's validateV3Signature", () => {
      const signature = signStreamCallbackV3({ ...input, authToken: TOKEN });
      expect(
        plivo.validateV3Signature(
          vector.method,
          vector.url,
          NONCE,
          TOKEN,
          signature,
          vector.params,
        ),
      ).toBe(true);
      expect(
        plivo.validateV3Signature(
          vector.method,
          vector.url,
          NONCE,
          `${TOKEN}x`,
          signature,
          vector.params,
        ),
      ).toBe(false);
    });
  });

  it('refuses a signature made with another token, nonce, URL, method or field', () => {
    const base = {
      method: 'POST' as const,
      url: 'https://t.example.com/callbacks/stream',
      params: { Event: 'StopStream', StreamID: 's1' } as CallbackParams,
      nonce: NONCE,
    };
    const signature = signStreamCallbackV3({ ...base, authToken: TOKEN });
    const tampered = [
      { ...base, authToken: 'another-token' },
      { ...base, nonce: '99999999999999999999', authToken: TOKEN },
      { ...base, url: 'https://t.example.com/callbacks/stream?x=1', authToken: TOKEN },
      { ...base, url: 'http://t.example.com/callbacks/stream', authToken: TOKEN },
      { ...base, method: 'GET' as const, authToken: TOKEN },
      { ...base, params: { Event: 'StartStream', StreamID: 's1' }, authToken: TOKEN },
      { ...base, params: { Event: 'StopStream', StreamID: 's1', Extra: '' }, authToken: TOKEN },
    ];
    for (const input of tampered) {
      const check = verifyStreamCallbackV3({ ...input, signature });
      expect(check).toMatchObject({ valid: false, reason: 'mismatch' });
    }
    expect(verifyStreamCallbackV3({ ...base, signature, authToken: TOKEN })).toEqual({
      valid: true,
    });
  });

  it('refuses a header that cannot hold signatures, even around a valid one', () => {
    const input = { method: 'GET' as const, url: 'https://t.example.com/cb', nonce: NONCE };
    const signature = signStreamCallbackV3({ ...input, authToken: TOKEN });
    const others = Array.from({ length: SIGNATURE_V3_MAX_CANDIDATES }, (_, index) =>
      signStreamCallbackV3({ ...input, authToken: `token-${index}` }),
    );
    for (const header of [
      `${','.repeat(100_000)}${signature}`,
      `${others.join(',')},${signature}`,
      `not-base64,${signature}`,
    ])
      expect(
        verifyStreamCallbackV3({ ...input, signature: header, authToken: TOKEN }),
      ).toMatchObject({ valid: false, reason: 'mismatch' });
  });

  it('names what is missing: the signature, the nonce, an absolute URL', () => {
    const base = { method: 'POST' as const, url: 'https://t/cb', params: {}, authToken: TOKEN };
    expect(verifyStreamCallbackV3({ ...base, nonce: NONCE, signature: undefined })).toMatchObject({
      valid: false,
      reason: 'unsigned',
      message: expect.stringContaining('X-Plivo-Signature-V3') as unknown,
    });
    expect(verifyStreamCallbackV3({ ...base, nonce: NONCE, signature: ' ' })).toMatchObject({
      reason: 'unsigned',
    });
    expect(verifyStreamCallbackV3({ ...base, nonce: '', signature: 'abc' })).toMatchObject({
      reason: 'no_nonce',
      message: expect.stringContaining('X-Plivo-Signature-V3-Nonce') as unknown,
    });
    const relative = verifyStreamCallbackV3({ ...base, url: '/cb', nonce: NONCE, signature: 'x' });
    expect(relative).toMatchObject({ valid: false, reason: 'bad_url' });
  });

  it('never puts the auth token in a refusal', () => {
    const check = verifyStreamCallbackV3({
      method: 'GET',
      url: 'https://t/cb',
      nonce: NONCE,
      signature: 'forged',
      authToken: TOKEN,
    });
    expect(JSON.stringify(check)).not.toContain(TOKEN);
  });

  describe('against signatures the official library accepts', () => {
    // plivo-node exposes no signer: these signatures are built from the algorithm it validates and
    // must pass both its validateV3Signature and our verifier.
    const cases: {
      method: CallbackMethod;
      url: string;
      params: Record<string, string | string[]>;
    }[] = [
      { method: 'GET', url: 'https://h/cb', params: {} },
      { method: 'GET', url: 'https://h/', params: {} },
      { method: 'GET', url: 'http://h/a/b/?b=2&a=1&a=0&flag', params: {} },
      {
        method: 'GET',
        url: 'https://h:9464/callbacks/stream?Event=DroppedStream&Error=Could+not+connect',
        params: {},
      },
      { method: 'POST', url: 'https://h/cb?x=1', params: {} },
      { method: 'POST', url: 'https://h/cb?x=1&y=%2F', params: { Event: 'StopStream', Error: '' } },
      {
        method: 'POST',
        url: 'https://h/cb',
        params: { Error: 'Connection disconnected with the remote service' },
      },
      // Non-ASCII text is signed as UTF-8 (Python's hmac over the same text gives the same).
      { method: 'POST', url: 'https://h/cb', params: { Error: 'café ☎' } },
    ];
    it.each(cases)('$method $url $params', ({ method, url, params }) => {
      const signature = signStreamCallbackV3({
        method,
        url,
        params,
        nonce: NONCE,
        authToken: TOKEN,
      });
      expect(plivo.validateV3Signature(method, url, NONCE, TOKEN, signature, params)).toBe(true);
      expect(
        verifyStreamCallbackV3({ method, url, params, nonce: NONCE, signature, authToken: TOKEN }),
      ).toEqual({ valid: true });
    });
  });
});

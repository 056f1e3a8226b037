import { describe, expect, it } from 'vitest';
import { checkStartStreamParams, STREAM_DEFAULTS } from '../../src/api/stream-rules.js';

const URL_OK = 'wss://media.example.com/stream/123';

describe('checkStartStreamParams', () => {
  it('applies the defaults of 4.5', () => {
    expect(checkStartStreamParams({ service_url: URL_OK })).toEqual({
      ok: true,
      params: { service_url: URL_OK, ...STREAM_DEFAULTS },
    });
    expect(STREAM_DEFAULTS).toEqual({
      audio_track: 'inbound',
      bidirectional: false,
      stream_timeout: 86400,
      status_callback_method: 'POST',
      content_type: 'audio/x-l16;rate=8000',
    });
  });

  it('accepts every allowed value', () => {
    const result = checkStartStreamParams({
      service_url: 'wss://h/p',
      bidirectional: true,
      audio_track: 'inbound',
      stream_timeout: 1,
      status_callback_url: 'https://hooks.example.com/stream',
      status_callback_method: 'GET',
      content_type: 'audio/x-mulaw;rate=8000',
      extra_headers: 'a=1,Key2=Value2',
    });
    expect(result.ok).toBe(true);
    for (const track of ['outbound', 'both'])
      expect(checkStartStreamParams({ service_url: URL_OK, audio_track: track }).ok).toBe(true);
    for (const type of ['audio/x-l16;rate=16000'])
      expect(checkStartStreamParams({ service_url: URL_OK, content_type: type }).ok).toBe(true);
  });

  it.each([
    [{}, 'service_url', 'service_url is required'],
    [{ service_url: 'https://media.example.com/x' }, 'service_url', 'secure WebSocket URL'],
    [{ service_url: 'ws://media.example.com/x' }, 'service_url', 'secure WebSocket URL'],
    [{ service_url: 'wss://' }, 'service_url', 'secure WebSocket URL'],
    [{ service_url: 'wss://user:pw@h/x' }, 'service_url', 'secure WebSocket URL'],
    [
      { service_url: URL_OK, audio_track: 'stereo' },
      'audio_track',
      'audio_track must be one of inbound, outbound, both',
    ],
    [
      { service_url: URL_OK, bidirectional: true, audio_track: 'outbound' },
      'audio_track',
      'bidirectional stream must use audio_track inbound',
    ],
    [
      { service_url: URL_OK, bidirectional: true, audio_track: 'both' },
      'audio_track',
      'bidirectional stream must use audio_track inbound',
    ],
    [
      { service_url: URL_OK, bidirectional: 'yes' },
      'bidirectional',
      'bidirectional must be true or false',
    ],
    [{ service_url: URL_OK, stream_timeout: 0 }, 'stream_timeout', 'positive whole number'],
    [{ service_url: URL_OK, stream_timeout: 1.5 }, 'stream_timeout', 'positive whole number'],
    [{ service_url: URL_OK, stream_timeout: '60' }, 'stream_timeout', 'positive whole number'],
    [
      { service_url: URL_OK, status_callback_url: 'ftp://x/y' },
      'status_callback_url',
      'http(s) URL',
    ],
    [
      { service_url: URL_OK, status_callback_method: 'PUT' },
      'status_callback_method',
      'GET or POST',
    ],
    [
      { service_url: URL_OK, content_type: 'audio/wav' },
      'content_type',
      'content_type must be one of',
    ],
    [{ service_url: URL_OK, extra_headers: 'a=1;b' }, 'extra_headers', 'A-Z, a-z and 0-9'],
    [{ service_url: URL_OK, extra_headers: 'a=1;b=2' }, 'extra_headers', 'key=value pairs'],
    [{ service_url: URL_OK, extra_headers: 'a-b=1' }, 'extra_headers', 'A-Z, a-z and 0-9'],
    [{ service_url: URL_OK, extra_headers: 'novalue' }, 'extra_headers', 'key=value pairs'],
    [{ service_url: URL_OK, extra_headers: 'a=1,a=2' }, 'extra_headers', 'twice'],
    [
      { service_url: URL_OK, extra_headers: `k=${'v'.repeat(510)}` },
      'extra_headers',
      'fewer than 512 bytes',
    ],
  ])('refuses %j', (input, field, message) => {
    const result = checkStartStreamParams(input);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.violations.map((violation) => violation.field)).toContain(field);
      expect(result.violations.map((violation) => violation.message).join('\n')).toContain(message);
    }
  });

  it('accepts extra_headers of 511 bytes and refuses 512', () => {
    expect(
      checkStartStreamParams({ service_url: URL_OK, extra_headers: `k=${'v'.repeat(509)}` }).ok,
    ).toBe(true);
    expect(
      checkStartStreamParams({ service_url: URL_OK, extra_headers: `k=${'v'.repeat(510)}` }).ok,
    ).toBe(false);
  });

  it('reports every violation at once', () => {
    const result = checkStartStreamParams({
      service_url: 'http://x',
      stream_timeout: -5,
      content_type: 'x',
    });
    expect(result.ok ? [] : result.violations.map((violation) => violation.field)).toEqual([
      'service_url',
      'stream_timeout',
      'content_type',
    ]);
  });
});

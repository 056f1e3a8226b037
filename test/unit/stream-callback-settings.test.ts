import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-errors.js';
import { loadConfig } from '../../src/config/load-config.js';
import { streamCallbackUrl } from '../../src/http/http-settings.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.key}: ${p.message}`);
    throw error;
  }
  return [];
}

describe('TELESYNC_PUBLIC_URL and TELESYNC_STREAM_CALLBACK_PATH', () => {
  it('leave callbacks off by default, on /callbacks/stream', () => {
    const { callbacks } = loadConfig({});
    expect(callbacks).toEqual({ publicUrl: undefined, path: '/callbacks/stream' });
    expect(streamCallbackUrl(callbacks)).toBeUndefined();
  });

  it('name the callback URL: the public URL as written (trailing slashes dropped) and the path', () => {
    const plain = loadConfig({ TELESYNC_PUBLIC_URL: 'https://telesync.example.com/' }).callbacks;
    expect(streamCallbackUrl(plain)).toBe('https://telesync.example.com/callbacks/stream');
    const behindProxy = loadConfig({
      TELESYNC_PUBLIC_URL: 'http://Hooks.Example.com:8443/telesync//',
      TELESYNC_STREAM_CALLBACK_PATH: '/plivo/stream-events',
    }).callbacks;
    expect(streamCallbackUrl(behindProxy)).toBe(
      'http://Hooks.Example.com:8443/telesync/plivo/stream-events',
    );
  });

  it('are read from the config file too', () => {
    const config = loadConfig(
      {},
      {
        path: '/etc/telesync.json',
        text: JSON.stringify({
          http: { public_url: 'https://a.example.com', stream_callback_path: '/cb' },
        }),
      },
    );
    expect(streamCallbackUrl(config.callbacks)).toBe('https://a.example.com/cb');
  });

  it.each([
    ['telesync.example.com'],
    ['/callbacks'],
    ['ftp://telesync.example.com'],
    ['wss://telesync.example.com'],
    ['https://'],
    ['https://telesync.example.com/?token=1'],
    ['https://telesync.example.com/#top'],
    ['https://telesync example.com'],
  ])('refuse %s as a public URL, saying what to give', (value) => {
    expect(problemsOf({ TELESYNC_PUBLIC_URL: value })).toEqual([
      `TELESYNC_PUBLIC_URL: "${value}" is not an absolute http(s) URL; give the address the service reaches telesync's HTTP server at, such as https://telesync.example.com (no user, query or fragment), or leave it unset to receive no stream callbacks`,
    ]);
  });

  it('refuse a public URL with a user and password without repeating them', () => {
    const problems = problemsOf({
      TELESYNC_PUBLIC_URL: 'https://user:s3cret@telesync.example.com',
    });
    expect(problems).toEqual([
      expect.stringContaining(
        'TELESYNC_PUBLIC_URL: "https://…@telesync.example.com" is not an absolute http(s) URL',
      ),
    ]);
    expect(problems.join('\n')).not.toContain('s3cret');
  });

  it.each([['callbacks'], ['/'], ['/metrics'], ['/a b'], ['/cb?x=1'], ['/cb/']])(
    'refuse %s as the callback path',
    (value) => {
      expect(problemsOf({ TELESYNC_STREAM_CALLBACK_PATH: value })).toEqual([
        expect.stringMatching(
          /^TELESYNC_STREAM_CALLBACK_PATH: ".*" is not a free path such as \/callbacks\/stream/,
        ),
      ]);
    },
  );
});

describe('TELESYNC_CALLBACK_HOST and TELESYNC_CALLBACK_PORT', () => {
  it('give the callbacks a listener of their own; unset, the main one serves them', () => {
    expect(loadConfig({}).callbacks.listen).toBeUndefined();
    expect(loadConfig({ TELESYNC_CALLBACK_PORT: '9465' }).callbacks.listen).toEqual({
      host: '127.0.0.1',
      port: 9465,
    });
    expect(
      loadConfig({ TELESYNC_CALLBACK_HOST: '0.0.0.0', TELESYNC_CALLBACK_PORT: '8080' }).callbacks
        .listen,
    ).toEqual({ host: '0.0.0.0', port: 8080 });
  });

  it('refuse a port out of range and a host without a port', () => {
    expect(problemsOf({ TELESYNC_CALLBACK_PORT: '0' })).toEqual([
      'TELESYNC_CALLBACK_PORT: "0" is not a whole number from 1 to 65535 (default 0)',
    ]);
    expect(problemsOf({ TELESYNC_CALLBACK_HOST: '0.0.0.0' })[0]).toContain(
      'TELESYNC_CALLBACK_HOST: is set without TELESYNC_CALLBACK_PORT',
    );
  });
});

import { describe, expect, it } from 'vitest';
import { readErrorBody } from '../../src/api/api-errors.js';
import { configSecrets } from '../../src/app/app-services.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createRedactor, redactSecrets, redactUrl } from '../../src/util/redact.js';

describe('redactUrl', () => {
  it('hides the password and keeps the rest', () => {
    expect(redactUrl('postgres://user:s3cr%40t@db:5432/x')).toBe(
      'postgres://user:[redacted]@db:5432/x',
    );
    expect(redactUrl('postgres://user@db/x')).toBe('postgres://user@db/x');
    expect(redactUrl('not a url')).toBe('not a url');
  });
});

describe('redactSecrets', () => {
  it('replaces every occurrence, raw and URL-encoded', () => {
    expect(redactSecrets('token=ab/cd+ef and ab%2Fcd%2Bef', ['ab/cd+ef'])).toBe(
      'token=[redacted] and [redacted]',
    );
  });
  it('ignores empty and trivially short secrets', () => {
    expect(redactSecrets('abc', ['', 'a'])).toBe('abc');
  });
});

describe('createRedactor', () => {
  it('replaces each secret as is and URL-encoded, and leaves short ones and other texts', () => {
    const redact = createRedactor(['ab/cd+ef', 'x']);
    expect(redact('token=ab/cd+ef and ab%2Fcd%2Bef, x')).toBe('token=[redacted] and [redacted], x');
    expect(redact('/v1/Account/MA1/Trunk/Call/?limit=20')).toBe(
      '/v1/Account/MA1/Trunk/Call/?limit=20',
    );
  });
  it('replaces a secret that holds another whole, whatever their order', () => {
    expect(createRedactor(['tok3n', 'MA1:tok3n'])('basic MA1:tok3n')).toBe('basic [redacted]');
  });
});

describe('an error body that spells a secret in JSON \\u escapes', () => {
  const token = 'tok_0123456789abcdef';
  const credentials = Buffer.from(`MA1:${token}`).toString('base64');
  const redact = createRedactor([token, credentials, `Basic ${credentials}`]);
  const escaped = (text: string) =>
    [...text].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

  it('is redacted after decoding, in the error text and the api_id', () => {
    const read = readErrorBody(
      `{"api_id":"${escaped(credentials)}","error":"you sent ${escaped(`Basic ${credentials}`)} and ${escaped(token)}"}`,
      redact,
    );
    expect(read).toEqual({
      apiId: '[redacted]',
      serviceMessage: 'you sent [redacted] and [redacted]',
    });
  });

  it('is redacted in an error object and in a body that is not JSON', () => {
    expect(
      readErrorBody(`{"error":{"detail":"${escaped(credentials)}"}}`, redact).serviceMessage,
    ).toBe('{"detail":"[redacted]"}');
    expect(readErrorBody(`<html>${escaped(credentials)}</html>`, redact).serviceMessage).toBe(
      '<html>[redacted]</html>',
    );
  });
});

describe('configSecrets', () => {
  it('lists each token with the Authorization header forms of its credentials', () => {
    const config = loadConfig({
      TELESYNC_AUTH_ID: 'MA1',
      TELESYNC_AUTH_TOKEN: 'tok_0123456789abcdef',
      DATABASE_URL: 'postgres://u:pw_secret@db/x',
    });
    const credentials = Buffer.from('MA1:tok_0123456789abcdef').toString('base64');
    expect(configSecrets(config)).toEqual([
      'tok_0123456789abcdef',
      credentials,
      `Basic ${credentials}`,
      'pw_secret',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
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

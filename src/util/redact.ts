/**
 * Secrets are removed from text before it reaches a log line, an error message or a table.
 * Two complementary guards: known secret values (the auth token, database passwords) are replaced
 * wherever they appear, and URLs lose their userinfo.
 */
const REDACTED = '[redacted]';

/** Replaces the password (and only the password) of a URL's userinfo. Not a URL: returned as is. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = REDACTED;
    return parsed.toString().replace(encodeURIComponent(REDACTED), REDACTED);
  } catch {
    return url;
  }
}

/** Replaces every occurrence of each secret (ignoring empty and very short ones) in `text`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // A one- or two-character "secret" would blank out ordinary text and protects nothing.
    if (secret.length < 3) continue;
    // Most texts (every request's path) hold no secret: a search, not a split, for those.
    if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret && out.includes(encoded)) out = out.replaceAll(encoded, REDACTED);
  }
  return out;
}

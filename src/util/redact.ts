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

/** A function that removes the given secrets from a text (redactSecrets with the secrets fixed). */
export type Redactor = (text: string) => string;

/**
 * A redactor for `secrets`: each one's forms (as is and URL-encoded) worked out once, for callers
 * that redact every request's path or every log line. Empty and very short secrets are ignored:
 * a one- or two-character "secret" would blank out ordinary text and protects nothing.
 */
export function createRedactor(secrets: readonly string[]): Redactor {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < 3) continue;
    forms.add(secret);
    forms.add(encodeURIComponent(secret));
  }
  // Longest first: a secret that holds another is replaced whole, not around the shorter one.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    // Most texts (every request's path) hold no secret: a search, not a split, for those.
    for (const form of ordered) if (out.includes(form)) out = out.replaceAll(form, REDACTED);
    return out;
  };
}

/** Replaces every occurrence of each secret (ignoring empty and very short ones) in `text`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return createRedactor(secrets)(text);
}

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { CallbackMethod } from './stream-rules.js';

export type { CallbackMethod };

/**
 * The service's V3 callback signature (Plivo's `X-Plivo-Signature-V3`), as its official libraries
 * validate it (plivo-node `validateV3Signature`, plivo-python `validate_v3_signature`, plivo-go
 * `ValidateSignatureV3`):
 *
 *   signed text = the URL the callback was sent to, rebuilt as below, + "." + nonce
 *   signature   = base64(HMAC-SHA256(auth token, signed text))
 *
 * The URL is rebuilt as `scheme://authority/path` (query and fragment removed), then:
 * - GET: `?k1=v1&k2=v2…` appended when there are query parameters: the URL's own query parameters,
 *   decoded (`+` is a space), sorted by name and, for a repeated name, by value;
 * - POST with form fields: `?`, the sorted query string as above, `.` when that query string is not
 *   empty, then every form field as `namevalue` (no separator), sorted by name then value;
 * - POST without form fields: like GET.
 *
 * The header may carry several signatures separated by commas (the service signs with each of the
 * account's valid tokens while one is being rotated); one match is enough.
 */

/** Header carrying the signature(s). */
export const SIGNATURE_V3_HEADER = 'X-Plivo-Signature-V3';
/** Header carrying the nonce that was signed with the URL. */
export const SIGNATURE_V3_NONCE_HEADER = 'X-Plivo-Signature-V3-Nonce';

/** Callback fields: a name given twice keeps both values. */
export type CallbackParams = Readonly<Record<string, string | readonly string[]>>;

export interface StreamCallbackSigningInput {
  readonly method: CallbackMethod;
  /** The absolute URL the callback is sent to, with its query string (GET fields live there). */
  readonly url: string;
  /** POST: the form fields of the body. GET: fields that are not already in `url` (usually none). */
  readonly params?: CallbackParams;
  readonly nonce: string;
}

export interface StreamCallbackVerifyInput extends StreamCallbackSigningInput {
  /** The X-Plivo-Signature-V3 header as received (undefined when absent). */
  readonly signature: string | undefined;
}

export type StreamSignatureRefusal = 'unsigned' | 'no_nonce' | 'bad_url' | 'mismatch';

export type StreamSignatureCheck =
  | { readonly valid: true }
  | { readonly valid: false; readonly reason: StreamSignatureRefusal; readonly message: string };

/** A URL that cannot be signed (not absolute). Carries the problem, never a token. */
export class CallbackUrlError extends Error {
  constructor(readonly url: string) {
    super(`a signed callback needs an absolute URL such as https://host/path, not "${url}"`);
    this.name = 'CallbackUrlError';
  }
}

// scheme "://" authority, then path, query and fragment as written (never normalised: the signer
// and the verifier must see the same characters the sender used).
const ABSOLUTE_URL = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#.*)?$/;

/**
 * The text the V3 signature is made over, without the nonce. Pure; exported so that a failing
 * verification can be diagnosed by comparing it with what the sender signed.
 *
 * @throws CallbackUrlError when `url` is not absolute
 */
export function buildStreamCallbackSignedUrl(
  method: CallbackMethod,
  url: string,
  params: CallbackParams = {},
): string {
  const match = ABSOLUTE_URL.exec(url);
  if (match === null || match[2] === '') throw new CallbackUrlError(url);
  const [, scheme, authority, rawPath, rawQuery] = match;
  const path = rawPath === '' || rawPath!.startsWith('/') ? rawPath! : `/${rawPath}`;
  const base = `${scheme}://${authority}${path}`;
  const query = parseQuery(rawQuery ?? '');
  const hasBodyFields = method === 'POST' && Object.keys(params).length > 0;
  if (!hasBodyFields) {
    // GET: extra fields join the query's (plivo-node concatenates repeated names).
    if (method === 'GET')
      for (const [name, values] of entries(params))
        query.push(...values.map((value) => [name, value] as const));
    const queryText = sortedQueryString(query);
    return queryText === '' ? base : `${base}?${queryText}`;
  }
  const queryText = sortedQueryString(query);
  const fields = sortedPairs(
    entries(params).flatMap(([name, values]) => values.map((value) => [name, value] as const)),
  );
  return `${base}?${queryText}${queryText === '' ? '' : '.'}${fields.map(([name, value]) => name + value).join('')}`;
}

/**
 * Signs a callback the way the service does: what the simulator sends in X-Plivo-Signature-V3.
 * Returns the base64 signature. The auth token never leaves this function.
 */
export function signStreamCallbackV3(
  input: StreamCallbackSigningInput & { readonly authToken: string },
): string {
  const signed = `${buildStreamCallbackSignedUrl(input.method, input.url, input.params)}.${input.nonce}`;
  return createHmac('sha256', input.authToken).update(signed, 'utf8').digest('base64');
}

/** At most this many signatures in one header: the service sends one, two while a token rotates. */
export const SIGNATURE_V3_MAX_CANDIDATES = 4;

// base64 of a 32-byte HMAC-SHA256: 43 characters and one "=" of padding.
const SIGNATURE_SHAPE = /^[A-Za-z0-9+/]{43}=$/;

/**
 * Whether a X-Plivo-Signature-V3 header can hold a signature at all: one to
 * SIGNATURE_V3_MAX_CANDIDATES comma-separated base64 HMAC-SHA256 values. Cheap and pure, so a
 * receiver refuses junk before it reads the request's fields.
 */
export function isWellFormedSignatureHeader(header: string): boolean {
  const candidates = header.split(',', SIGNATURE_V3_MAX_CANDIDATES + 1);
  return (
    candidates.length <= SIGNATURE_V3_MAX_CANDIDATES &&
    candidates.every((candidate) => SIGNATURE_SHAPE.test(candidate.trim()))
  );
}

/**
 * Whether one of the header's signatures is the HMAC of `signedText` (the output of
 * buildStreamCallbackSignedUrl, then "." and the nonce) with `authToken`. The signed text does not
 * depend on the token, so a receiver builds it once and tries each token on it. Every candidate is
 * compared in constant time, so the time taken does not tell which one (if any) matched.
 */
export function matchesStreamCallbackSignature(
  signedText: string,
  header: string,
  authToken: string,
): boolean {
  const expected = Buffer.from(
    createHmac('sha256', authToken).update(signedText, 'utf8').digest('base64'),
    'utf8',
  );
  let matched = false;
  for (const candidate of header.split(',', SIGNATURE_V3_MAX_CANDIDATES)) {
    const given = Buffer.from(candidate.trim(), 'utf8');
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}

/**
 * Verifies a received callback against the account's auth token. `url` must be the address the
 * service called (telesync's public URL plus the path and query as received), `params` the form
 * fields of a POST body. Comparison is constant-time for each signature of the header.
 */
export function verifyStreamCallbackV3(
  input: StreamCallbackVerifyInput & { readonly authToken: string },
): StreamSignatureCheck {
  if (input.signature === undefined || input.signature.trim() === '')
    return refuse('unsigned', `the callback has no ${SIGNATURE_V3_HEADER} header`);
  if (input.nonce === '')
    return refuse('no_nonce', `the callback has no ${SIGNATURE_V3_NONCE_HEADER} header`);
  let signedText: string;
  try {
    signedText = `${buildStreamCallbackSignedUrl(input.method, input.url, input.params)}.${input.nonce}`;
  } catch (error) {
    if (error instanceof CallbackUrlError) return refuse('bad_url', error.message);
    throw error;
  }
  // A header that cannot hold a signature is refused before any HMAC is computed.
  return isWellFormedSignatureHeader(input.signature) &&
    matchesStreamCallbackSignature(signedText, input.signature, input.authToken)
    ? { valid: true }
    : refuse(
        'mismatch',
        `the ${SIGNATURE_V3_HEADER} signature does not match this URL, these fields and the account's auth token`,
      );
}

function refuse(reason: StreamSignatureRefusal, message: string): StreamSignatureCheck {
  return { valid: false, reason, message };
}

function entries(params: CallbackParams): [string, readonly string[]][] {
  return Object.entries(params).map(([name, value]) => [
    name,
    typeof value === 'string' ? [value] : value,
  ]);
}

/** `a=1&b=&c` → pairs, decoded like the libraries' query parsers (lenient on bad escapes). */
function parseQuery(text: string): (readonly [string, string])[] {
  const pairs: (readonly [string, string])[] = [];
  for (const piece of text.split('&')) {
    if (piece === '') continue;
    const at = piece.indexOf('=');
    const name = at === -1 ? piece : piece.slice(0, at);
    const value = at === -1 ? '' : piece.slice(at + 1);
    pairs.push([decodeComponent(name), decodeComponent(value)]);
  }
  return pairs;
}

function decodeComponent(text: string): string {
  const spaced = text.replaceAll('+', ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

// Names, then the values of a repeated name, in the order JavaScript's default sort gives
// (UTF-16 code units), as plivo-node does; Python's code-point order differs only beyond the BMP.
function sortedPairs(pairs: readonly (readonly [string, string])[]): (readonly [string, string])[] {
  const byName = new Map<string, string[]>();
  for (const [name, value] of pairs) {
    const values = byName.get(name);
    if (values === undefined) byName.set(name, [value]);
    else values.push(value);
  }
  return [...byName.keys()].sort().flatMap((name) =>
    byName
      .get(name)!
      .sort()
      .map((value) => [name, value] as const),
  );
}

function sortedQueryString(pairs: readonly (readonly [string, string])[]): string {
  return sortedPairs(pairs)
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

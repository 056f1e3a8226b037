import type { IncomingMessage } from 'node:http';
import type { CallbackNonceLedger } from '../api/callback-replay-guard.js';
import { parseStreamCallback } from '../api/stream-callback.js';
import {
  buildStreamCallbackSignedUrl,
  isWellFormedSignatureHeader,
  matchesStreamCallbackSignature,
  SIGNATURE_V3_HEADER,
  SIGNATURE_V3_NONCE_HEADER,
  type CallbackParams,
} from '../api/stream-callback-signature.js';
import type {
  StreamEventInput,
  StreamEventOutcome,
} from '../db/repositories/stream-events-repository.js';
import { coerceError, describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import type { EpochMicros } from '../util/micros.js';
import { heldBackNote, RepeatFilter } from '../util/repeat-filter.js';
import type { HttpAnswer, HttpRoute } from './http-route.js';

/**
 * The route that receives the service's stream status callbacks (GET with the fields in the query,
 * POST with a form or a JSON object), by default `/callbacks/stream`. Anyone can send to it, so the
 * work done before the signature is checked is bounded and small. In order, a callback is:
 *
 * 1. read, at most STREAM_CALLBACK_MAX_BODY_BYTES of body or query (413 beyond, unread);
 * 2. refused unless it carries a nonce and a signature header that can hold a signature at all
 *    (base64 HMAC-SHA256 values; 403), before any field is read;
 * 3. split into at most STREAM_CALLBACK_MAX_FIELDS fields (400 beyond, counted before parsing): a
 *    form, a JSON object of texts, numbers and booleans (400 for other JSON), or the query (GET);
 *    another content type is 415. Fields live in a Map: any name is just a name;
 * 4. verified (V3): the signed text is built once, from the configured callback URL plus the query
 *    as received (never the Host header, which a client chooses), then each configured account's
 *    token is tried on it: the first that matches names the account (403 when none does);
 * 5. parsed (400 when a signed callback is malformed: the fault is worth an alert, not a retry);
 * 6. judged fresh and new: its signed Timestamp within the replay window, its nonce not accepted
 *    before by this process nor being stored right now (403 otherwise);
 * 7. stored once, with its nonce, in one transaction (`storeEvent`): the nonce table refuses a nonce
 *    another process or an earlier run accepted (403), and a delivery telesync failed to store
 *    (503) can come again with the same nonce.
 *
 * Nothing is stored for a refused callback; every answer is counted through `onVerdict`, an
 * unexpected fault too (500, whose body says nothing of it). Refusals are logged once per reason
 * and minute, with the count of those held back.
 */

/** Largest body (or query) read; the service's callbacks are a few hundred bytes. */
export const STREAM_CALLBACK_MAX_BODY_BYTES = 8 * 1024;
/** Most fields a callback may have; the service sends about ten. */
export const STREAM_CALLBACK_MAX_FIELDS = 64;
/** Longest nonce accepted; the service's are 20 digits. */
export const STREAM_CALLBACK_MAX_NONCE_LENGTH = 256;
/** Refusals of one reason are logged at most once in this window. */
const REFUSAL_LOG_WINDOW_MS = 60_000;

export type StreamCallbackOutcome = 'accepted' | 'refused' | 'failed';

/** Every outcome and reason the route answers with, for metrics created at 0. */
export const STREAM_CALLBACK_VERDICTS = [
  { outcome: 'accepted', reason: 'stored' },
  { outcome: 'accepted', reason: 'duplicate' },
  { outcome: 'refused', reason: 'unsigned' },
  { outcome: 'refused', reason: 'no_nonce' },
  { outcome: 'refused', reason: 'forged' },
  { outcome: 'refused', reason: 'stale' },
  { outcome: 'refused', reason: 'future' },
  { outcome: 'refused', reason: 'replayed' },
  { outcome: 'refused', reason: 'malformed' },
  { outcome: 'refused', reason: 'too_many_fields' },
  { outcome: 'refused', reason: 'too_large' },
  { outcome: 'refused', reason: 'unsupported_media_type' },
  { outcome: 'failed', reason: 'store_failed' },
  { outcome: 'failed', reason: 'internal_error' },
] as const satisfies readonly { outcome: StreamCallbackOutcome; reason: string }[];

export type StreamCallbackVerdict = (typeof STREAM_CALLBACK_VERDICTS)[number];
export type StreamCallbackReason = StreamCallbackVerdict['reason'];
type RefusalReason = Extract<StreamCallbackVerdict, { outcome: 'refused' }>['reason'];

/** An account whose token may have signed a callback. */
export interface StreamCallbackAccount {
  readonly authId: string;
  readonly authToken: string;
}

export interface StreamCallbackRouteOptions {
  /** The route's path on the server, e.g. `/callbacks/stream`. */
  readonly path: string;
  /**
   * The absolute URL the service sends callbacks to (TELESYNC_PUBLIC_URL + path), without a
   * query: what the signatures are verified against.
   */
  readonly callbackUrl: string;
  readonly accounts: readonly StreamCallbackAccount[];
  /**
   * Stores one event and its nonce in a transaction of its own; resolves once it is committed, or
   * with `replayed` when the nonce was accepted before (nothing stored).
   */
  readonly storeEvent: (input: StreamEventInput) => Promise<StreamEventOutcome>;
  /** The nonces this process accepted recently: a quick refusal before the database is asked. */
  readonly nonces: CallbackNonceLedger;
  /** The clock, epoch microseconds. */
  readonly now: () => EpochMicros;
  /** Told of every answer (metrics). */
  readonly onVerdict?: (verdict: StreamCallbackVerdict) => void;
  readonly log: Logger;
  /** Default STREAM_CALLBACK_MAX_BODY_BYTES. */
  readonly maxBodyBytes?: number;
  /** Default STREAM_CALLBACK_MAX_FIELDS. */
  readonly maxFields?: number;
}

/** A callback as read from the connection: what the judgement needs, nothing of the socket. */
export interface StreamCallbackRequest {
  readonly method: 'GET' | 'POST';
  /** The query string as received, without `?` ('' when none). */
  readonly query: string;
  /** The content-type header (undefined when absent). */
  readonly contentType: string | undefined;
  /** The body as text; `too_large` when it passed the cap (the rest was not read). */
  readonly body: string | { readonly tooLarge: true };
  /** The X-Plivo-Signature-V3 header. */
  readonly signature: string | undefined;
  /** The X-Plivo-Signature-V3-Nonce header. */
  readonly nonce: string | undefined;
}

/** What the route answered and why. */
export interface StreamCallbackAnswer extends HttpAnswer {
  readonly verdict: StreamCallbackVerdict;
}

/** The callback route for GET and POST (the service sends by `status_callback_method`). */
export function createStreamCallbackRoutes(options: StreamCallbackRouteOptions): HttpRoute[] {
  const receive = createStreamCallbackReceiver(options);
  const maxBodyBytes = options.maxBodyBytes ?? STREAM_CALLBACK_MAX_BODY_BYTES;
  const answer = async (request: IncomingMessage): Promise<HttpAnswer> => {
    const head = { ...readStreamCallbackHead(request), body: '' };
    // A request its headers refuse (no nonce, no signature of the right shape) is answered without
    // reading its body: the receiver refuses it the same way whatever the body holds.
    const refusedByHead = screen(head, maxBodyBytes) !== undefined;
    if (refusedByHead) request.resume();
    const { status, contentType, body } = await receive(
      refusedByHead ? head : { ...head, body: await readBody(request, maxBodyBytes) },
    );
    return { status, contentType, body };
  };
  return [
    { method: 'GET', path: options.path, answer },
    { method: 'POST', path: options.path, answer },
  ];
}

/** The fields of a callback by name, in the order received; a name given twice has two values. */
type FieldMap = Map<string, string[]>;

class Refusal {
  constructor(
    readonly status: number,
    readonly reason: RefusalReason,
    readonly message: string,
  ) {}
}

/**
 * The judgement and storage of one callback, apart from the socket (tests give it requests
 * directly). Never rejects: a failed store is a 503, anything unexpected a 500, both counted.
 */
export function createStreamCallbackReceiver(
  options: StreamCallbackRouteOptions,
): (request: StreamCallbackRequest) => Promise<StreamCallbackAnswer> {
  const maxBodyBytes = options.maxBodyBytes ?? STREAM_CALLBACK_MAX_BODY_BYTES;
  const maxFields = options.maxFields ?? STREAM_CALLBACK_MAX_FIELDS;
  // Nonces whose callback is being stored: a copy sent meanwhile is a replay, not a second store.
  const inFlight = new Set<string>();
  const refusalLog = new RepeatFilter(REFUSAL_LOG_WINDOW_MS, () => options.now() / 1000);

  const respond = (
    status: number,
    verdict: StreamCallbackVerdict,
    body: Record<string, unknown>,
  ): StreamCallbackAnswer => {
    options.onVerdict?.(verdict);
    return {
      status,
      contentType: 'application/json',
      body: `${JSON.stringify(body)}\n`,
      verdict,
    };
  };
  const refuse = (
    refusal: Refusal,
    context: Record<string, unknown> = {},
  ): StreamCallbackAnswer => {
    const { status, reason, message } = refusal;
    const held = refusalLog.pass(reason);
    if (held !== undefined)
      options.log.warn(
        { reason, ...context },
        `${options.path}: stream callback refused (${reason}): ${message}${heldBackNote(held)}`,
      );
    return respond(status, { outcome: 'refused', reason }, { error: reason, message });
  };

  const receive = async (request: StreamCallbackRequest): Promise<StreamCallbackAnswer> => {
    const early = screen(request, maxBodyBytes);
    if (early !== undefined) return refuse(early);
    const nonce = request.nonce!;
    const signature = request.signature!;

    const read = readFields(request, maxFields);
    if (read instanceof Refusal) return refuse(read);

    const accountId = verifyAgainstAccounts(options, request, read, nonce, signature);
    if (accountId === undefined)
      return refuse(
        new Refusal(
          403,
          'forged',
          `the ${SIGNATURE_V3_HEADER} signature matches no configured account's token for ${options.callbackUrl}`,
        ),
      );

    const parsed = parseStreamCallback(read.fields);
    if (!parsed.ok)
      return refuse(new Refusal(400, 'malformed', parsed.message), { account: accountId });
    const { event } = parsed;
    const context = { account: accountId, stream: event.streamId };

    const judged = options.nonces.check(nonce, event.eventTimeMicros, options.now());
    if (!judged.accept) return refuse(new Refusal(403, judged.reason, judged.message), context);
    if (inFlight.has(nonce))
      return refuse(
        new Refusal(
          403,
          'replayed',
          'a callback with this nonce is being stored: the request is a replay',
        ),
        context,
      );

    inFlight.add(nonce);
    try {
      let stored: StreamEventOutcome;
      try {
        stored = await options.storeEvent({
          accountId,
          callUuid: event.callUuid,
          streamId: event.streamId,
          event: event.event,
          eventTime: event.eventTime,
          error: event.error,
          deliveryKey: event.deliveryKey,
          fields: event.fields,
          nulEscaped: event.nulEscaped,
          nonce: { value: nonce, until: judged.rememberUntil, signature },
        });
      } catch (error) {
        options.log.error(
          { ...context, event: event.event },
          `${options.path}: the stream event could not be stored: ${describeError(error)}`,
        );
        return respond(
          503,
          { outcome: 'failed', reason: 'store_failed' },
          { error: 'store_failed', message: 'the event could not be stored; send it again later' },
        );
      }
      options.nonces.remember(nonce, judged.rememberUntil, options.now());
      if (stored.replayed)
        return refuse(
          new Refusal(
            403,
            'replayed',
            'this nonce was already accepted (by this or another telesync): the request is a replay',
          ),
          context,
        );
      options.log.debug(
        { ...context, event: event.event, stored: stored.stored },
        `${options.path}: ${event.event} of stream ${event.streamId} ${stored.stored ? 'stored' : 'already stored'}`,
      );
      return respond(
        200,
        { outcome: 'accepted', reason: stored.stored ? 'stored' : 'duplicate' },
        {
          accepted: true,
          stored: stored.stored,
          event: event.event,
          stream_id: event.streamId,
          stream_status: stored.streamStatus,
        },
      );
    } finally {
      inFlight.delete(nonce);
    }
  };

  return async (request) => {
    try {
      return await receive(request);
    } catch (error) {
      options.log.error(
        { err: coerceError(error) },
        `${options.path}: a stream callback could not be handled: ${describeError(error)}`,
      );
      // The body names nothing of the fault: the sender may be anyone.
      return respond(
        500,
        { outcome: 'failed', reason: 'internal_error' },
        { error: 'internal_error', message: 'the callback could not be handled' },
      );
    }
  };
}

/** The checks that need no field: size, nonce, the signature header's shape. */
function screen(request: StreamCallbackRequest, maxBodyBytes: number): Refusal | undefined {
  if (typeof request.body !== 'string' || request.query.length > maxBodyBytes)
    return new Refusal(413, 'too_large', `the body or query is larger than ${maxBodyBytes} bytes`);
  if (request.signature === undefined || request.signature.trim() === '')
    return new Refusal(403, 'unsigned', `the callback has no ${SIGNATURE_V3_HEADER} header`);
  if (request.nonce === undefined || request.nonce === '')
    return new Refusal(403, 'no_nonce', `the callback has no ${SIGNATURE_V3_NONCE_HEADER} header`);
  if (request.nonce.length > STREAM_CALLBACK_MAX_NONCE_LENGTH)
    return new Refusal(
      403,
      'forged',
      `the ${SIGNATURE_V3_NONCE_HEADER} header is longer than ${STREAM_CALLBACK_MAX_NONCE_LENGTH} characters`,
    );
  if (!isWellFormedSignatureHeader(request.signature))
    return new Refusal(
      403,
      'forged',
      `the ${SIGNATURE_V3_HEADER} header is not base64 HMAC-SHA256 signatures separated by commas`,
    );
  return undefined;
}

interface ReadFields {
  /** The fields the callback is parsed from. */
  readonly fields: FieldMap;
  /** The fields signed after the URL (a POST's body); empty for a GET, whose fields are in the URL. */
  readonly signedParams: CallbackParams;
}

function readFields(request: StreamCallbackRequest, maxFields: number): ReadFields | Refusal {
  const tooMany = new Refusal(
    400,
    'too_many_fields',
    `a callback has at most ${maxFields} fields (the service sends about ten)`,
  );
  if (countFormFields(request.query, maxFields) > maxFields) return tooMany;
  if (request.method === 'GET') {
    const fields = formFields(request.query);
    return { fields, signedParams: {} };
  }
  const body = request.body as string;
  const type = mediaType(request.contentType);
  let fields: FieldMap;
  if (type === 'application/x-www-form-urlencoded' || (type === undefined && body === '')) {
    if (countFormFields(body, maxFields) > maxFields) return tooMany;
    fields = formFields(body);
  } else if (type === 'application/json' || type?.endsWith('+json') === true) {
    const json = jsonFields(body, maxFields);
    if (json instanceof Refusal) return json.reason === 'too_many_fields' ? tooMany : json;
    fields = json;
  } else
    return new Refusal(
      415,
      'unsupported_media_type',
      `a POST callback is a form (application/x-www-form-urlencoded) or a JSON object (application/json), not ${type ?? 'a body without a content type'}`,
    );
  const signedParams = Object.create(null) as Record<string, readonly string[]>;
  for (const [name, values] of fields) signedParams[name] = values;
  return { fields, signedParams };
}

/** Fields in `a=1&b=2` text, counted without decoding; stops counting past `max`. */
function countFormFields(text: string, max: number): number {
  let count = 0;
  let from = 0;
  while (from <= text.length && count <= max) {
    const at = text.indexOf('&', from);
    const end = at === -1 ? text.length : at;
    if (end > from) count++;
    if (at === -1) break;
    from = at + 1;
  }
  return count;
}

function formFields(text: string): FieldMap {
  const fields: FieldMap = new Map();
  for (const [name, value] of new URLSearchParams(text)) {
    const values = fields.get(name);
    if (values === undefined) fields.set(name, [value]);
    else values.push(value);
  }
  return fields;
}

/**
 * A JSON body's top-level fields, each as the text a form would carry: texts as they are, numbers
 * and booleans as JSON writes them. Anything else (a nested object or list, null, a body that is
 * not an object) is not a callback.
 */
function jsonFields(body: string, maxFields: number): FieldMap | Refusal {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return new Refusal(400, 'malformed', 'the body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return new Refusal(400, 'malformed', 'a JSON callback is an object of fields');
  const entries = Object.entries(parsed);
  if (entries.length > maxFields) return new Refusal(400, 'too_many_fields', '');
  const fields: FieldMap = new Map();
  for (const [name, value] of entries) {
    if (typeof value === 'string') fields.set(name, [value]);
    else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean')
      fields.set(name, [JSON.stringify(value)]);
    else
      return new Refusal(
        400,
        'malformed',
        `the JSON field ${JSON.stringify(name.slice(0, 80))} is ${value === null ? 'null' : Array.isArray(value) ? 'a list' : 'an object'}: a callback's fields are texts, numbers or booleans`,
      );
  }
  return fields;
}

/**
 * The account whose token signed the callback, or undefined. The signed text does not depend on
 * the token: it is built once, and each token costs one HMAC of it.
 */
function verifyAgainstAccounts(
  options: StreamCallbackRouteOptions,
  request: StreamCallbackRequest,
  read: ReadFields,
  nonce: string,
  signature: string,
): string | undefined {
  const url =
    request.query === '' ? options.callbackUrl : `${options.callbackUrl}?${request.query}`;
  // Throws CallbackUrlError only for a configured URL the start-up checks let through: a bug, 500.
  const signedText = `${buildStreamCallbackSignedUrl(request.method, url, read.signedParams)}.${nonce}`;
  let accountId: string | undefined;
  for (const account of options.accounts)
    if (matchesStreamCallbackSignature(signedText, signature, account.authToken))
      accountId ??= account.authId;
  return accountId;
}

function mediaType(contentType: string | undefined): string | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === undefined || type === '' ? undefined : type;
}

/**
 * Reads what the judgement needs from a request: the query, the signature headers, and the body up
 * to `maxBodyBytes` (a larger one is left unread, by its announced length or as it streams).
 */
export async function readStreamCallbackRequest(
  request: IncomingMessage,
  maxBodyBytes: number,
): Promise<StreamCallbackRequest> {
  return { ...readStreamCallbackHead(request), body: await readBody(request, maxBodyBytes) };
}

/** What a request's line and headers say (nothing of its body). */
function readStreamCallbackHead(request: IncomingMessage): Omit<StreamCallbackRequest, 'body'> {
  const target = request.url ?? '/';
  const at = target.indexOf('?');
  return {
    method: request.method === 'POST' ? 'POST' : 'GET',
    query: at === -1 ? '' : target.slice(at + 1),
    contentType: request.headers['content-type'],
    signature: header(request, SIGNATURE_V3_HEADER),
    nonce: header(request, SIGNATURE_V3_NONCE_HEADER),
  };
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(',') : value;
}

function readBody(
  request: IncomingMessage,
  maxBodyBytes: number,
): Promise<string | { readonly tooLarge: true }> {
  const announced = Number(request.headers['content-length'] ?? '0');
  if (announced > maxBodyBytes) {
    request.resume();
    return Promise.resolve({ tooLarge: true });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        request.off('data', onData);
        // The rest is drained unread, so the connection can answer.
        request.resume();
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.once('error', reject);
  });
}

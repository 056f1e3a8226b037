import type { IncomingMessage } from 'node:http';
import type { CallbackNonceLedger } from '../api/callback-replay-guard.js';
import { parseStreamCallback } from '../api/stream-callback.js';
import {
  SIGNATURE_V3_HEADER,
  SIGNATURE_V3_NONCE_HEADER,
  verifyStreamCallbackV3,
  type CallbackParams,
  type StreamSignatureRefusal,
} from '../api/stream-callback-signature.js';
import type {
  StreamEventInput,
  StreamEventOutcome,
} from '../db/repositories/stream-events-repository.js';
import { describeError } from '../util/coerce-error.js';
import type { Logger } from '../util/logger.js';
import type { EpochMicros } from '../util/micros.js';
import type { HttpAnswer, HttpRoute } from './http-route.js';

/**
 * The route that receives the service's stream status callbacks (GET with the fields in the query,
 * POST with a form body), by default `/callbacks/stream`. In order, a callback is:
 *
 * 1. read, at most STREAM_CALLBACK_MAX_BODY_BYTES (413 beyond), a POST only as a form (415 else:
 *    the service sends forms, never JSON, see docs/assumptions.md);
 * 2. verified (V3 signature) against the URL the service called, i.e. the configured callback URL
 *    plus the query as received (never the Host header, which a client chooses), and the token of
 *    each configured account in turn: the callback names no account, and the token that signed it
 *    is the account's secret, so the first that matches names the account (403 when none does);
 * 3. parsed (400 when a signed callback is malformed: the sender is the service, and the fault is
 *    worth an alert rather than a silent drop);
 * 4. judged fresh and new: its signed Timestamp within the replay window, its nonce not accepted
 *    before nor being stored right now (403 otherwise);
 * 5. stored once, in its own transaction (`storeEvent`); only then is its nonce remembered, so a
 *    delivery telesync failed to store (503) can come again with the same nonce.
 *
 * Nothing is stored for a refused callback; every answer is counted through `onVerdict`.
 */

/** Largest body read; the service's callbacks are a few hundred bytes. */
export const STREAM_CALLBACK_MAX_BODY_BYTES = 64 * 1024;

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
  { outcome: 'refused', reason: 'too_large' },
  { outcome: 'refused', reason: 'unsupported_media_type' },
  { outcome: 'failed', reason: 'store_failed' },
] as const satisfies readonly { outcome: StreamCallbackOutcome; reason: string }[];

export type StreamCallbackVerdict = (typeof STREAM_CALLBACK_VERDICTS)[number];
export type StreamCallbackReason = StreamCallbackVerdict['reason'];

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
  /** Stores one event in a transaction of its own; resolves once it is committed. */
  readonly storeEvent: (input: StreamEventInput) => Promise<StreamEventOutcome>;
  /** The nonces accepted recently (one ledger per process). */
  readonly nonces: CallbackNonceLedger;
  /** The clock, epoch microseconds. */
  readonly now: () => EpochMicros;
  /** Told of every answer (metrics). */
  readonly onVerdict?: (verdict: StreamCallbackVerdict) => void;
  readonly log: Logger;
  /** Default STREAM_CALLBACK_MAX_BODY_BYTES. */
  readonly maxBodyBytes?: number;
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
    const { status, contentType, body } = await receive(
      await readStreamCallbackRequest(request, maxBodyBytes),
    );
    return { status, contentType, body };
  };
  return [
    { method: 'GET', path: options.path, answer },
    { method: 'POST', path: options.path, answer },
  ];
}

/**
 * The judgement and storage of one callback, apart from the socket (tests give it requests
 * directly). A failed store is a 503 answer, not a rejection; it rejects only when the configured
 * callback URL cannot be signed, which the configuration's checks rule out.
 */
export function createStreamCallbackReceiver(
  options: StreamCallbackRouteOptions,
): (request: StreamCallbackRequest) => Promise<StreamCallbackAnswer> {
  // Nonces whose callback is being stored: a copy sent meanwhile is a replay, not a second store.
  const inFlight = new Set<string>();

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
    status: number,
    reason: Exclude<StreamCallbackReason, 'stored' | 'duplicate' | 'store_failed'>,
    message: string,
    context: Record<string, unknown> = {},
  ): StreamCallbackAnswer => {
    options.log.warn(
      { reason, ...context },
      `${options.path}: stream callback refused (${reason}): ${message}`,
    );
    return respond(status, { outcome: 'refused', reason }, { error: reason, message });
  };

  return async (request) => {
    if (typeof request.body !== 'string')
      return refuse(
        413,
        'too_large',
        `the body is larger than ${options.maxBodyBytes ?? STREAM_CALLBACK_MAX_BODY_BYTES} bytes`,
      );
    let fields: URLSearchParams;
    if (request.method === 'POST') {
      const type = mediaType(request.contentType);
      if (
        type !== 'application/x-www-form-urlencoded' &&
        !(type === undefined && request.body === '')
      )
        return refuse(
          415,
          'unsupported_media_type',
          `a POST callback is a form (application/x-www-form-urlencoded), not ${type ?? 'a body without a content type'}`,
        );
      fields = new URLSearchParams(request.body);
    } else {
      fields = new URLSearchParams(request.query);
    }

    const nonce = request.nonce ?? '';
    const signed = verifyAgainstAccounts(options, request, fields, nonce);
    if (!signed.valid) {
      // The configured URL was validated at start: a URL the signer cannot read is a bug here.
      if (signed.reason === 'bad_url') throw new Error(signed.message);
      return refuse(403, signed.reason === 'mismatch' ? 'forged' : signed.reason, signed.message);
    }

    const parsed = parseStreamCallback(fields);
    if (!parsed.ok) return refuse(400, 'malformed', parsed.message, { account: signed.accountId });
    const { event } = parsed;

    const now = options.now();
    const judged = options.nonces.check(nonce, event.eventTimeMicros, now);
    if (!judged.accept)
      return refuse(403, judged.reason, judged.message, {
        account: signed.accountId,
        stream: event.streamId,
      });
    if (inFlight.has(nonce))
      return refuse(
        403,
        'replayed',
        'a callback with this nonce is being stored: the request is a replay',
        {
          account: signed.accountId,
          stream: event.streamId,
        },
      );

    inFlight.add(nonce);
    try {
      const stored = await options.storeEvent({
        accountId: signed.accountId,
        callUuid: event.callUuid,
        streamId: event.streamId,
        event: event.event,
        eventTime: event.eventTime,
        error: event.error,
        deliveryKey: event.deliveryKey,
        fields: event.fields,
      });
      options.nonces.remember(nonce, judged.rememberUntil, options.now());
      options.log.debug(
        {
          account: signed.accountId,
          stream: event.streamId,
          event: event.event,
          stored: stored.stored,
        },
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
    } catch (error) {
      options.log.error(
        { account: signed.accountId, stream: event.streamId, event: event.event },
        `${options.path}: the stream event could not be stored: ${describeError(error)}`,
      );
      return respond(
        503,
        { outcome: 'failed', reason: 'store_failed' },
        { error: 'store_failed', message: 'the event could not be stored; send it again later' },
      );
    } finally {
      inFlight.delete(nonce);
    }
  };
}

type AccountSignatureCheck =
  | { readonly valid: true; readonly accountId: string }
  | { readonly valid: false; readonly reason: StreamSignatureRefusal; readonly message: string };

function verifyAgainstAccounts(
  options: StreamCallbackRouteOptions,
  request: StreamCallbackRequest,
  fields: URLSearchParams,
  nonce: string,
): AccountSignatureCheck {
  const url =
    request.query === '' ? options.callbackUrl : `${options.callbackUrl}?${request.query}`;
  const params = request.method === 'POST' ? groupFields(fields) : {};
  let refusal: AccountSignatureCheck = {
    valid: false,
    reason: 'mismatch',
    message: 'no account is configured to verify the signature with',
  };
  for (const account of options.accounts) {
    const check = verifyStreamCallbackV3({
      method: request.method,
      url,
      params,
      nonce,
      signature: request.signature,
      authToken: account.authToken,
    });
    if (check.valid) return { valid: true, accountId: account.authId };
    refusal =
      check.reason === 'mismatch'
        ? {
            ...check,
            message: `the ${SIGNATURE_V3_HEADER} signature matches no configured account's token for ${options.callbackUrl}`,
          }
        : check;
    // Unsigned or without a nonce: no other token can change that.
    if (check.reason !== 'mismatch') break;
  }
  return refusal;
}

function groupFields(fields: URLSearchParams): CallbackParams {
  const grouped: Record<string, string[]> = {};
  for (const [name, value] of fields) (grouped[name] ??= []).push(value);
  return grouped;
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
  const target = request.url ?? '/';
  const at = target.indexOf('?');
  return {
    method: request.method === 'POST' ? 'POST' : 'GET',
    query: at === -1 ? '' : target.slice(at + 1),
    contentType: request.headers['content-type'],
    body: await readBody(request, maxBodyBytes),
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

/**
 * Errors of calls to the service. They carry what an operator needs (status, the service's api_id
 * and error text, method and path) and never the credentials: the auth token travels only in the
 * Authorization header, which no error or log line includes.
 */

import { errorChain } from '../util/coerce-error.js';
import type { Redactor } from '../util/redact.js';

/** What went wrong, by where it went wrong. */
export type ApiFailureKind =
  /** The service answered with an error status. */
  | 'http'
  /** The connection failed or was reset before a complete answer arrived. */
  | 'network'
  /** No complete answer within the request timeout. */
  | 'timeout'
  /** An answer arrived but its body is not a valid response (truncated, not JSON). */
  | 'malformed'
  /** The answer's body passed the transport's size cap; the rest was not read. */
  | 'too_large';

export interface ApiErrorDetails {
  kind: ApiFailureKind;
  method: string;
  /** Path and query, relative to the base URL. */
  path: string;
  /** HTTP status, when the service answered. */
  status?: number;
  /** The service's identifier of the request, when its answer carried one. */
  apiId?: string;
  /** The service's own error text, when its answer carried one. */
  serviceMessage?: string;
  /** Whether trying the same request again may succeed (429, 5xx, network, timeout, malformed). */
  retryable: boolean;
  /** Seconds the service asked to wait (Retry-After), when it did. */
  retryAfterSeconds?: number;
  /** Attempts made, counting the first. */
  attempts?: number;
  /**
   * False when the request never reached the network (connection refused, a connect timeout), so
   * the service cannot have acted on it; absent means it may have.
   */
  sent?: boolean;
}

export class ApiError extends Error {
  override name = 'ApiError';
  readonly kind: ApiFailureKind;
  readonly method: string;
  readonly path: string;
  readonly status: number | undefined;
  readonly apiId: string | undefined;
  readonly serviceMessage: string | undefined;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly attempts: number | undefined;
  readonly sent: boolean;

  constructor(details: ApiErrorDetails, options?: { cause?: unknown }) {
    super(describeApiFailure(details), options);
    this.kind = details.kind;
    this.method = details.method;
    this.path = details.path;
    this.status = details.status;
    this.apiId = details.apiId;
    this.serviceMessage = details.serviceMessage;
    this.retryable = details.retryable;
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.attempts = details.attempts;
    this.sent = details.sent ?? true;
  }

  details(): ApiErrorDetails {
    return {
      kind: this.kind,
      method: this.method,
      path: this.path,
      retryable: this.retryable,
      ...(this.status !== undefined ? { status: this.status } : {}),
      ...(this.apiId !== undefined ? { apiId: this.apiId } : {}),
      ...(this.serviceMessage !== undefined ? { serviceMessage: this.serviceMessage } : {}),
      ...(this.retryAfterSeconds !== undefined
        ? { retryAfterSeconds: this.retryAfterSeconds }
        : {}),
      ...(this.attempts !== undefined ? { attempts: this.attempts } : {}),
      ...(this.sent ? {} : { sent: false }),
    };
  }
}

/**
 * `error` after `attempts` attempts in all (the final error of a retried call). A function, not a
 * method: a class that names itself in its body is bundled as `var ApiError = class _ApiError`,
 * and errors are told by their class's name (bin/renamed-classes.js).
 */
export function apiErrorWithAttempts(error: ApiError, attempts: number): ApiError {
  return new ApiError({ ...error.details(), attempts }, { cause: error.cause });
}

/**
 * Whether `error`, or one of its causes, is the service refusing the account's credentials (401):
 * no other request of that account can succeed until they are fixed.
 */
export function isCredentialsRefused(error: unknown): boolean {
  return errorChain(error).some((e) => e instanceof ApiError && e.status === 401);
}

/**
 * Whether the service may have acted on the request that failed: not when it was never sent, nor
 * when the service answered 4xx or a redirect (it refused or sent the request elsewhere). A 5xx, a
 * timeout, a reset, or an answer that could not be read leave it unknown.
 */
export function mayHaveActed(error: ApiError): boolean {
  if (!error.sent) return false;
  if (error.kind === 'http') return (error.status ?? 0) >= 500;
  return true;
}

/** What a status means for the person reading the error (its cause), and what to do about it. */
const STATUS_MEANING: Readonly<Record<number, { cause: string; advice?: string }>> = {
  400: { cause: 'the service rejected the request' },
  401: {
    cause: 'authentication failed',
    advice: 'check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN',
  },
  403: { cause: 'the account may not use this operation' },
  404: { cause: 'not found' },
  405: { cause: 'method not allowed' },
  429: {
    cause: 'rate limited by the service',
    advice:
      'lower TELESYNC_REQUEST_SHARE if this persists (other clients of the account share its budget)',
  },
};

/**
 * The failure as one line, cause first: `401 authentication failed: unknown auth_id or wrong
 * auth_token; check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN [api_id …]`. The request (method, path
 * and query) is not repeated here: it is a field of the error (`method`, `path`), which the JSON
 * log carries.
 */
function describeApiFailure(details: ApiErrorDetails): string {
  let what: string;
  let advice: string | undefined;
  switch (details.kind) {
    case 'http': {
      const status = details.status ?? 0;
      const meaning = STATUS_MEANING[status];
      advice = meaning?.advice;
      const cause =
        meaning?.cause ??
        (status >= 500
          ? 'the service had an internal problem'
          : status >= 300 && status < 400
            ? 'redirected'
            : 'unexpected answer');
      what = `${status} ${cause}`;
      break;
    }
    case 'network':
      what = 'the connection failed before a complete answer arrived';
      break;
    case 'timeout':
      what = 'no complete answer within the request timeout (TELESYNC_HTTP_TIMEOUT_MS)';
      break;
    case 'malformed':
      what = 'the answer is not a valid response (truncated or not JSON)';
      break;
    case 'too_large':
      what = 'the answer is too large to be a response of the service';
      break;
  }
  const service = details.serviceMessage
    ? `: ${withoutRepeatedLead(details.serviceMessage, what)}`
    : '';
  const attempts =
    details.attempts !== undefined && details.attempts > 1
      ? ` (after ${details.attempts} attempts)`
      : '';
  const apiId = details.apiId ? ` [api_id ${details.apiId}]` : '';
  return `${what}${service}${attempts}${advice === undefined ? '' : `; ${advice}`}${apiId}`;
}

/**
 * The service's message without a lead that `what` already says ("authentication failed: …"
 * after "401 authentication failed: check …"), so an error never says the same thing twice.
 */
function withoutRepeatedLead(serviceMessage: string, what: string): string {
  const lead = /^([^:]+):\s*(.+)$/.exec(serviceMessage);
  if (lead === null) return serviceMessage;
  return what.toLowerCase().includes(lead[1]!.trim().toLowerCase()) ? lead[2]! : serviceMessage;
}

/**
 * Reads the service's error text and api_id from an error body (assumption A2: JSON with `error`
 * and `api_id`; anything else is kept as plain text, shortened), with `redact` applied before the
 * body is decoded and again after: a body may spell a secret with JSON `\u` escapes, which only
 * decoding turns back into the secret (a body that is not JSON has its `\u` escapes decoded too).
 */
export function readErrorBody(
  body: string,
  redact: Redactor = (text) => text,
): { apiId?: string; serviceMessage?: string } {
  const text = redact(body).trim();
  if (text === '') return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const { api_id: apiId, error, message } = parsed as Record<string, unknown>;
      const detail = error ?? message;
      const serviceMessage =
        typeof detail === 'string'
          ? detail
          : detail !== undefined
            ? JSON.stringify(detail)
            : undefined;
      return {
        ...(typeof apiId === 'string' ? { apiId: redact(apiId) } : {}),
        ...(serviceMessage !== undefined
          ? { serviceMessage: shorten(redact(serviceMessage)) }
          : {}),
      };
    }
  } catch {
    // Not JSON: an HTML error page from a proxy, say. Kept as text below.
  }
  return { serviceMessage: shorten(redact(decodeUnicodeEscapes(text)).replace(/\s+/g, ' ')) };
}

/** `\uXXXX` escapes decoded, as JSON would decode them; the rest as it is. */
function decodeUnicodeEscapes(text: string): string {
  return text.replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}

function shorten(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

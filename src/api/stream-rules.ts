import type { AudioTrack } from './wire-types.js';

/**
 * The rules of starting an audio stream (spec 4.5), in one place: the client checks them before
 * sending and the simulator enforces them on what it receives, so the two can never disagree.
 */

export const AUDIO_TRACKS: readonly AudioTrack[] = ['inbound', 'outbound', 'both'];
export const CALLBACK_METHODS = ['GET', 'POST'] as const;
export type CallbackMethod = (typeof CALLBACK_METHODS)[number];
export const STREAM_CONTENT_TYPES = [
  'audio/x-l16;rate=8000',
  'audio/x-l16;rate=16000',
  'audio/x-mulaw;rate=8000',
] as const;
export type StreamContentType = (typeof STREAM_CONTENT_TYPES)[number];

export const STREAM_DEFAULTS = {
  audio_track: 'inbound' as AudioTrack,
  bidirectional: false,
  stream_timeout: 86_400,
  status_callback_method: 'POST' as CallbackMethod,
  content_type: 'audio/x-l16;rate=8000' as StreamContentType,
} as const;

/** extra_headers must total fewer than this many bytes. */
export const EXTRA_HEADERS_MAX_BYTES = 512;

/** Parameters of a stream start, as the caller gives them (defaults may be left out). */
export interface StartStreamParams {
  service_url: string;
  bidirectional?: boolean;
  audio_track?: AudioTrack;
  stream_timeout?: number;
  status_callback_url?: string;
  status_callback_method?: CallbackMethod;
  content_type?: StreamContentType;
  extra_headers?: string;
}

/** The same with every default applied: what the service acts on. */
export type ResolvedStartStreamParams = Required<
  Omit<StartStreamParams, 'status_callback_url' | 'extra_headers'>
> &
  Pick<StartStreamParams, 'status_callback_url' | 'extra_headers'>;

/** One broken rule, named by the parameter. */
export interface StreamRuleViolation {
  field: keyof StartStreamParams;
  message: string;
}

export type StreamRulesResult =
  | { ok: true; params: ResolvedStartStreamParams }
  | { ok: false; violations: StreamRuleViolation[] };

/**
 * Checks stream-start parameters against every rule of 4.5 and applies the defaults. Takes
 * `unknown` values because the simulator checks what arrived on the wire; every violation is
 * reported, not just the first. Unknown parameters are ignored.
 */
export function checkStartStreamParams(
  input: Readonly<Record<string, unknown>>,
): StreamRulesResult {
  const violations: StreamRuleViolation[] = [];
  const fail = (field: keyof StartStreamParams, message: string): void => {
    violations.push({ field, message });
  };

  const serviceUrl = input.service_url;
  if (serviceUrl === undefined || serviceUrl === null || serviceUrl === '') {
    fail('service_url', 'service_url is required: the wss://host/path URL that receives the audio');
  } else if (typeof serviceUrl !== 'string' || !isSecureWebSocketUrl(serviceUrl)) {
    fail(
      'service_url',
      `service_url must be a secure WebSocket URL of the form wss://host/path (got ${describe(serviceUrl)})`,
    );
  }

  const audioTrack = input.audio_track ?? STREAM_DEFAULTS.audio_track;
  if (!AUDIO_TRACKS.includes(audioTrack as AudioTrack)) {
    fail(
      'audio_track',
      `audio_track must be one of ${AUDIO_TRACKS.join(', ')} (got ${describe(audioTrack)})`,
    );
  }

  const bidirectional = input.bidirectional ?? STREAM_DEFAULTS.bidirectional;
  if (typeof bidirectional !== 'boolean') {
    fail('bidirectional', `bidirectional must be true or false (got ${describe(bidirectional)})`);
  } else if (
    bidirectional &&
    audioTrack !== 'inbound' &&
    AUDIO_TRACKS.includes(audioTrack as AudioTrack)
  ) {
    fail(
      'audio_track',
      `a bidirectional stream must use audio_track inbound, not ${describe(audioTrack)}`,
    );
  }

  const timeout = input.stream_timeout ?? STREAM_DEFAULTS.stream_timeout;
  if (typeof timeout !== 'number' || !Number.isSafeInteger(timeout) || timeout <= 0) {
    fail(
      'stream_timeout',
      `stream_timeout must be a positive whole number of seconds (got ${describe(timeout)})`,
    );
  }

  const callbackUrl = input.status_callback_url;
  if (
    callbackUrl !== undefined &&
    callbackUrl !== null &&
    (typeof callbackUrl !== 'string' || !isHttpUrl(callbackUrl))
  ) {
    fail(
      'status_callback_url',
      `status_callback_url must be an http(s) URL (got ${describe(callbackUrl)})`,
    );
  }

  const callbackMethod = input.status_callback_method ?? STREAM_DEFAULTS.status_callback_method;
  if (!CALLBACK_METHODS.includes(callbackMethod as CallbackMethod)) {
    fail(
      'status_callback_method',
      `status_callback_method must be GET or POST (got ${describe(callbackMethod)})`,
    );
  }

  const contentType = input.content_type ?? STREAM_DEFAULTS.content_type;
  if (!STREAM_CONTENT_TYPES.includes(contentType as StreamContentType)) {
    fail(
      'content_type',
      `content_type must be one of ${STREAM_CONTENT_TYPES.join(', ')} (got ${describe(contentType)})`,
    );
  }

  const extraHeaders = input.extra_headers;
  if (extraHeaders !== undefined && extraHeaders !== null) {
    const problem =
      typeof extraHeaders === 'string' ? extraHeadersProblem(extraHeaders) : 'must be text';
    if (problem !== undefined) fail('extra_headers', `extra_headers ${problem}`);
  }

  if (violations.length > 0) return { ok: false, violations };
  return {
    ok: true,
    params: {
      service_url: serviceUrl as string,
      bidirectional: bidirectional as boolean,
      audio_track: audioTrack as AudioTrack,
      stream_timeout: timeout as number,
      status_callback_method: callbackMethod as CallbackMethod,
      content_type: contentType as StreamContentType,
      ...(typeof callbackUrl === 'string' ? { status_callback_url: callbackUrl } : {}),
      ...(typeof extraHeaders === 'string' && extraHeaders !== ''
        ? { extra_headers: extraHeaders }
        : {}),
    },
  };
}

function isSecureWebSocketUrl(text: string): boolean {
  if (!text.startsWith('wss://')) return false;
  try {
    const url = new URL(text);
    return (
      url.protocol === 'wss:' && url.hostname !== '' && url.username === '' && url.password === ''
    );
  } catch {
    return false;
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

const ALPHANUMERIC = /^[A-Za-z0-9]+$/;

/** Why `value` is not a valid extra_headers text, or undefined when it is. */
function extraHeadersProblem(value: string): string | undefined {
  if (value === '') return undefined;
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes >= EXTRA_HEADERS_MAX_BYTES) {
    return `must total fewer than ${EXTRA_HEADERS_MAX_BYTES} bytes (got ${bytes})`;
  }
  const seen = new Set<string>();
  for (const pair of value.split(',')) {
    const parts = pair.split('=');
    const [key, val] = parts;
    if (parts.length !== 2 || key === undefined || val === undefined) {
      return `must be key=value pairs separated by commas, like key1=value1,key2=value2 (got "${pair}")`;
    }
    if (!ALPHANUMERIC.test(key) || !ALPHANUMERIC.test(val)) {
      return `keys and values may use only the characters A-Z, a-z and 0-9 (got "${pair}")`;
    }
    if (seen.has(key)) return `names the key "${key}" twice`;
    seen.add(key);
  }
  return undefined;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return `"${value.length > 80 ? `${value.slice(0, 80)}…` : value}"`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null)
    return String(value);
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return typeof value;
  }
}

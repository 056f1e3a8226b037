import type { ApiErrorBodyWire, ListMetaWire } from '../../api/wire-types.js';

/** An HTTP answer before it is sent: status, JSON text and extra headers. */
export interface SimAnswer {
  readonly status: number;
  /** JSON text, or its UTF-8 bytes; empty for 204. */
  readonly body: string | Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

/** An answer whose body is `value` as JSON. */
export function jsonAnswer(
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): SimAnswer {
  return { status, body: JSON.stringify(value), headers };
}

/** The body of an answer as text. */
export function answerText(answer: SimAnswer): string {
  return typeof answer.body === 'string' ? answer.body : answer.body.toString('utf8');
}

/** An answer whose body is already JSON text. */
export function jsonTextAnswer(status: number, body: string | Buffer): SimAnswer {
  return { status, body, headers: {} };
}

const OBJECTS_OPEN = Buffer.from(',"objects":[', 'latin1');
const COMMA = Buffer.from(',', 'latin1');
const ENVELOPE_CLOSE = Buffer.from(']}', 'latin1');

/**
 * The UTF-8 bytes of a list envelope whose objects are already JSON, as text or as bytes (records
 * rendered at start, RenderedCallRecords): the bytes JSON.stringify({ api_id, meta, objects })
 * writes for the same values.
 */
export function listEnvelopeBytes(
  apiId: string,
  meta: ListMetaWire,
  objects: readonly (string | Buffer)[],
): Buffer {
  const parts: Buffer[] = [
    Buffer.from(`{"api_id":${JSON.stringify(apiId)},"meta":${JSON.stringify(meta)}`, 'utf8'),
    OBJECTS_OPEN,
  ];
  objects.forEach((object, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(typeof object === 'string' ? Buffer.from(object, 'utf8') : object);
  });
  parts.push(ENVELOPE_CLOSE);
  return Buffer.concat(parts);
}

/** An error answer with the body of assumption A2: `{"api_id": "…", "error": "…"}`. */
export function errorAnswer(
  status: number,
  message: string,
  apiId: string,
  headers: Readonly<Record<string, string>> = {},
): SimAnswer {
  const body: ApiErrorBodyWire = { api_id: apiId, error: message };
  return jsonAnswer(status, body, headers);
}

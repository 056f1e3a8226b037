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

const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * The UTF-8 bytes of a list envelope whose objects are already JSON, as text or as bytes (records
 * rendered at start, RenderedCallRecords): the bytes JSON.stringify({ api_id, meta, objects })
 * writes for the same values, written once into a buffer of their exact length.
 */
export function listEnvelopeBytes(
  apiId: string,
  meta: ListMetaWire,
  objects: readonly (string | Buffer)[],
): Buffer {
  const head = `{"api_id":${JSON.stringify(apiId)},"meta":${JSON.stringify(meta)},"objects":[`;
  // The head, the objects, a comma between each two, and "]}".
  let length = Buffer.byteLength(head) + Math.max(0, objects.length - 1) + 2;
  for (const object of objects)
    length += typeof object === 'string' ? Buffer.byteLength(object) : object.length;
  const bytes = Buffer.allocUnsafe(length);
  let at = bytes.write(head);
  objects.forEach((object, i) => {
    if (i > 0) bytes[at++] = COMMA;
    at += typeof object === 'string' ? bytes.write(object, at) : object.copy(bytes, at);
  });
  bytes[at++] = CLOSE_BRACKET;
  bytes[at] = CLOSE_BRACE;
  return bytes;
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

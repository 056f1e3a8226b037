import type { ApiErrorBodyWire, ListMetaWire } from '../../api/wire-types.js';

/** An HTTP answer before it is sent: status, JSON text and extra headers. */
export interface SimAnswer {
  readonly status: number;
  /** JSON text; empty for 204. */
  readonly body: string;
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

/** An answer whose body is already JSON text. */
export function jsonTextAnswer(status: number, body: string): SimAnswer {
  return { status, body, headers: {} };
}

/**
 * The JSON text of a list envelope whose objects are already JSON texts: the bytes
 * JSON.stringify({ api_id, meta, objects }) writes for the same values.
 */
export function listEnvelopeJson(
  apiId: string,
  meta: ListMetaWire,
  objectTexts: readonly string[],
): string {
  return `{"api_id":${JSON.stringify(apiId)},"meta":${JSON.stringify(meta)},"objects":[${objectTexts.join(',')}]}`;
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

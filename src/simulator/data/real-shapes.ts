import type {
  ListMetaWire,
  SenderPackWire,
  StreamRecordWire,
  TrunkCallRecordWire,
  VerifiedCallerIdWire,
} from '../../api/wire-types.js';
import { hashText } from './prng.js';
import { writeMessageJson, type MessageContent } from './message-data.js';

/**
 * The shapes the real service sends where the spec's samples differ (docs/assumptions.md
 * A38–A45), as pure, deterministic transforms of the records the simulator generates. Every
 * value telesync stores keeps its meaning: times without an offset are UTC, the extra fraction
 * digits come after the microseconds, and a field the real shape drops is one telesync stores as
 * NULL.
 */

/** Trunk call fields the documented CDR does not have (A39). */
const TRUNK_FIELDS_ABSENT = [
  'parent_call_uuid',
  'conference_uuid',
  'api_id',
  'resource_uri',
  'call_state',
  'billed_duration',
  'Stir_attestation',
  'voice_network_group',
  'source_ip',
] as const;

const SERVICE_TIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `2024-01-15 07:32:00-07:00` → `2024-01-15 14:32:00`: the same instant in UTC, written without an
 * offset as the real CDR is (A38); the fraction, if any, is kept digit for digit.
 */
function asUtcWithoutOffset(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const match = SERVICE_TIME.exec(value);
  if (match === null) return value;
  const [, date, time, fraction = '', zone] = match;
  const utc = new Date(`${date}T${time}${zone}`).toISOString();
  return `${utc.slice(0, 10)} ${utc.slice(11, 19)}${fraction}`;
}

/** A trunk call record as the real CDR has it: times without an offset, fewer fields (A38, A39). */
export function realTrunkCallRecord(
  record: Readonly<Record<string, unknown>> | TrunkCallRecordWire,
): Record<string, unknown> {
  const real: Record<string, unknown> = { ...record };
  for (const field of TRUNK_FIELDS_ABSENT) delete real[field];
  for (const field of ['initiation_time', 'answer_time', 'end_time'] as const)
    real[field] = asUtcWithoutOffset(real[field]);
  return real;
}

/**
 * `…22.880097Z` → `…22.880097813Z`: nanoseconds, the last three digits drawn from `key` so the
 * same record always reads the same. A value without 6 fraction digits is left as it is.
 */
export function withNanoseconds(value: string, key: string): string {
  const extra = String(hashText(key) % 1000).padStart(3, '0');
  return value.replace(/(\.\d{6})(Z|[+-]\d{2}:\d{2})$/, `$1${extra}$2`);
}

/** A listed caller ID with 9-digit fractions in its times (A41). */
export function realCallerId(record: VerifiedCallerIdWire): Record<string, unknown> {
  return {
    ...record,
    created_at: withNanoseconds(record.created_at, `${record.phone_number}/created_at`),
    modified_at: withNanoseconds(record.modified_at, `${record.phone_number}/modified_at`),
  };
}

/**
 * The single object the real service answers for one number (A9, A41): no resource_uri,
 * modified_at or subaccount, a `channel`, and the api_id of the answer.
 */
export function realSingleCallerId(
  record: VerifiedCallerIdWire,
  apiId: string,
): Record<string, unknown> {
  const { resource_uri: _uri, modified_at: _modified, subaccount: _sub, ...kept } = record;
  return {
    api_id: apiId,
    ...kept,
    created_at: withNanoseconds(record.created_at, `${record.phone_number}/created_at`),
    channel: 'call',
  };
}

/** A message with error_code, dlt_* and conversation_* null, as a record not yet billed has (A40). */
export function realMessageJson(content: MessageContent, apiId: string): string {
  const real = {
    ...content,
    error_code: null,
    dlt_entity_id: null,
    dlt_template_id: null,
    dlt_template_category: null,
    conversation_id: null,
    conversation_origin: null,
    conversation_expiration_timestamp: null,
  } as unknown as MessageContent;
  return writeMessageJson(real, apiId);
}

/**
 * A sender pack with its application_id a JSON number written digit for digit (A43; JSON.stringify
 * of a JS number would round past 2^53), a 9-digit created_on and no number_priority (A44).
 */
export function realPackJson(pack: Omit<SenderPackWire, 'api_id'>, apiId: string): string {
  const { number_priority: _priority, application_id: applicationId, ...rest } = pack;
  const fields: Record<string, unknown> = {
    api_id: apiId,
    ...rest,
    created_on: withNanoseconds(pack.created_on, `${pack.uuid}/created_on`),
  };
  const parts = Object.entries(fields).map(
    ([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`,
  );
  // An empty id has no number form: the real service then sends null.
  const idText = /^\d+$/.test(applicationId) ? applicationId.replace(/^0+(?=\d)/, '') : 'null';
  parts.push(`"application_id":${idText}`);
  return `{${parts.join(',')}}`;
}

/** The short stream record of the real stream list (A42): status, times null until they happen. */
export function realStreamRecord(record: StreamRecordWire): Record<string, unknown> {
  return {
    stream_id: record.stream_id,
    call_uuid: record.call_uuid,
    service_url: record.service_url,
    status: record.end_time === null ? 'in-progress' : 'completed',
    status_callback_url: null,
    start_time: record.start_time,
    end_time: record.end_time,
  };
}

/** The real stream list's meta (A45): `count` instead of total_count, `""` for no page. */
export function realStreamListMeta(meta: ListMetaWire): Record<string, unknown> {
  return {
    count: meta.total_count,
    limit: meta.limit,
    offset: meta.offset,
    next: meta.next ?? '',
    previous: meta.previous ?? '',
  };
}

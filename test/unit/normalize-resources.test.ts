import type { Insertable } from 'kysely';
import { describe, expect, it } from 'vitest';
import { parseRecordBody, type ReceivedRecord } from '../../src/api/received-json.js';
import { RecordJson } from '../../src/util/record-json.js';
import { formatIsoMicros, type EpochMicros } from '../../src/util/micros.js';
import { normalizeCallStream } from '../../src/normalize/normalize-call-stream.js';
import { normalizeMessage } from '../../src/normalize/normalize-message.js';
import type {
  NormalizeContext,
  NormalizeResult,
  Rejection,
} from '../../src/normalize/normalize-result.js';
import { normalizePowerpack } from '../../src/normalize/normalize-powerpack.js';
import { normalizeSipEndpoint } from '../../src/normalize/normalize-sip-endpoint.js';
import { normalizeTrunkCall } from '../../src/normalize/normalize-trunk-call.js';
import { normalizeVerifiedCallerId } from '../../src/normalize/normalize-verified-caller-id.js';
import { RECORD_MAX_BYTES } from '../../src/normalize/record-reader.js';
import { DATA_TABLES } from '../../src/db/table-specs.js';
import type {
  CallStreamsTable,
  MessagesTable,
  PowerpacksTable,
  SipEndpointsTable,
  TrunkCallsTable,
  VerifiedCallerIdsTable,
} from '../../src/db/schema.js';
import { columnOf, specFields, type SpecPgType } from '../support/spec-fields.js';

const ACCOUNT = 'MAXXXXXXXXXXXXXXXXXX';
const context: NormalizeContext = { accountId: ACCOUNT };

/** A record as the api client hands it over: its bytes parsed by the real body reader. */
function received(jsonText: string): ReceivedRecord {
  return parseRecordBody(new TextEncoder().encode(jsonText));
}

function receivedObject(record: object): ReceivedRecord {
  return received(JSON.stringify(record));
}

/** The same record with one more key written in front, so that a key can be given twice. */
function withLeadingKey(record: object, key: string, valueJson: string): ReceivedRecord {
  return received(`{${JSON.stringify(key)}:${valueJson},${JSON.stringify(record).slice(1)}`);
}

type Normalizer = (record: ReceivedRecord, context: NormalizeContext) => NormalizeResult<object>;

/** The row, with `raw` (the record's text as received) parsed back for structural comparison. */
function rowOf(result: NormalizeResult<object>): Record<string, unknown> {
  if (!result.ok) throw new Error(`expected a row, got the rejection: ${result.rejection.reason}`);
  const row = result.row as Record<string, unknown>;
  return row.raw instanceof RecordJson ? { ...row, raw: JSON.parse(row.raw.text) as unknown } : row;
}

function rejectionOf(result: NormalizeResult<object>): Rejection {
  if (result.ok) throw new Error(`expected a rejection, got the row ${JSON.stringify(result.row)}`);
  return result.rejection;
}

function without(record: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...record };
  delete copy[key];
  return copy;
}

// ---- samples, in the forms of the spec's section 2 ------------------------------------------------

const CALL_UUID = '5f3a3c1e-8a7b-4d2e-9f10-2b3c4d5e6f70';

const TRUNK_CALL = {
  call_uuid: CALL_UUID,
  parent_call_uuid: null,
  conference_uuid: null,
  api_id: '0e5f2b7c-6a9d-4c1e-8b3f-7d2a1c0e9f84',
  resource_uri: `/v1/Account/${ACCOUNT}/Call/${CALL_UUID}/`,
  call_direction: 'outbound',
  call_state: 'ANSWER',
  from_number: '14155550100',
  to_number: 'sip:alice@phone.example.com',
  initiation_time: '2022-03-29 11:10:07+05:30',
  answer_time: '2022-03-29 11:10:09+05:30',
  end_time: '2022-03-29 11:10:29+05:30',
  call_duration: 22,
  bill_duration: 20,
  billed_duration: 60,
  total_rate: '0.00850',
  total_amount: '0.00850000000001',
  hangup_cause_code: 4000,
  hangup_cause_name: 'Normal Hangup',
  hangup_source: 'Error',
  stir_verification: 'Verified',
  Stir_attestation: 'A',
  voice_network_group: '',
  source_ip: '203.0.113.7',
};

const TRUNK_CALL_ROW = {
  call_uuid: CALL_UUID,
  parent_call_uuid: null,
  conference_uuid: null,
  api_id: '0e5f2b7c-6a9d-4c1e-8b3f-7d2a1c0e9f84',
  resource_uri: `/v1/Account/${ACCOUNT}/Call/${CALL_UUID}/`,
  call_direction: 'outbound',
  call_state: 'ANSWER',
  from_number: '14155550100',
  to_number: 'sip:alice@phone.example.com',
  // Epoch microseconds (binary COPY's timestamptz): 2022-03-29T05:40:07Z, :09Z and :29Z.
  initiation_time: 1_648_532_407_000_000,
  answer_time: 1_648_532_409_000_000,
  end_time: 1_648_532_429_000_000,
  call_duration: 22,
  bill_duration: 20,
  billed_duration: 60,
  total_rate: '0.00850',
  total_amount: '0.00850000000001',
  hangup_cause_code: 4000,
  hangup_cause_name: 'Normal Hangup',
  hangup_source: 'Error',
  stir_verification: 'Verified',
  stir_attestation: 'A',
  voice_network_group: '',
  source_ip: '203.0.113.7',
};

const SIP_ENDPOINT = {
  alias: 'reception-desk',
  application: `/v1/Account/${ACCOUNT}/Application/29184326208418563/`,
  endpoint_id: '39452475478853',
  resource_uri: `/v1/Account/${ACCOUNT}/Endpoint/39452475478853/`,
  sip_contact: 'sip:reception220329@198.51.100.23:5060;transport=udp',
  sip_expires: '2022-03-29 11:40:29',
  sip_registered: 'true',
  sip_uri: 'sip:reception220329@phone.plivo.com',
  sip_user_agent: 'Linphone/4.4.0 (belle-sip/4.4.0)',
  sub_account: null,
  username: 'reception220329',
};

const SIP_ENDPOINT_ROW = {
  endpoint_id: '39452475478853',
  username: 'reception220329',
  alias: 'reception-desk',
  application: `/v1/Account/${ACCOUNT}/Application/29184326208418563/`,
  resource_uri: `/v1/Account/${ACCOUNT}/Endpoint/39452475478853/`,
  sip_uri: 'sip:reception220329@phone.plivo.com',
  sip_registered: true,
  sip_contact: 'sip:reception220329@198.51.100.23:5060;transport=udp',
  sip_expires: '2022-03-29T11:40:29Z',
  sip_user_agent: 'Linphone/4.4.0 (belle-sip/4.4.0)',
  sub_account: null,
};

const CALLER_ID = {
  alias: 'Support line',
  country: 'US',
  created_at: '2022-03-29T05:40:29.456727Z',
  modified_at: '2022-04-01T10:00:00.000001Z',
  phone_number: '+14155550123',
  resource_uri: `/v1/Account/${ACCOUNT}/VerifiedCallerId/14155550123`,
  subaccount: '',
  verification_uuid: 'f87836bd-f3c0-41bb-9498-125e6faaa4d4',
};

const CALLER_ID_ROW = {
  phone_number: '+14155550123',
  alias: 'Support line',
  country: 'US',
  created_at: '2022-03-29T05:40:29.456727Z',
  modified_at: '2022-04-01T10:00:00.000001Z',
  resource_uri: `/v1/Account/${ACCOUNT}/VerifiedCallerId/14155550123`,
  subaccount: '',
  verification_uuid: 'f87836bd-f3c0-41bb-9498-125e6faaa4d4',
};

const MESSAGE_UUID = 'bd8b6b7c-9f3a-11ec-8b1f-0242ac110002';

const MESSAGE = {
  message_uuid: MESSAGE_UUID,
  resource_uri: `/v1/Account/${ACCOUNT}/Message/${MESSAGE_UUID}/`,
  message_direction: 'outbound',
  message_state: 'delivered',
  message_type: 'sms',
  message_time: '2022-03-29 11:10:29.456727+05:30',
  from_number: '14155550100',
  to_number: '14155550111',
  replaced_sender: '18005550199',
  destination_country_iso2: 'US',
  destination_network: 'T-Mobile',
  mcc: '310',
  mnc: '260',
  units: 1,
  total_rate: '0.00850',
  total_amount: '0.00850',
  carrier_fees_rate: '0.00300',
  carrier_fees: '0.00300',
  error_code: '000',
  is_domestic: false,
  powerpack_id: '9c5e3f3a-1f2b-4c8d-9e7f-6a5b4c3d2e1f',
  tendlc_campaign_id: 'CXXXXXX',
  tendlc_registration_status: 'registered',
  dlt_entity_id: '',
  dlt_template_id: '',
  dlt_template_category: '',
  requester_ip: '198.51.100.9',
  conversation_id: 'e1c8f2a4b6d0',
  conversation_origin: 'authentication',
  conversation_expiration_timestamp: '2022-03-30 11:10:29+05:30',
  log: 'number_only',
  api_id: '7a1d2c3b-9f3a-11ec-8b1f-0242ac110002',
};

const MESSAGE_ROW = {
  message_uuid: MESSAGE_UUID,
  resource_uri: `/v1/Account/${ACCOUNT}/Message/${MESSAGE_UUID}/`,
  message_direction: 'outbound',
  message_state: 'delivered',
  message_type: 'sms',
  message_time: '2022-03-29T05:40:29.456727Z',
  from_number: '14155550100',
  to_number: '14155550111',
  replaced_sender: '18005550199',
  destination_country_iso2: 'US',
  destination_network: 'T-Mobile',
  mcc: '310',
  mnc: '260',
  units: 1,
  total_rate: '0.00850',
  total_amount: '0.00850',
  carrier_fees_rate: '0.00300',
  carrier_fees: '0.00300',
  error_code: '000',
  is_domestic: false,
  powerpack_id: '9c5e3f3a-1f2b-4c8d-9e7f-6a5b4c3d2e1f',
  tendlc_campaign_id: 'CXXXXXX',
  tendlc_registration_status: 'registered',
  dlt_entity_id: '',
  dlt_template_id: '',
  dlt_template_category: '',
  requester_ip: '198.51.100.9',
  conversation_id: 'e1c8f2a4b6d0',
  conversation_origin: 'authentication',
  conversation_expiration_timestamp: '2022-03-30T05:40:29Z',
  log: 'number_only',
  api_id: '7a1d2c3b-9f3a-11ec-8b1f-0242ac110002',
};

const PACK_UUID = '9c5e3f3a-1f2b-4c8d-9e7f-6a5b4c3d2e1f';

const POWERPACK = {
  uuid: PACK_UUID,
  name: 'Alerts pool',
  application_id: '',
  application_type: '',
  created_on: '2022-03-29T05:40:29.456727Z',
  local_connect: false,
  sticky_sender: true,
  number_pool: `/v1/Account/${ACCOUNT}/NumberPool/659c7f88-c819-46e2-8af4-2d8a84249099/`,
  number_priority: [
    {
      country_iso: 'US',
      service_type: 'SMS',
      priority: { priority1: 'shortcode', priority2: 'tollfree', priority3: 'longcode' },
    },
    {
      country_iso: 'CA',
      service_type: 'MMS',
      priority: { priority1: 'longcode', priority2: 'shortcode', priority3: 'tollfree' },
    },
  ],
  api_id: '3c2b1a09-9f3a-11ec-8b1f-0242ac110002',
};

const POWERPACK_ROW = {
  uuid: PACK_UUID,
  name: 'Alerts pool',
  application_id: '',
  application_type: '',
  created_on: '2022-03-29T05:40:29.456727Z',
  local_connect: false,
  sticky_sender: true,
  number_pool: `/v1/Account/${ACCOUNT}/NumberPool/659c7f88-c819-46e2-8af4-2d8a84249099/`,
  number_priority: POWERPACK.number_priority,
  api_id: '3c2b1a09-9f3a-11ec-8b1f-0242ac110002',
};

const STREAM_ID = '20a5f2e8-0b3c-4d6e-8f1a-2b3c4d5e6f70';

const CALL_STREAM = {
  stream_id: STREAM_ID,
  call_uuid: CALL_UUID,
  service_auth_id: ACCOUNT,
  resource_uri: `/v1/Account/${ACCOUNT}/Call/${CALL_UUID}/Stream/${STREAM_ID}/`,
  service_url: 'wss://media.example.com/audio',
  audio_track: 'both',
  bidirectional: false,
  created_at: '2022-03-29 11:10:08.123456+05:30',
  start_time: '2022-03-29 11:10:08+05:30',
  end_time: '2022-03-29 11:10:29+05:30',
  bill_duration: 21,
  rounded_bill_duration: 60,
  billed_amount: '0.00300',
};

const CALL_STREAM_ROW = {
  stream_id: STREAM_ID,
  call_uuid: CALL_UUID,
  service_auth_id: ACCOUNT,
  resource_uri: `/v1/Account/${ACCOUNT}/Call/${CALL_UUID}/Stream/${STREAM_ID}/`,
  service_url: 'wss://media.example.com/audio',
  audio_track: 'both',
  bidirectional: false,
  created_at: '2022-03-29T05:40:08.123456Z',
  start_time: '2022-03-29T05:40:08Z',
  end_time: '2022-03-29T05:40:29Z',
  bill_duration: 21,
  rounded_bill_duration: 60,
  billed_amount: '0.00300',
};

// ---- what every normaliser must do --------------------------------------------------------------

interface ResourceCase {
  name: string;
  table: string;
  stream: string;
  label: string;
  normalize: Normalizer;
  sample: Record<string, unknown>;
  row: Record<string, unknown>;
  keyField: string;
  /** Wire fields that may be left out (stored as null). */
  optional: readonly string[];
  /** Wire fields that may be null. */
  nullable: readonly string[];
  /** Identifier fields beyond the key, which must be non-empty too. */
  identifiers: readonly string[];
  /** Columns beyond the spec table's fields. */
  extraColumns: readonly string[];
  /** A plain text field. */
  textField: string;
  /** Text fields the service may also send as a whole JSON number, stored as its digits (A43). */
  wholeNumberText?: readonly string[];
}

const TRUNK_CALL_OPTIONAL = [
  'parent_call_uuid',
  'conference_uuid',
  'api_id',
  'resource_uri',
  'call_state',
  'answer_time',
  'billed_duration',
  'Stir_attestation',
  'voice_network_group',
  'source_ip',
];

const MESSAGE_OPTIONAL = [
  'replaced_sender',
  'destination_country_iso2',
  'destination_network',
  'mcc',
  'mnc',
  'carrier_fees_rate',
  'carrier_fees',
  'is_domestic',
  'powerpack_id',
  'tendlc_campaign_id',
  'tendlc_registration_status',
  'dlt_entity_id',
  'dlt_template_id',
  'dlt_template_category',
  'requester_ip',
  'conversation_id',
  'conversation_origin',
  'conversation_expiration_timestamp',
  'log',
  'api_id',
];

const CALL_STREAM_OPTIONAL = [
  'service_auth_id',
  'resource_uri',
  'audio_track',
  'bidirectional',
  'created_at',
  'start_time',
  'end_time',
  'bill_duration',
  'rounded_bill_duration',
  'billed_amount',
];

const RESOURCES: readonly ResourceCase[] = [
  {
    name: 'trunk call',
    table: 'trunk_calls',
    stream: 'trunk_calls',
    label: 'trunk call record (spec 2.6)',
    normalize: normalizeTrunkCall,
    sample: TRUNK_CALL,
    row: TRUNK_CALL_ROW,
    keyField: 'call_uuid',
    // Fields the real service's CDRs are documented without (A39).
    optional: TRUNK_CALL_OPTIONAL,
    nullable: TRUNK_CALL_OPTIONAL,
    identifiers: [],
    extraColumns: [],
    textField: 'hangup_cause_name',
  },
  {
    name: 'SIP endpoint',
    table: 'sip_endpoints',
    stream: 'endpoints',
    label: 'SIP endpoint (spec 2.1)',
    normalize: normalizeSipEndpoint,
    sample: SIP_ENDPOINT,
    row: SIP_ENDPOINT_ROW,
    keyField: 'endpoint_id',
    optional: ['sip_contact', 'sip_expires', 'sip_user_agent'],
    nullable: ['sip_contact', 'sip_expires', 'sip_user_agent', 'sub_account'],
    identifiers: [],
    extraColumns: [],
    textField: 'alias',
  },
  {
    name: 'verified caller ID',
    table: 'verified_caller_ids',
    stream: 'caller_ids',
    label: 'verified caller ID (spec 2.2)',
    normalize: normalizeVerifiedCallerId,
    sample: CALLER_ID,
    row: CALLER_ID_ROW,
    keyField: 'phone_number',
    // Left out of the single-number answer and the documented samples (A41).
    optional: ['modified_at', 'resource_uri', 'subaccount'],
    nullable: ['modified_at', 'resource_uri', 'subaccount'],
    identifiers: [],
    extraColumns: [],
    textField: 'alias',
  },
  {
    name: 'message detail record',
    table: 'messages',
    stream: 'messages',
    label: 'message detail record (spec 2.3)',
    normalize: normalizeMessage,
    sample: MESSAGE,
    row: MESSAGE_ROW,
    keyField: 'message_uuid',
    // Absent or null on real messages (A40); error_code is always given, but may be null.
    optional: MESSAGE_OPTIONAL,
    nullable: [...MESSAGE_OPTIONAL, 'error_code'],
    identifiers: [],
    extraColumns: [],
    textField: 'destination_network',
  },
  {
    name: 'sender pack',
    table: 'powerpacks',
    stream: 'powerpacks',
    label: 'sender pack (spec 2.4)',
    normalize: normalizePowerpack,
    sample: POWERPACK,
    row: POWERPACK_ROW,
    keyField: 'uuid',
    // application_id may also be null; sticky_sender and number_priority may be left out (A44).
    wholeNumberText: ['application_id'],
    optional: ['api_id', 'application_id', 'application_type', 'sticky_sender', 'number_priority'],
    nullable: ['api_id', 'application_id', 'application_type', 'sticky_sender', 'number_priority'],
    identifiers: [],
    extraColumns: ['api_id'],
    textField: 'name',
  },
  {
    name: 'stream record',
    table: 'call_streams',
    stream: 'call_streams',
    label: 'stream record (spec 2.5)',
    normalize: normalizeCallStream,
    sample: CALL_STREAM,
    row: CALL_STREAM_ROW,
    keyField: 'stream_id',
    // The shorter stream-record shape of the real service (A42) leaves these out or null.
    optional: CALL_STREAM_OPTIONAL,
    nullable: CALL_STREAM_OPTIONAL,
    identifiers: ['call_uuid'],
    extraColumns: [],
    textField: 'service_url',
  },
];

/** Values of the wrong kind for a field of each Postgres type. */
const WRONG_VALUES: Readonly<Record<SpecPgType, readonly unknown[]>> = {
  text: [42, true, {}, ['x']],
  integer: ['21', 1.5, 2_147_483_648, true, {}, []],
  numeric: [0.0085, 'abc', '1e309', '', true, {}],
  'timestamp with time zone': ['2022-03-29', '2022-02-30 10:00:00+00:00', 1_648_532_429, {}],
  boolean: ['yes', 1, 0, '', {}],
  jsonb: [{}, 'x', 1, [1]],
};

describe.each(RESOURCES)('the $name normaliser', (resource) => {
  const { normalize, sample, keyField, stream, label, optional, nullable, identifiers, textField } =
    resource;
  const fields = specFields(resource.table);
  const key = sample[keyField] as string;

  it('stores every field in its column, with the value and type the table holds', () => {
    const record = receivedObject(sample);
    const result = normalize(record, context);
    expect(rowOf(result)).toStrictEqual({ account_id: ACCOUNT, ...resource.row, raw: sample });
    expect(result.ok && result.key).toBe(key);
  });

  it("gives the row exactly the table's columns: every spec field, account_id and raw", () => {
    const row = rowOf(normalize(receivedObject(sample), context));
    expect(Object.keys(row).sort()).toStrictEqual(
      ['account_id', 'raw', ...Object.keys(fields).map(columnOf), ...resource.extraColumns].sort(),
    );
  });

  it('gives the row exactly the columns its table spec loads (src/db/table-specs.ts)', () => {
    const spec = DATA_TABLES.find((candidate) => candidate.table === resource.table);
    expect(spec, `no table spec for ${resource.table}`).toBeDefined();
    const row = rowOf(normalize(receivedObject(sample), context));
    expect(Object.keys(row).sort()).toStrictEqual([...(spec?.columns ?? [])].sort());
  });

  it('keeps the record text exactly as received as raw, unknown keys and every digit included', () => {
    const record = received(
      `${JSON.stringify({ ...sample, added_later: { nested: ['kept', 1] } }).slice(0, -1)},"big":123456789012345678901234567890.5}`,
    );
    const result = normalize(record, context);
    const raw = result.ok ? (result.row as { raw: unknown }).raw : undefined;
    expect(raw instanceof RecordJson && raw.text).toBe(record.text);
    expect(raw instanceof RecordJson && raw.bytes).toBe(record.bytes);
    const row = rowOf(result);
    delete (row.raw as Record<string, unknown>).big;
    expect(row.raw).toStrictEqual({ ...sample, added_later: { nested: ['kept', 1] } });
    expect({ ...row, raw: sample }).toStrictEqual({
      account_id: ACCOUNT,
      ...resource.row,
      raw: sample,
    });
  });

  const required = Object.keys(fields).filter((field) => !optional.includes(field));
  it.each(required)('rejects a record without %s, naming it', (field) => {
    const rejection = rejectionOf(normalize(receivedObject(without(sample, field)), context));
    expect(rejection).toStrictEqual({
      stream,
      field,
      reason: `${field} is missing: every ${label} carries it`,
      ...(field === keyField ? {} : { recordKey: key }),
    });
  });

  if (optional.length > 0) {
    it.each(optional)('stores null for %s when the record leaves it out', (field) => {
      const row = rowOf(normalize(receivedObject(without(sample, field)), context));
      expect(row[columnOf(field)]).toBeNull();
    });
  }

  const allFields = [...Object.keys(fields), ...resource.extraColumns];
  it.each(allFields)('stores null for %s only where the spec allows null', (field) => {
    const result = normalize(receivedObject({ ...sample, [field]: null }), context);
    if (nullable.includes(field)) {
      expect(rowOf(result)[columnOf(field)]).toBeNull();
    } else {
      const rejection = rejectionOf(result);
      expect(rejection.field).toBe(field);
      expect(rejection.reason).toMatch(new RegExp(`^${field} must be .*; got null`));
    }
  });

  const wrongTyped = Object.entries(fields).flatMap(([field, type]) =>
    WRONG_VALUES[type]
      .filter((value) => !(resource.wholeNumberText?.includes(field) && Number.isInteger(value)))
      .map((value) => ({ field, value, type })),
  );
  it.each(wrongTyped)('rejects $field ($type) given $value', ({ field, value }) => {
    const rejection = rejectionOf(
      normalize(receivedObject({ ...sample, [field]: value }), context),
    );
    expect(rejection.stream).toBe(stream);
    expect(rejection.field).toBe(field);
    expect(rejection.reason).toMatch(new RegExp(`^${field}(\\[\\d+\\]\\S*)? must be `));
    if (field !== keyField) expect(rejection.recordKey).toBe(key);
  });

  it.each([keyField, ...identifiers])('rejects an empty %s: identifiers are keys', (field) => {
    const rejection = rejectionOf(normalize(receivedObject({ ...sample, [field]: '' }), context));
    expect(rejection.field).toBe(field);
    expect(rejection.reason).toBe(
      `${field} must be non-empty text identifying the record; got an empty text`,
    );
  });

  it('rejects U+0000 in a known text field', () => {
    const rejection = rejectionOf(
      normalize(receivedObject({ ...sample, [textField]: 'a\u0000b' }), context),
    );
    expect(rejection).toStrictEqual({
      stream,
      field: textField,
      reason: `${textField} holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb`,
      recordKey: key,
    });
  });

  it('rejects U+0000 in a nested text of an unknown field, which raw (jsonb) would hold', () => {
    const rejection = rejectionOf(
      normalize(receivedObject({ ...sample, extra: { list: ['ok', 'x\u0000'] } }), context),
    );
    expect(rejection).toStrictEqual({
      stream,
      field: 'extra',
      reason:
        'extra has a nested text that holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
      recordKey: key,
    });
  });

  it('rejects U+0000 in a key, at the top level and nested', () => {
    const top = rejectionOf(normalize(receivedObject({ ...sample, 'odd\u0000key': 1 }), context));
    expect(top.reason).toBe(
      'the key "odd\\u0000key" holds the character U+0000 (NUL), which PostgreSQL cannot store in text or jsonb',
    );
    expect(top.recordKey).toBe(key);
    const nested = rejectionOf(
      normalize(receivedObject({ ...sample, extra: [{ 'k\u0000': true }] }), context),
    );
    expect(nested.field).toBe('extra');
    expect(nested.reason).toMatch(/^extra has a nested key "k\\u0000" that holds the character/);
  });

  it('rejects an unpaired surrogate escape anywhere in the record', () => {
    const rejection = rejectionOf(
      normalize(received(JSON.stringify(sample).replace(/}$/, ',"extra":"\\ud800"}')), context),
    );
    expect(rejection.field).toBe('extra');
    expect(rejection.reason).toMatch(/unpaired UTF-16 surrogate/);
  });

  it('rejects U+0000 in a nested value JSON.parse drops, which jsonb would still refuse', () => {
    // The first "a" is dropped by JSON.parse; PostgreSQL reads its escape all the same.
    const text = JSON.stringify(sample).replace(/}$/, ',"extra":{"a":"x\\u0000","a":"ok"}}');
    expect(rejectionOf(normalize(received(text), context))).toStrictEqual({
      stream,
      reason:
        'the record holds U+0000 or an unpaired UTF-16 surrogate (as a \\u escape) in a value JSON.parse does not keep (a key given twice); PostgreSQL cannot store it in jsonb',
      recordKey: key,
    });
  });

  it('accepts escapes PostgreSQL stores: a pair of surrogates, a backslash before "u0000"', () => {
    const text = JSON.stringify({ ...sample, extra: '😀 \\u0000 \u0001' });
    expect(
      rowOf(normalize(received(text.replace('😀', '\\ud83d\\ude00')), context)).raw,
    ).toStrictEqual({
      ...sample,
      extra: '😀 \\u0000 \u0001',
    });
  });

  it('rejects a record that is not valid UTF-8', () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ ...sample, [textField]: 'ab' }));
    bytes[bytes.indexOf(0x61)] = 0xff; // the first "a" becomes a byte no UTF-8 text holds
    const record = parseRecordBody(bytes);
    expect(record.problem).toBe('the record is not valid UTF-8');
    expect(rejectionOf(normalize(record, context))).toStrictEqual({
      stream,
      reason: 'the record is not valid UTF-8',
    });
  });

  it('rejects a record that is not valid JSON', () => {
    const record = received(JSON.stringify(sample).replace(/}$/, ',"extra": tru}'));
    const rejection = rejectionOf(normalize(record, context));
    expect(rejection.stream).toBe(stream);
    expect(rejection.reason).toMatch(/^the record is not valid JSON: /);
    expect(rejection.field).toBeUndefined();
  });

  it.each([
    ['[1, 2]', 'an array of 2 elements'],
    ['"text"', 'the text "text"'],
    ['42', 'the JSON number 42'],
    ['null', 'null'],
  ])('rejects the record %s, which is not an object', (jsonText, described) => {
    expect(rejectionOf(normalize(received(jsonText), context))).toStrictEqual({
      stream,
      reason: `a ${label} must be a JSON object; got ${described}`,
    });
  });

  it('rejects a record holding a 5 MB field, and stores nothing of it', () => {
    const record = receivedObject({ ...sample, [textField]: 'x'.repeat(5_000_000) });
    expect(rejectionOf(normalize(record, context))).toStrictEqual({
      stream,
      reason: `the record is ${record.bytes.length} bytes long; a ${label} may be at most ${RECORD_MAX_BYTES} bytes`,
      recordKey: key,
    });
  });

  it('rejects a text field longer than 65536 characters in a record of normal size', () => {
    const rejection = rejectionOf(
      normalize(receivedObject({ ...sample, [textField]: 'x'.repeat(100_000) }), context),
    );
    expect(rejection.field).toBe(textField);
    expect(rejection.reason).toBe(
      `${textField} must be text of at most 65536 characters; got a text of 100000 characters`,
    );
  });

  it('accepts a known key given twice with the same value', () => {
    const value = JSON.stringify(sample[textField]);
    const record = withLeadingKey(sample, textField, value);
    expect(record.duplicateKeys).toStrictEqual({
      [textField]: [sample[textField], sample[textField]],
    });
    expect(rowOf(normalize(record, context))[columnOf(textField)]).toBe(sample[textField]);
  });

  it('rejects a known key given twice with different values', () => {
    const record = withLeadingKey(sample, textField, '"another value"');
    expect(rejectionOf(normalize(record, context))).toStrictEqual({
      stream,
      field: textField,
      reason: `the key "${textField}" appears 2 times with different values (the text "another value", the text ${JSON.stringify(sample[textField])}); the record is ambiguous`,
      recordKey: key,
    });
  });

  it('accepts an unknown key given twice with identical JSON, and rejects it when they differ', () => {
    const same = withLeadingKey({ ...sample, extra: { a: [1, 'b'] } }, 'extra', '{"a":[1,"b"]}');
    expect(rowOf(normalize(same, context)).raw).toStrictEqual({
      ...sample,
      extra: { a: [1, 'b'] },
    });
    const differing = withLeadingKey({ ...sample, extra: 1 }, 'extra', '2');
    expect(rejectionOf(normalize(differing, context))).toStrictEqual({
      stream,
      field: 'extra',
      reason:
        'the key "extra" appears 2 times with different values (the JSON number 2, the JSON number 1); the record is ambiguous',
      recordKey: key,
    });
  });

  it('reports a record whose key field is unreadable without a record key', () => {
    const rejection = rejectionOf(
      normalize(receivedObject({ ...sample, [keyField]: 7, [textField]: 8 }), context),
    );
    expect(rejection.field).toBe(keyField);
    expect(rejection).not.toHaveProperty('recordKey');
  });
});

describe('the rows', () => {
  it('are Insertable rows of their tables (checked by the compiler)', () => {
    // trunk_calls' times are epoch microseconds: its rows go in by binary COPY, which takes them so.
    type CallTime = 'initiation_time' | 'answer_time' | 'end_time';
    const rows: [
      Omit<Insertable<TrunkCallsTable>, CallTime> & Record<CallTime, EpochMicros | null>,
      Insertable<SipEndpointsTable>,
      Insertable<VerifiedCallerIdsTable>,
      Insertable<MessagesTable>,
      Insertable<PowerpacksTable>,
      Insertable<CallStreamsTable>,
    ][] = [];
    const trunk = normalizeTrunkCall(receivedObject(TRUNK_CALL), context);
    const endpoint = normalizeSipEndpoint(receivedObject(SIP_ENDPOINT), context);
    const callerId = normalizeVerifiedCallerId(receivedObject(CALLER_ID), context);
    const message = normalizeMessage(receivedObject(MESSAGE), context);
    const pack = normalizePowerpack(receivedObject(POWERPACK), context);
    const callStream = normalizeCallStream(receivedObject(CALL_STREAM), context);
    if (trunk.ok && endpoint.ok && callerId.ok && message.ok && pack.ok && callStream.ok) {
      rows.push([trunk.row, endpoint.row, callerId.row, message.row, pack.row, callStream.row]);
    }
    expect(rows).toHaveLength(1);
  });
});

// ---- what each resource adds ------------------------------------------------------------------

describe('normalizeTrunkCall', () => {
  it('gives the call times as epoch microseconds, as binary COPY takes them', () => {
    const row = rowOf(normalizeTrunkCall(receivedObject(TRUNK_CALL), context));
    expect([row.initiation_time, row.answer_time, row.end_time]).toStrictEqual([
      1_648_532_407_000_000, 1_648_532_409_000_000, 1_648_532_429_000_000,
    ]);
  });

  it.each([
    ['2022-03-29 11:10:29+05:30', '2022-03-29T05:40:29Z', 1_648_532_429_000_000],
    ['2022-03-29 11:10:29+05:45', '2022-03-29T05:25:29Z', 1_648_531_529_000_000],
    ['2022-03-29 01:10:29-04:00', '2022-03-29T05:10:29Z', 1_648_530_629_000_000],
    ['2022-03-30 01:10:29+14:00', '2022-03-29T11:10:29Z', 1_648_552_229_000_000],
    ['2022-03-28 23:10:29-12:00', '2022-03-29T11:10:29Z', 1_648_552_229_000_000],
    ['2022-03-29 11:10:29.000001+00:00', '2022-03-29T11:10:29.000001Z', 1_648_552_229_000_001],
  ])('end_time %s is %s', (endTime, iso, micros) => {
    const result = normalizeTrunkCall(
      receivedObject({ ...TRUNK_CALL, end_time: endTime }),
      context,
    );
    expect(rowOf(result).end_time).toBe(micros);
    expect(formatIsoMicros(micros)).toBe(iso);
  });

  it.each([[''], [null]])(
    'stores answer_time %j of a call never answered as null (A21)',
    (value) => {
      const row = rowOf(
        normalizeTrunkCall(receivedObject({ ...TRUNK_CALL, answer_time: value }), context),
      );
      expect(row.answer_time).toBeNull();
    },
  );

  it('keeps amounts digit for digit, trailing zeros included', () => {
    const row = rowOf(
      normalizeTrunkCall(
        receivedObject({
          ...TRUNK_CALL,
          total_rate: '12.34000',
          total_amount: '-0.000000000000000001',
        }),
        context,
      ),
    );
    expect(row.total_rate).toBe('12.34000');
    expect(row.total_amount).toBe('-0.000000000000000001');
  });

  it('rejects an amount given as a JSON number, naming the field and the form expected', () => {
    const rejection = rejectionOf(
      normalizeTrunkCall(
        received(JSON.stringify(TRUNK_CALL).replace('"0.00850000000001"', '0.00850000000001')),
        context,
      ),
    );
    expect(rejection).toStrictEqual({
      stream: 'trunk_calls',
      field: 'total_amount',
      reason:
        'total_amount must be decimal text such as "0.00850" (an optional "-", digits, and optionally "." and digits), not a JSON number, whose digits may already be lost; got the JSON number 0.00850000000001',
      recordKey: CALL_UUID,
    });
  });

  it('reads call times without an offset as UTC, as the real service sends them (A38)', () => {
    const result = normalizeTrunkCall(
      receivedObject({
        ...TRUNK_CALL,
        initiation_time: '2024-01-15 14:28:48',
        answer_time: '2024-01-15 14:29:00',
        end_time: '2024-01-15 14:32:00',
      }),
      context,
    );
    const row = rowOf(result);
    expect([row.initiation_time, row.answer_time, row.end_time]).toStrictEqual([
      Date.UTC(2024, 0, 15, 14, 28, 48) * 1000,
      Date.UTC(2024, 0, 15, 14, 29) * 1000,
      Date.UTC(2024, 0, 15, 14, 32) * 1000,
    ]);
  });

  it("stores a CDR in the real service's documented shape: fields it leaves out are null", () => {
    // docs.plivo.com, "Get call detail record (CDR) of a call": no api_id, resource_uri,
    // call_state, parent or conference identifiers, Stir_attestation, voice_network_group or
    // source_ip; lower-case filter-form hangup_source; fields telesync has no column for.
    const documented = {
      call_uuid: '90b6eb07-796c-4d86-a4fd-44ed11667ddb',
      from_number: '+912235328936',
      to_number: '+919943720205',
      call_direction: 'outbound',
      call_duration: 4,
      bill_duration: 4,
      end_time: '2022-12-06 07:02:00',
      hangup_cause_name: 'normal_hangup',
      hangup_source: 'carrier',
      total_rate: '0.03000',
      total_amount: '0.00200',
      initiation_time: '2022-12-06 07:01:48',
      answer_time: '2022-12-06 07:01:56',
      trunk_domain: '93667062664669661.ap-south-1.zt.plivo.com',
      srtp: false,
      hangup_cause_code: 3000,
      stir_verification: 'not applicable',
      attestation_indicator: 'null',
    };
    const row = rowOf(normalizeTrunkCall(receivedObject(documented), context));
    expect(row).toMatchObject({
      call_uuid: documented.call_uuid,
      end_time: Date.UTC(2022, 11, 6, 7, 2) * 1000,
      answer_time: Date.UTC(2022, 11, 6, 7, 1, 56) * 1000,
      hangup_source: 'carrier',
      stir_verification: 'not applicable',
      total_amount: '0.00200',
      api_id: null,
      resource_uri: null,
      call_state: null,
      billed_duration: null,
      stir_attestation: null,
      voice_network_group: null,
      source_ip: null,
      raw: documented,
    });
  });

  it.each(['Caller', 'Callee', 'Error', 'customer', 'carrier', 'trunk'])(
    'stores hangup_source %s as received: records use both forms (A29)',
    (source) => {
      const row = rowOf(
        normalizeTrunkCall(receivedObject({ ...TRUNK_CALL, hangup_source: source }), context),
      );
      expect(row.hangup_source).toBe(source);
    },
  );

  it('stores enumerations as received, new values included (A11)', () => {
    const row = rowOf(
      normalizeTrunkCall(
        receivedObject({
          ...TRUNK_CALL,
          call_direction: 'sideways',
          call_state: 'NEW_STATE',
          stir_verification: 'Something Else',
          hangup_source: 'carrier',
        }),
        context,
      ),
    );
    expect([
      row.call_direction,
      row.call_state,
      row.stir_verification,
      row.hangup_source,
    ]).toStrictEqual(['sideways', 'NEW_STATE', 'Something Else', 'carrier']);
  });

  it('keeps parent and conference identifiers, and a SIP URI as to_number', () => {
    const row = rowOf(
      normalizeTrunkCall(
        receivedObject({ ...TRUNK_CALL, parent_call_uuid: 'p-1', conference_uuid: '' }),
        context,
      ),
    );
    expect(row.parent_call_uuid).toBe('p-1');
    expect(row.conference_uuid).toBe('');
    expect(row.to_number).toBe('sip:alice@phone.example.com');
  });
});

describe('normalizeSipEndpoint', () => {
  it('stores an unregistered endpoint, whose sip_* registration fields are left out', () => {
    const unregistered = {
      ...without(without(without(SIP_ENDPOINT, 'sip_contact'), 'sip_expires'), 'sip_user_agent'),
      sip_registered: 'false',
    };
    const row = rowOf(normalizeSipEndpoint(receivedObject(unregistered), context));
    expect(row).toStrictEqual({
      account_id: ACCOUNT,
      ...SIP_ENDPOINT_ROW,
      sip_registered: false,
      sip_contact: null,
      sip_expires: null,
      sip_user_agent: null,
      raw: unregistered,
    });
  });

  it('reads sip_expires, which has no offset, as UTC (A18), and keeps one that has', () => {
    const withOffset = rowOf(
      normalizeSipEndpoint(
        receivedObject({ ...SIP_ENDPOINT, sip_expires: '2022-03-29 17:10:29.5+05:30' }),
        context,
      ),
    );
    expect(withOffset.sip_expires).toBe('2022-03-29T11:40:29.500000Z');
  });

  it('rejects an empty sip_expires: it is a timestamp or left out', () => {
    const rejection = rejectionOf(
      normalizeSipEndpoint(receivedObject({ ...SIP_ENDPOINT, sip_expires: '' }), context),
    );
    expect(rejection.field).toBe('sip_expires');
    expect(rejection.reason).toMatch(/^sip_expires must be a timestamp .*; got an empty text$/);
  });

  it('stores sub_account text, and rejects any value but text or null (A10)', () => {
    const row = rowOf(
      normalizeSipEndpoint(
        receivedObject({ ...SIP_ENDPOINT, sub_account: 'SAXXXXXXXXXXXXXXXXXX' }),
        context,
      ),
    );
    expect(row.sub_account).toBe('SAXXXXXXXXXXXXXXXXXX');
    const rejection = rejectionOf(
      normalizeSipEndpoint(
        receivedObject({ ...SIP_ENDPOINT, sub_account: { auth_id: 'SA1' } }),
        context,
      ),
    );
    expect(rejection).toStrictEqual({
      stream: 'endpoints',
      field: 'sub_account',
      reason:
        'sub_account must be text or null (assumption A10: any other value has an unknown meaning); got an object',
      recordKey: '39452475478853',
    });
  });

  it('reads sip_registered as a boolean, whether text or JSON boolean', () => {
    const row = rowOf(
      normalizeSipEndpoint(receivedObject({ ...SIP_ENDPOINT, sip_registered: false }), context),
    );
    expect(row.sip_registered).toBe(false);
  });
});

describe('normalizeVerifiedCallerId', () => {
  it('keeps an empty subaccount empty (A20) and the microseconds of created_at', () => {
    const row = rowOf(
      normalizeVerifiedCallerId(
        receivedObject({ ...CALLER_ID, created_at: '2021-01-02T03:04:05.000009Z' }),
        context,
      ),
    );
    expect(row.subaccount).toBe('');
    expect(row.created_at).toBe('2021-01-02T03:04:05.000009Z');
  });
});

describe('normalizeMessage', () => {
  /** The message record as the service sends it: is_domestic as text, then as a boolean. */
  function messageWithIsDomestic(first: string, second: string): ReceivedRecord {
    const text = JSON.stringify(without(MESSAGE, 'is_domestic'));
    return received(
      text
        .replace('"error_code"', `"is_domestic":${first},"error_code"`)
        .replace(/}$/, `,"is_domestic":${second}}`),
    );
  }

  it.each([
    ['"false"', 'false', false],
    ['"true"', 'true', true],
    ['true', '"true"', true],
    ['false', 'false', false],
  ])('reads is_domestic given as %s and as %s as one boolean', (first, second, expected) => {
    const record = messageWithIsDomestic(first, second);
    expect(record.duplicateKeys).toHaveProperty('is_domestic');
    expect(rowOf(normalizeMessage(record, context)).is_domestic).toBe(expected);
  });

  it('rejects is_domestic given as "true" and as false: the record contradicts itself', () => {
    expect(
      rejectionOf(normalizeMessage(messageWithIsDomestic('"true"', 'false'), context)),
    ).toStrictEqual({
      stream: 'messages',
      field: 'is_domestic',
      reason:
        'the key "is_domestic" appears 2 times with different values (the text "true", the JSON boolean false); the record is ambiguous',
      recordKey: MESSAGE_UUID,
    });
  });

  it('rejects is_domestic when one of its values is not a boolean at all', () => {
    const rejection = rejectionOf(
      normalizeMessage(messageWithIsDomestic('"maybe"', 'false'), context),
    );
    expect(rejection.field).toBe('is_domestic');
    expect(rejection.reason).toBe(
      'is_domestic must be true or false (a JSON boolean or the text "true" or "false"); got the text "maybe" (in one of the 2 times it is given)',
    );
  });

  it('reads is_domestic given once, as text', () => {
    const row = rowOf(
      normalizeMessage(receivedObject({ ...MESSAGE, is_domestic: 'true' }), context),
    );
    expect(row.is_domestic).toBe(true);
  });

  it('rejects another key given twice with different values', () => {
    const record = withLeadingKey(MESSAGE, 'message_state', '"failed"');
    expect(rejectionOf(normalizeMessage(record, context))).toStrictEqual({
      stream: 'messages',
      field: 'message_state',
      reason:
        'the key "message_state" appears 2 times with different values (the text "failed", the text "delivered"); the record is ambiguous',
      recordKey: MESSAGE_UUID,
    });
  });

  it('keeps error_code "000" as text and rejects it as a number', () => {
    expect(rowOf(normalizeMessage(receivedObject(MESSAGE), context)).error_code).toBe('000');
    const rejection = rejectionOf(
      normalizeMessage(receivedObject({ ...MESSAGE, error_code: 0 }), context),
    );
    expect(rejection.reason).toBe('error_code must be text; got the JSON number 0');
  });

  it('keeps every amount digit for digit', () => {
    const row = rowOf(
      normalizeMessage(
        receivedObject({
          ...MESSAGE,
          total_rate: '0.00850000000001',
          total_amount: '100.10',
          carrier_fees_rate: '0.0030',
          carrier_fees: '0',
        }),
        context,
      ),
    );
    expect([
      row.total_rate,
      row.total_amount,
      row.carrier_fees_rate,
      row.carrier_fees,
    ]).toStrictEqual(['0.00850000000001', '100.10', '0.0030', '0']);
  });

  it('stores a new message_state as received (A11)', () => {
    const row = rowOf(
      normalizeMessage(receivedObject({ ...MESSAGE, message_state: 'queued_for_mars' }), context),
    );
    expect(row.message_state).toBe('queued_for_mars');
  });
});

describe('normalizePowerpack', () => {
  it('stores number_priority as the array received, for the jsonb column', () => {
    const record = receivedObject(POWERPACK);
    const row = rowOf(normalizePowerpack(record, context));
    expect(row.number_priority).toBe(
      (record.value as { number_priority: unknown }).number_priority,
    );
    expect(Array.isArray(row.number_priority)).toBe(true);
  });

  it('accepts number types it does not know, extra keys in entries, and an empty list', () => {
    const priority = [
      {
        country_iso: 'GB',
        service_type: 'RCS',
        priority: { priority1: 'premium', priority2: 'longcode', priority3: 'shortcode' },
        weight: 3,
      },
    ];
    expect(
      rowOf(
        normalizePowerpack(receivedObject({ ...POWERPACK, number_priority: priority }), context),
      ).number_priority,
    ).toStrictEqual(priority);
    expect(
      rowOf(normalizePowerpack(receivedObject({ ...POWERPACK, number_priority: [] }), context))
        .number_priority,
    ).toStrictEqual([]);
  });

  it('stores a pack without api_id with api_id null', () => {
    const row = rowOf(normalizePowerpack(receivedObject(without(POWERPACK, 'api_id')), context));
    expect(row.api_id).toBeNull();
  });

  it('reads local_connect and sticky_sender given as text', () => {
    const row = rowOf(
      normalizePowerpack(
        receivedObject({ ...POWERPACK, local_connect: 'true', sticky_sender: 'false' }),
        context,
      ),
    );
    expect([row.local_connect, row.sticky_sender]).toStrictEqual([true, false]);
  });

  const entry = POWERPACK.number_priority[0]!;
  it.each([
    [
      [entry, 'US'],
      'number_priority[1] must be an object with text country_iso and service_type and a priority object of texts priority1, priority2 and priority3; got the text "US"',
    ],
    [
      [{ ...entry, country_iso: 1 }],
      'number_priority[0].country_iso must be text; got the JSON number 1',
    ],
    [[without(entry, 'service_type')], 'number_priority[0].service_type must be text; got nothing'],
    [
      [{ ...entry, priority: ['shortcode'] }],
      'number_priority[0].priority must be an object of texts priority1, priority2 and priority3; got an array of 1 elements',
    ],
    [
      [{ ...entry, priority: { priority1: 'shortcode', priority3: 'longcode' } }],
      'number_priority[0].priority.priority2 must be text; got nothing',
    ],
    [
      [entry, { ...entry, priority: { ...entry.priority, priority3: null } }],
      'number_priority[1].priority.priority3 must be text; got null',
    ],
  ])('rejects number_priority %j', (numberPriority, reason) => {
    const rejection = rejectionOf(
      normalizePowerpack(
        receivedObject({ ...POWERPACK, number_priority: numberPriority }),
        context,
      ),
    );
    expect(rejection).toStrictEqual({
      stream: 'powerpacks',
      field: 'number_priority',
      reason,
      recordKey: PACK_UUID,
    });
  });

  it('rejects U+0000 inside number_priority', () => {
    const rejection = rejectionOf(
      normalizePowerpack(
        receivedObject({
          ...POWERPACK,
          number_priority: [{ ...entry, country_iso: 'U\u0000S' }],
        }),
        context,
      ),
    );
    expect(rejection.field).toBe('number_priority');
    expect(rejection.reason).toMatch(
      /^number_priority has a nested text that holds the character U\+0000/,
    );
  });
});

describe('normalizeCallStream', () => {
  it('stores a stream still running, whose end_time is null (A23)', () => {
    const running = {
      ...CALL_STREAM,
      end_time: null,
      bill_duration: 0,
      rounded_bill_duration: 0,
      billed_amount: '0',
    };
    expect(rowOf(normalizeCallStream(receivedObject(running), context))).toStrictEqual({
      account_id: ACCOUNT,
      ...CALL_STREAM_ROW,
      end_time: null,
      bill_duration: 0,
      rounded_bill_duration: 0,
      billed_amount: '0',
      raw: running,
    });
  });

  it('stores a new audio_track value as received (A11)', () => {
    const row = rowOf(
      normalizeCallStream(receivedObject({ ...CALL_STREAM, audio_track: 'mixed' }), context),
    );
    expect(row.audio_track).toBe('mixed');
  });
});

describe('shapes the real service sends (docs/assumptions.md A38–A45)', () => {
  it('keeps error_code, dlt_* and conversation_* null when the service sends null, apart from ""', () => {
    const nulls = {
      ...MESSAGE,
      error_code: null,
      dlt_entity_id: null,
      dlt_template_id: '',
      dlt_template_category: null,
      conversation_id: null,
      conversation_origin: null,
      conversation_expiration_timestamp: null,
    };
    const row = rowOf(normalizeMessage(receivedObject(nulls), context));
    expect(row).toMatchObject({
      error_code: null,
      dlt_entity_id: null,
      dlt_template_id: '',
      dlt_template_category: null,
      conversation_id: null,
      conversation_origin: null,
      conversation_expiration_timestamp: null,
    });
  });

  it('stores a message in the shape of the official client fixtures (few fields, error_code null)', () => {
    // plivo-python tests/resources/fixtures/messageGetResponse.json
    const fixture = {
      api_id: '95747262-3f08-11e7-8bc8-065f6a74a84a',
      error_code: null,
      from_number: '911231231230',
      message_direction: 'outbound',
      message_state: 'sent',
      message_time: '2017-05-22 21:36:14+05:30',
      message_type: 'sms',
      message_uuid: '5b40a428-bfc7-4daf-9d06-726c558bf3b8',
      resource_uri:
        '/v1/Account/MAXXXXXXXXXXXXXXXXXX/Message/5b40a428-bfc7-4daf-9d06-726c558bf3b8/',
      to_number: '911231231231',
      total_amount: '0.00250',
      total_rate: '0.00250',
      units: 1,
      message_sent_time: '2024-08-21 18:28:49.244057+05:30',
      error_message: '',
    };
    const row = rowOf(normalizeMessage(receivedObject(fixture), context));
    expect(row).toMatchObject({
      message_uuid: fixture.message_uuid,
      message_time: '2017-05-22T16:06:14Z',
      error_code: null,
      is_domestic: null,
      powerpack_id: null,
      dlt_entity_id: null,
      log: null,
      raw: fixture,
    });
  });

  it('keeps the microseconds of a caller ID time with 9 fraction digits; the rest stays in raw', () => {
    // docs.plivo.com, "The verified caller ID object": a single-number answer, nanoseconds, no
    // resource_uri, modified_at or subaccount, and a field telesync has no column for.
    const single = {
      alias: 'US Mainland',
      api_id: '870e2ded-58b0-41bc-8c1c-ba00c6a90741',
      channel: '',
      country: 'US',
      created_at: '2024-02-09T03:52:22.880097813Z',
      phone_number: '+12025551234',
      verification_uuid: 'f87836bd-f3c0-41bb-9498-125e6faaa4d4',
    };
    const row = rowOf(normalizeVerifiedCallerId(receivedObject(single), context));
    expect(row).toMatchObject({
      phone_number: '+12025551234',
      created_at: '2024-02-09T03:52:22.880097Z',
      modified_at: null,
      resource_uri: null,
      subaccount: null,
      raw: single,
    });
  });

  it.each([
    ['2023-09-25T14:40:38.68729Z', '2023-09-25T14:40:38.687290Z'],
    ['2019-07-15T12:22:00Z', '2019-07-15T12:22:00Z'],
    ['2019-07-15T12:22:00.1234567Z', '2019-07-15T12:22:00.123456Z'],
    ['2019-07-15T12:22:00.99999999Z', '2019-07-15T12:22:00.999999Z'],
  ])('reads a sender pack created_on of %s as %s', (createdOn, iso) => {
    const row = rowOf(
      normalizePowerpack(receivedObject({ ...POWERPACK, created_on: createdOn }), context),
    );
    expect(row.created_on).toBe(iso);
  });

  it('stores an application_id sent as a number as its digits, even past 2^53', () => {
    const text = `${JSON.stringify({ ...POWERPACK, application_id: 0 }).replace(
      '"application_id":0',
      '"application_id":33660394121755210',
    )}`;
    const record = received(text);
    const row = rowOf(normalizePowerpack(record, context));
    expect(row.application_id).toBe('33660394121755210');
    expect(
      rowOf(
        normalizePowerpack(receivedObject({ ...POWERPACK, application_id: 123912833468 }), context),
      ).application_id,
    ).toBe('123912833468');
    const fraction = rejectionOf(
      normalizePowerpack(receivedObject({ ...POWERPACK, application_id: 1.5 }), context),
    );
    expect(fraction.reason).toBe(
      'application_id must be text or a whole JSON number; got the JSON number 1.5',
    );
  });

  it('stores a sender pack in the shape of the official client fixtures', () => {
    // plivo-python tests/resources/fixtures/powerpackGetPowerpackResponse.json
    const fixture = {
      uuid: '5ec4c8c9-cd74-42b5-9e41-0d7670d6bb46',
      name: 'My Powerpack',
      smart_sender: true,
      local_connect: false,
      application_type: 'XML',
      application_id: 123912833468,
      number_pool: '/v1/Account/{auth_id}/NumberPool/<number_pool_uuid>/',
      created_on: '2019-07-15T12:22:00Z',
    };
    const row = rowOf(normalizePowerpack(receivedObject(fixture), context));
    expect(row).toMatchObject({
      uuid: fixture.uuid,
      application_id: '123912833468',
      created_on: '2019-07-15T12:22:00Z',
      sticky_sender: null,
      number_priority: null,
      raw: fixture,
    });
  });

  it('stores the shorter stream-record shape: status, null start and end times', () => {
    // plivo-python tests/resources/fixtures/liveCallStreamGetAllResponse.json
    const fixture = {
      call_uuid: '4f045f7a-b04a-4364-8523-74e6072f4f72',
      end_time: null,
      service_url: 'ws://3ee3-106-51-87-58.ngrok.io',
      start_time: null,
      status: 'initiated',
      status_callback_url: '',
      stream_id: 'c436abf8-e8a1-4d96-9aa8-b9143f7f3517',
    };
    const row = rowOf(normalizeCallStream(receivedObject(fixture), context));
    expect(row).toStrictEqual({
      account_id: ACCOUNT,
      stream_id: fixture.stream_id,
      call_uuid: fixture.call_uuid,
      service_auth_id: null,
      resource_uri: null,
      service_url: fixture.service_url,
      audio_track: null,
      bidirectional: null,
      created_at: null,
      start_time: null,
      end_time: null,
      bill_duration: null,
      rounded_bill_duration: null,
      billed_amount: null,
      raw: fixture,
    });
  });

  it("fills service_auth_id from the service's own name for it, plivo_auth_id", () => {
    // The stream object of the service's API reference: the account as plivo_auth_id.
    const fixture = {
      audio_track: 'both',
      bidirectional: false,
      bill_duration: 24,
      billed_amount: '0.00300',
      call_uuid: '78737f83-4b9d-4e1c-a5a3-4a3a6ae8a2f1',
      created_at: '2023-03-03 05:32:39.532163+00:00',
      end_time: '2023-03-03 11:03:07+05:30',
      plivo_auth_id: 'MAXXXXXXXXXXXXXXXXXX',
      resource_uri:
        '/v1/Account/MAXXXXXXXXXXXXXXXXXX/Call/78737f83-4b9d-4e1c-a5a3-4a3a6ae8a2f1/Stream/20a11e5f-d1c4-4b3e-a0b2-2b6b8b5e4e05/',
      rounded_bill_duration: 60,
      service_url: 'wss://mysocket.com/wss/v2/1/demo/',
      start_time: '2023-03-03 11:02:43+05:30',
      status: 'completed',
      status_callback_url: 'https://aec8-49-37-118-158.ngrok.io/stream/status',
      stream_id: '20a11e5f-d1c4-4b3e-a0b2-2b6b8b5e4e05',
    };
    expect(rowOf(normalizeCallStream(receivedObject(fixture), context))).toMatchObject({
      service_auth_id: 'MAXXXXXXXXXXXXXXXXXX',
      stream_id: fixture.stream_id,
      bill_duration: 24,
      raw: fixture,
    });
    // service_auth_id, when the record gives it, wins.
    const both = { ...fixture, service_auth_id: 'MA_SPEC_NAME' };
    expect(rowOf(normalizeCallStream(receivedObject(both), context)).service_auth_id).toBe(
      'MA_SPEC_NAME',
    );
  });

  it('quarantines a record nested 20,000 levels deep, with its exact bytes', () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const record = received(`{"stream_id":"${STREAM_ID}","x":${deep}}`);
    const rejection = rejectionOf(normalizeCallStream(record, context));
    expect(rejection.reason).toBe(
      "the record nests 20001 levels deep; at most 64 are accepted (PostgreSQL's jsonb cannot store much deeper values)",
    );
    expect(new TextDecoder().decode(record.bytes)).toBe(`{"stream_id":"${STREAM_ID}","x":${deep}}`);
  });
});

/**
 * The fields of the spec's section 2, transcribed from the spec on their own (not derived from the
 * migration), with the Postgres type each must be stored as. Tests compare the schema, the
 * normalisers and the simulator's records with this.
 *
 * This list is the spec's, not the code's: it is deliberately NOT taken from src/db/table-specs.ts
 * (where tests and benchmarks that need the table's columns get them), so that it stays an
 * independent oracle. A column added to or dropped from the code without the spec shows up here.
 *
 * Types: amounts numeric, times timestamptz, flags boolean, counts and durations integer,
 * identifiers and numbers text.
 */
export type SpecPgType =
  'text' | 'integer' | 'numeric' | 'timestamp with time zone' | 'boolean' | 'jsonb';

export interface SpecResource {
  table: string;
  primaryKey: readonly string[];
  snapshot: boolean;
  /** Wire field name → Postgres type. */
  fields: Readonly<Record<string, SpecPgType>>;
}

const T = 'text';
const I = 'integer';
const N = 'numeric';
const TS = 'timestamp with time zone';
const B = 'boolean';

export const SPEC_RESOURCES: readonly SpecResource[] = [
  {
    table: 'sip_endpoints', // 2.1
    primaryKey: ['account_id', 'endpoint_id'],
    snapshot: true,
    fields: {
      endpoint_id: T,
      username: T,
      alias: T,
      application: T,
      resource_uri: T,
      sip_uri: T,
      sip_registered: B,
      sip_contact: T,
      sip_expires: TS,
      sip_user_agent: T,
      sub_account: T,
    },
  },
  {
    table: 'verified_caller_ids', // 2.2
    primaryKey: ['account_id', 'phone_number'],
    snapshot: true,
    fields: {
      alias: T,
      country: T,
      created_at: TS,
      modified_at: TS,
      phone_number: T,
      resource_uri: T,
      subaccount: T,
      verification_uuid: T,
    },
  },
  {
    table: 'messages', // 2.3
    primaryKey: ['account_id', 'message_uuid'],
    snapshot: false,
    fields: {
      message_uuid: T,
      resource_uri: T,
      message_direction: T,
      message_state: T,
      message_type: T,
      message_time: TS,
      from_number: T,
      to_number: T,
      replaced_sender: T,
      destination_country_iso2: T,
      destination_network: T,
      mcc: T,
      mnc: T,
      units: I,
      total_rate: N,
      total_amount: N,
      carrier_fees_rate: N,
      carrier_fees: N,
      error_code: T,
      is_domestic: B,
      powerpack_id: T,
      tendlc_campaign_id: T,
      tendlc_registration_status: T,
      dlt_entity_id: T,
      dlt_template_id: T,
      dlt_template_category: T,
      requester_ip: T,
      conversation_id: T,
      conversation_origin: T,
      conversation_expiration_timestamp: TS,
      log: T,
      api_id: T,
    },
  },
  {
    table: 'powerpacks', // 2.4
    primaryKey: ['account_id', 'uuid'],
    snapshot: false,
    fields: {
      uuid: T,
      name: T,
      application_id: T,
      application_type: T,
      created_on: TS,
      local_connect: B,
      sticky_sender: B,
      number_pool: T,
      number_priority: 'jsonb',
    },
  },
  {
    table: 'call_streams', // 2.5
    primaryKey: ['account_id', 'stream_id'],
    snapshot: false,
    fields: {
      stream_id: T,
      call_uuid: T,
      service_auth_id: T,
      resource_uri: T,
      service_url: T,
      audio_track: T,
      bidirectional: B,
      created_at: TS,
      start_time: TS,
      end_time: TS,
      bill_duration: I,
      rounded_bill_duration: I,
      billed_amount: N,
    },
  },
  {
    table: 'trunk_calls', // 2.6
    primaryKey: ['account_id', 'call_uuid'],
    snapshot: false,
    fields: {
      call_uuid: T,
      parent_call_uuid: T,
      conference_uuid: T,
      api_id: T,
      resource_uri: T,
      call_direction: T,
      call_state: T,
      from_number: T,
      to_number: T,
      initiation_time: TS,
      answer_time: TS,
      end_time: TS,
      call_duration: I,
      bill_duration: I,
      billed_duration: I,
      total_rate: N,
      total_amount: N,
      hangup_cause_code: I,
      hangup_cause_name: T,
      hangup_source: T,
      stir_verification: T,
      Stir_attestation: T,
      voice_network_group: T,
      source_ip: T,
    },
  },
];

/** The column a wire field is stored in: snake_case as on the wire, lower-cased. */
export function columnOf(wireField: string): string {
  return wireField.toLowerCase();
}

/** The spec's fields of `table` (wire names) with their Postgres types. */
export function specFields(table: string): Readonly<Record<string, SpecPgType>> {
  const resource = SPEC_RESOURCES.find((candidate) => candidate.table === table);
  if (resource === undefined) throw new Error(`no spec resource for ${table}`);
  return resource.fields;
}

import type { BinaryCopyType } from './copy-binary.js';
import type { CallStreamStatusColumns, NormalizedRow, Tables } from './schema.js';

/**
 * The data tables as the loader sees them: the conflict key and the columns a normaliser fills
 * (every wire field, account_id and raw). Bookkeeping columns (synced_at, changed_at, the snapshot
 * timestamps) are the loader's own.
 */
export interface DataTableSpec<T extends DataTableName = DataTableName> {
  readonly table: T;
  readonly key: readonly string[];
  readonly columns: readonly string[];
  /** Snapshot tables track first_seen_at / last_seen_at / deleted_at. */
  readonly snapshot: boolean;
  /**
   * How `raw` is stored: `jsonb` (the default), or `json`, the record's text as received, which
   * the server only checks on write instead of parsing it (trunk_calls, the table of most rows).
   */
  readonly rawType?: 'json' | 'jsonb';
  /**
   * Each column's type, when the table's rows go in by COPY's binary format (trunk_calls, the
   * table of most rows); the others take the text format. Checked against the migrated table by
   * test/integration/schema.test.ts.
   */
  readonly copyTypes?: Readonly<Record<string, BinaryCopyType>>;
}

/**
 * The columns of table `T` a normaliser fills: every column of its table type but the loader's and
 * those the stream callbacks keep (call_streams' status).
 */
type LoadedColumn<T extends DataTableName> = Exclude<
  keyof NormalizedRow<Tables[T]> & string,
  keyof CallStreamStatusColumns
>;

/**
 * Unknown when `Given` names every one of `All`; otherwise a type no column list matches, whose
 * `missingColumns` names the columns left out (the compiler's error shows them).
 */
type NamesEvery<All, Given> = [Exclude<All, Given>] extends [never]
  ? unknown
  : { readonly missingColumns: Exclude<All, Given> };

/**
 * Declares a spec, checked against the table type (src/db/schema.ts) both ways: every column listed
 * is a column of the table, and every column a normaliser fills is listed. The migrated tables are
 * checked against the specs by test/integration/schema.test.ts, the normalisers' rows by
 * test/unit/normalize-resources.test.ts.
 */
function defineSpec<T extends DataTableName, const C extends readonly LoadedColumn<T>[]>(spec: {
  table: T;
  key: readonly LoadedColumn<T>[];
  columns: C & NamesEvery<LoadedColumn<T>, C[number]>;
  snapshot: boolean;
  rawType?: 'json' | 'jsonb';
  copyTypes?: Readonly<Record<C[number], BinaryCopyType>>;
}): DataTableSpec<T> {
  return spec;
}

export type DataTableName =
  | 'trunk_calls'
  | 'sip_endpoints'
  | 'verified_caller_ids'
  | 'messages'
  | 'powerpacks'
  | 'call_streams';

/**
 * Keys of `raw` that are not part of a record's content: they may differ between two reads of the
 * same record (assumption A19), so they never count as a change.
 */
export const VOLATILE_RAW_KEYS: readonly string[] = ['api_id'];

export const TRUNK_CALLS = defineSpec({
  table: 'trunk_calls',
  key: ['account_id', 'call_uuid'],
  snapshot: false,
  rawType: 'json',
  columns: [
    'account_id',
    'call_uuid',
    'parent_call_uuid',
    'conference_uuid',
    'api_id',
    'resource_uri',
    'call_direction',
    'call_state',
    'from_number',
    'to_number',
    'initiation_time',
    'answer_time',
    'end_time',
    'call_duration',
    'bill_duration',
    'billed_duration',
    'total_rate',
    'total_amount',
    'hangup_cause_code',
    'hangup_cause_name',
    'hangup_source',
    'stir_verification',
    'stir_attestation',
    'voice_network_group',
    'source_ip',

    'raw',
  ],
  copyTypes: {
    account_id: 'text',
    call_uuid: 'text',
    parent_call_uuid: 'text',
    conference_uuid: 'text',
    api_id: 'text',
    resource_uri: 'text',
    call_direction: 'text',
    call_state: 'text',
    from_number: 'text',
    to_number: 'text',
    initiation_time: 'timestamptz',
    answer_time: 'timestamptz',
    end_time: 'timestamptz',
    call_duration: 'integer',
    bill_duration: 'integer',
    billed_duration: 'integer',
    total_rate: 'numeric',
    total_amount: 'numeric',
    hangup_cause_code: 'integer',
    hangup_cause_name: 'text',
    hangup_source: 'text',
    stir_verification: 'text',
    stir_attestation: 'text',
    voice_network_group: 'text',
    source_ip: 'text',
    raw: 'json',
  },
});

export const SIP_ENDPOINTS = defineSpec({
  table: 'sip_endpoints',
  key: ['account_id', 'endpoint_id'],
  snapshot: true,
  columns: [
    'account_id',
    'endpoint_id',
    'username',
    'alias',
    'application',
    'resource_uri',
    'sip_uri',
    'sip_registered',
    'sip_contact',
    'sip_expires',
    'sip_user_agent',
    'sub_account',
    'raw',
  ],
});

export const VERIFIED_CALLER_IDS = defineSpec({
  table: 'verified_caller_ids',
  key: ['account_id', 'phone_number'],
  snapshot: true,
  columns: [
    'account_id',
    'phone_number',
    'alias',
    'country',
    'created_at',
    'modified_at',
    'resource_uri',
    'subaccount',
    'verification_uuid',
    'raw',
  ],
});

export const MESSAGES = defineSpec({
  table: 'messages',
  key: ['account_id', 'message_uuid'],
  snapshot: false,
  columns: [
    'account_id',
    'message_uuid',
    'resource_uri',
    'message_direction',
    'message_state',
    'message_type',
    'message_time',
    'from_number',
    'to_number',
    'replaced_sender',
    'destination_country_iso2',
    'destination_network',
    'mcc',
    'mnc',
    'units',
    'total_rate',
    'total_amount',
    'carrier_fees_rate',
    'carrier_fees',
    'error_code',
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
    'raw',
  ],
});

export const POWERPACKS = defineSpec({
  table: 'powerpacks',
  key: ['account_id', 'uuid'],
  snapshot: false,
  columns: [
    'account_id',
    'uuid',
    'name',
    'application_id',
    'application_type',
    'created_on',
    'local_connect',
    'sticky_sender',
    'number_pool',
    'number_priority',
    'api_id',
    'raw',
  ],
});

export const CALL_STREAMS = defineSpec({
  table: 'call_streams',
  key: ['account_id', 'stream_id'],
  snapshot: false,
  columns: [
    'account_id',
    'stream_id',
    'call_uuid',
    'service_auth_id',
    'resource_uri',
    'service_url',
    'audio_track',
    'bidirectional',
    'created_at',
    'start_time',
    'end_time',
    'bill_duration',
    'rounded_bill_duration',
    'billed_amount',
    'raw',
  ],
});

export const DATA_TABLES = [
  TRUNK_CALLS,
  SIP_ENDPOINTS,
  VERIFIED_CALLER_IDS,
  MESSAGES,
  POWERPACKS,
  CALL_STREAMS,
] as const;

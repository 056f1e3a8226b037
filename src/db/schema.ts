import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { StreamStatus } from '../domain/stream-status.js';

/**
 * The tables as Postgres stores them (table types). Wire types, the records as the service sends
 * them, live in src/api/wire-types.ts; the normalisers are the only bridge between the two.
 *
 * Conventions of values in TypeScript:
 * - timestamps are ISO 8601 text with microseconds (`2022-03-29T05:40:29.456727Z`), never Date;
 * - amounts (`numeric`) are decimal text, never JS numbers;
 * - bigint columns are JS numbers (see type-parsers.ts).
 */

/** A `timestamptz`: ISO 8601 text in and out. */
export type Timestamp = string;
/** A `numeric`: exact decimal text in and out. */
export type Decimal = string;
/** A `jsonb` column: any JSON value in, parsed JSON out. */
export type Json = ColumnType<unknown, unknown, unknown>;
/** A column with a database default that inserts may omit. */
export type Defaulted<T> = ColumnType<T, T | undefined, T>;

/** Columns every data table has. */
interface DataColumns {
  account_id: string;
  raw: Json;
  synced_at: Defaulted<Timestamp>;
  changed_at: Timestamp | null;
}

/** Columns of the snapshot tables (endpoints, caller IDs). */
interface SnapshotColumns {
  first_seen_at: Defaulted<Timestamp>;
  last_seen_at: Defaulted<Timestamp>;
  deleted_at: Timestamp | null;
}

export interface TrunkCallsTable extends DataColumns {
  call_uuid: string;
  parent_call_uuid: string | null;
  conference_uuid: string | null;
  api_id: string | null;
  resource_uri: string | null;
  call_direction: string | null;
  call_state: string | null;
  from_number: string | null;
  to_number: string | null;
  initiation_time: Timestamp | null;
  answer_time: Timestamp | null;
  end_time: Timestamp;
  call_duration: number | null;
  bill_duration: number | null;
  billed_duration: number | null;
  total_rate: Decimal | null;
  total_amount: Decimal | null;
  hangup_cause_code: number | null;
  hangup_cause_name: string | null;
  hangup_source: string | null;
  stir_verification: string | null;
  stir_attestation: string | null;
  voice_network_group: string | null;
  source_ip: string | null;
}

export interface SipEndpointsTable extends DataColumns, SnapshotColumns {
  endpoint_id: string;
  username: string | null;
  alias: string | null;
  application: string | null;
  resource_uri: string | null;
  sip_uri: string | null;
  sip_registered: boolean | null;
  sip_contact: string | null;
  sip_expires: Timestamp | null;
  sip_user_agent: string | null;
  sub_account: string | null;
}

export interface VerifiedCallerIdsTable extends DataColumns, SnapshotColumns {
  phone_number: string;
  alias: string | null;
  country: string | null;
  created_at: Timestamp | null;
  modified_at: Timestamp | null;
  resource_uri: string | null;
  subaccount: string | null;
  verification_uuid: string | null;
}

export interface MessagesTable extends DataColumns {
  message_uuid: string;
  resource_uri: string | null;
  message_direction: string | null;
  message_state: string | null;
  message_type: string | null;
  message_time: Timestamp | null;
  from_number: string | null;
  to_number: string | null;
  replaced_sender: string | null;
  destination_country_iso2: string | null;
  destination_network: string | null;
  mcc: string | null;
  mnc: string | null;
  units: number | null;
  total_rate: Decimal | null;
  total_amount: Decimal | null;
  carrier_fees_rate: Decimal | null;
  carrier_fees: Decimal | null;
  error_code: string | null;
  is_domestic: boolean | null;
  powerpack_id: string | null;
  tendlc_campaign_id: string | null;
  tendlc_registration_status: string | null;
  dlt_entity_id: string | null;
  dlt_template_id: string | null;
  dlt_template_category: string | null;
  requester_ip: string | null;
  conversation_id: string | null;
  conversation_origin: string | null;
  conversation_expiration_timestamp: Timestamp | null;
  log: string | null;
  api_id: string | null;
}

export interface PowerpacksTable extends DataColumns {
  uuid: string;
  name: string | null;
  application_id: string | null;
  application_type: string | null;
  created_on: Timestamp | null;
  local_connect: boolean | null;
  sticky_sender: boolean | null;
  number_pool: string | null;
  /** Null when the service left it out (not the same as `[]`). */
  number_priority: Json;
  api_id: string | null;
}

export interface CallStreamsTable extends DataColumns {
  stream_id: string;
  call_uuid: string;
  service_auth_id: string | null;
  resource_uri: string | null;
  service_url: string | null;
  audio_track: string | null;
  bidirectional: boolean | null;
  created_at: Timestamp | null;
  start_time: Timestamp | null;
  end_time: Timestamp | null;
  bill_duration: number | null;
  rounded_bill_duration: number | null;
  billed_amount: Decimal | null;
}

/** View: one row per (pack, country, service type) with the three priorities as columns. */
export interface PowerpackNumberPrioritiesView {
  account_id: string;
  powerpack_uuid: string;
  powerpack_name: string | null;
  position: number;
  country_iso: string | null;
  service_type: string | null;
  priority1: string | null;
  priority2: string | null;
  priority3: string | null;
}

/** View: trunk calls per UTC day, account and direction. */
export interface BillingDailyView {
  day: string;
  account_id: string;
  direction: string | null;
  calls: number;
  billed_seconds: number;
  billed_minutes: Decimal;
  total_amount: Decimal;
  /** Calls counted in billed_seconds by bill_duration, their record having no billed_duration. */
  calls_billed_by_bill_duration: number;
}

/** View: messages per UTC day, account, direction and type. */
export interface MessagesBillingDailyView {
  day: string;
  account_id: string;
  direction: string | null;
  message_type: string | null;
  messages: number;
  units: number;
  total_amount: Decimal;
  carrier_fees: Decimal;
}

/** View: audio streams per UTC day and account. */
export interface CallStreamsBillingDailyView {
  day: string;
  account_id: string;
  streams: number;
  bill_seconds: number;
  rounded_bill_seconds: number;
  billed_amount: Decimal;
}

export type LookupStatus = 'pending' | 'fetched' | 'not_found' | 'failed';

/** Columns of every lookup queue. */
interface LookupQueueColumns {
  account_id: string;
  requested_at: Defaulted<Timestamp>;
  requested_by: string | null;
  status: Defaulted<LookupStatus>;
  attempts: Defaulted<number>;
  next_attempt_at: Timestamp | null;
  last_error: string | null;
  fetched_at: Timestamp | null;
}

export interface MessageRefsTable extends LookupQueueColumns {
  message_uuid: string;
}
export interface CallStreamRefsTable extends LookupQueueColumns {
  call_uuid: string;
}
export interface PowerpackRefsTable extends LookupQueueColumns {
  powerpack_uuid: string;
}

export interface SyncStateTable {
  account_id: string;
  stream: string;
  watermark: Timestamp | null;
  cursor: ColumnType<
    Record<string, unknown>,
    Record<string, unknown> | undefined,
    Record<string, unknown>
  >;
  updated_at: Defaulted<Timestamp>;
}

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped' | 'stopped';

export interface SyncRunsTable {
  id: Generated<number>;
  account_id: string;
  stream: string;
  command: string;
  status: Defaulted<RunStatus>;
  started_at: Defaulted<Timestamp>;
  finished_at: Timestamp | null;
  window_start: Timestamp | null;
  window_end: Timestamp | null;
  windows_planned: Defaulted<number>;
  windows_completed: Defaulted<number>;
  requests: Defaulted<number>;
  retries: Defaulted<number>;
  wait_ms: Defaulted<number>;
  load_wait_ms: Defaulted<number>;
  records_fetched: Defaulted<number>;
  records_upserted: Defaulted<number>;
  records_changed: Defaulted<number>;
  records_rejected: Defaulted<number>;
  gap_start: Timestamp | null;
  gap_end: Timestamp | null;
  error: string | null;
  pid: number | null;
  host: string | null;
}

export type WindowStatus = 'planned' | 'running' | 'complete' | 'failed';

export interface SyncWindowsTable {
  id: Generated<number>;
  account_id: string;
  stream: Defaulted<string>;
  /** The slot of the UTC grid this row stands for (one row per slot). */
  slot_start: Timestamp;
  /** A `tstzrange` `[start,end)`; written as text, read back as Postgres range text. */
  time_range: string;
  status: Defaulted<WindowStatus>;
  total_count: number | null;
  rows_stored: number | null;
  attempts: Defaulted<number>;
  last_error: string | null;
  last_run_id: number | null;
  read_at: Timestamp | null;
  verified_at: Timestamp | null;
  created_at: Defaulted<Timestamp>;
  updated_at: Defaulted<Timestamp>;
}

/** What `telesync verify` last found for one account and UTC day (see docs/schema.md). */
export interface DayVerificationsTable {
  account_id: string;
  /** `YYYY-MM-DD`. */
  day: string;
  range_start: Timestamp;
  range_end: Timestamp;
  verified_at: Timestamp;
  service_count: number;
  stored_count: number;
  stored_amount: Decimal;
  /** Seconds (bigint; read as a number, see type-parsers). */
  billed_seconds: number;
  result: 'agree' | 'differs';
}

export interface RejectedRecordsTable {
  id: Generated<number>;
  account_id: string;
  stream: string;
  reason: string;
  record_key: string | null;
  raw_payload: string | null;
  /** Null for a payload over QUARANTINE_PAYLOAD_MAX_BYTES (kept as its digest). */
  raw_bytes: Uint8Array | null;
  payload_sha256: string;
  run_id: number | null;
  first_seen_at: Defaulted<Timestamp>;
  last_seen_at: Defaulted<Timestamp>;
  occurrences: Defaulted<number>;
}

/** Every table and view of the telesync schema, by name. */
export interface Tables {
  trunk_calls: TrunkCallsTable;
  sip_endpoints: SipEndpointsTable;
  verified_caller_ids: VerifiedCallerIdsTable;
  messages: MessagesTable;
  powerpacks: PowerpacksTable;
  call_streams: CallStreamsTable & CallStreamStatusColumns;
  powerpack_number_priorities: PowerpackNumberPrioritiesView;
  billing_daily: BillingDailyView;
  messages_billing_daily: MessagesBillingDailyView;
  call_streams_billing_daily: CallStreamsBillingDailyView;
  message_refs: MessageRefsTable;
  call_stream_refs: CallStreamRefsTable;
  powerpack_refs: PowerpackRefsTable;
  sync_state: SyncStateTable;
  sync_runs: SyncRunsTable;
  sync_windows: SyncWindowsTable;
  rejected_records: RejectedRecordsTable;
  day_verifications: DayVerificationsTable;
  stream_events: StreamEventsTable;
  stream_events_daily: StreamEventsDailyView;
  stream_callback_nonces: StreamCallbackNoncesTable;
}

export type TrunkCallRow = Insertable<TrunkCallsTable>;
export type SyncRun = Selectable<SyncRunsTable>;
export type SyncWindow = Selectable<SyncWindowsTable>;

/**
 * call_streams columns kept from the stream's status callbacks (migration 0005), apart from the
 * wire columns: lookups never write them.
 */
export interface CallStreamStatusColumns {
  status: Defaulted<StreamStatus | null>;
  status_at: Defaulted<Timestamp | null>;
}

/** One status callback of an audio stream, stored once per delivery (migration 0005). */
export interface StreamEventsTable {
  id: Generated<number>;
  account_id: string;
  call_uuid: string;
  stream_id: string;
  event: string;
  event_time: Timestamp;
  stream_status: StreamStatus | null;
  error: string | null;
  delivery_key: string;
  raw: Json;
  received_at: Defaulted<Timestamp>;
  /** Migration 0008: a field carried U+0000, stored escaped. */
  nul_escaped: Defaulted<boolean>;
}

/** Nonces of accepted stream callbacks, kept for the replay window (migration 0008). */
export interface StreamCallbackNoncesTable {
  nonce: string;
  account_id: string;
  signature: string;
  accepted_until: Timestamp;
  accepted_at: Defaulted<Timestamp>;
}

/** View: stream events per UTC day, account, event and status. */
export interface StreamEventsDailyView {
  day: string;
  account_id: string;
  event: string;
  stream_status: StreamStatus | null;
  events: number;
  streams: number;
  calls: number;
  with_error: number;
}

/** Columns the loader sets (timestamps of the sync itself), never the normaliser. */
type LoaderColumns = 'synced_at' | 'changed_at' | 'first_seen_at' | 'last_seen_at' | 'deleted_at';

/**
 * The row a normaliser produces for a table: its Insertable row with every column present (null
 * when the record has no value), except the columns the loader sets.
 */
export type NormalizedRow<Table> = Required<Omit<Insertable<Table>, LoaderColumns>>;

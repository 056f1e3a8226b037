/**
 * Wire types: the records exactly as the service sends them (spec section 2), field names and all.
 * The table types (src/db/schema.ts) are what Postgres stores; the normalisers are the only bridge.
 *
 * Incoming records are not trusted to have these shapes: the normalisers check every field. These
 * types say what a well-formed record looks like, and are what the simulator produces.
 */

/** Text booleans as the service sends them in some fields (`sip_registered`). */
export type TextBoolean = 'true' | 'false';

/** Pagination block of every list response. */
export interface ListMetaWire {
  limit: number;
  offset: number;
  next: string | null;
  previous: string | null;
  total_count: number;
}

/** Every list response. */
export interface ListEnvelopeWire<T> {
  api_id: string;
  meta: ListMetaWire;
  objects: T[];
}

/** 2.1 SIP endpoint. The three sip_* registration fields are omitted when unregistered. */
export interface SipEndpointWire {
  endpoint_id: string;
  username: string;
  alias: string;
  application: string;
  resource_uri: string;
  sip_uri: string;
  sip_registered: TextBoolean;
  sip_contact?: string;
  /** `YYYY-MM-DD HH:MM:SS`, no offset (read as UTC). */
  sip_expires?: string;
  sip_user_agent?: string;
  /** Note the spelling: `sub_account` here, `subaccount` on caller IDs. */
  sub_account: string | null;
}

/** 2.2 Verified caller ID. */
export interface VerifiedCallerIdWire {
  alias: string;
  country: string;
  /** ISO 8601 UTC with microseconds, suffix Z. */
  created_at: string;
  modified_at: string;
  phone_number: string;
  resource_uri: string;
  /** Empty string when none. */
  subaccount: string;
  verification_uuid: string;
}

/** 2.3 Message detail record. `is_domestic` arrives twice: as text and as a boolean. */
export interface MessageDetailRecordWire {
  message_uuid: string;
  resource_uri: string;
  message_direction: string;
  message_state: string;
  message_type: string;
  /** `YYYY-MM-DD HH:MM:SS.ffffff+HH:MM`. */
  message_time: string;
  from_number: string;
  to_number: string;
  replaced_sender: string;
  destination_country_iso2: string;
  destination_network: string;
  mcc: string;
  mnc: string;
  units: number;
  total_rate: string;
  total_amount: string;
  carrier_fees_rate: string;
  carrier_fees: string;
  error_code: string;
  is_domestic: TextBoolean | boolean;
  powerpack_id: string;
  tendlc_campaign_id: string;
  tendlc_registration_status: string;
  dlt_entity_id: string;
  dlt_template_id: string;
  dlt_template_category: string;
  requester_ip: string;
  conversation_id: string;
  conversation_origin: string;
  /** `YYYY-MM-DD HH:MM:SS+HH:MM`. */
  conversation_expiration_timestamp: string;
  log: string;
  api_id: string;
}

export type NumberType = 'shortcode' | 'tollfree' | 'longcode';

export interface NumberPriorityWire {
  country_iso: string;
  service_type: string;
  priority: { priority1: NumberType; priority2: NumberType; priority3: NumberType };
}

/** 2.4 Sender pack (Powerpack), returned with the request's api_id (4.4). */
export interface SenderPackWire {
  uuid: string;
  name: string;
  application_id: string;
  application_type: string;
  /** ISO 8601 UTC with microseconds, suffix Z. */
  created_on: string;
  local_connect: boolean;
  sticky_sender: boolean;
  number_pool: string;
  number_priority: NumberPriorityWire[];
  api_id?: string;
}

export type AudioTrack = 'inbound' | 'outbound' | 'both';

/** 2.5 Stream record. */
export interface StreamRecordWire {
  stream_id: string;
  call_uuid: string;
  service_auth_id: string;
  resource_uri: string;
  service_url: string;
  audio_track: AudioTrack;
  bidirectional: boolean;
  /** `YYYY-MM-DD HH:MM:SS.ffffff+HH:MM`. */
  created_at: string;
  /** `YYYY-MM-DD HH:MM:SS+HH:MM`. */
  start_time: string;
  /** Same form as start_time; null while the stream is still running (assumption A23). */
  end_time: string | null;
  bill_duration: number;
  rounded_bill_duration: number;
  billed_amount: string;
}

/** 2.6 Trunk call record. */
export interface TrunkCallRecordWire {
  call_uuid: string;
  parent_call_uuid: string | null;
  conference_uuid: string | null;
  api_id: string;
  resource_uri: string;
  call_direction: 'inbound' | 'outbound';
  call_state: string;
  from_number: string;
  /** A number or a SIP URI. */
  to_number: string;
  /** `YYYY-MM-DD HH:MM:SS+HH:MM`. */
  initiation_time: string;
  answer_time: string;
  end_time: string;
  call_duration: number;
  bill_duration: number;
  billed_duration: number;
  total_rate: string;
  total_amount: string;
  hangup_cause_code: number;
  hangup_cause_name: string;
  hangup_source: string;
  stir_verification: 'Verified' | 'Not Verified' | 'Not Applicable';
  /** Capital S on the wire. */
  Stir_attestation: string;
  voice_network_group: string;
  source_ip: string;
}

/** Answer to starting a stream (assumption A7). */
export interface StartStreamResponseWire {
  api_id: string;
  message: string;
  stream_id: string;
}

/** Error body (assumption A2). */
export interface ApiErrorBodyWire {
  api_id?: string;
  error: string | Record<string, unknown>;
}

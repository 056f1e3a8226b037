import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * The data tables (one per resource of the spec's section 2) and the bookkeeping tables.
 *
 * Types: amounts `numeric` without scale (nothing is rounded), times `timestamptz`, flags
 * `boolean`, durations and counts `integer`, identifiers and numbers `text` (error_code "000"
 * keeps its zeros). Every data table has `account_id`, `raw` (the record as received), `synced_at`
 * (when this version was written) and `changed_at` (when a later sync found the record changed).
 */
export const initialSchema: SchemaMigration = {
  name: '0001-initial-schema',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    const statements = [
      sql`CREATE SCHEMA IF NOT EXISTS ${s}`,

      // ---- trunk call records (2.6) -------------------------------------------------------
      sql`CREATE TABLE ${s}.trunk_calls (
        account_id          text        NOT NULL,
        call_uuid           text        NOT NULL,
        parent_call_uuid    text,
        conference_uuid     text,
        api_id              text,
        resource_uri        text,
        call_direction      text,
        call_state          text,
        from_number         text,
        to_number           text,
        initiation_time     timestamptz,
        answer_time         timestamptz,
        end_time            timestamptz NOT NULL,
        call_duration       integer,
        bill_duration       integer,
        billed_duration     integer,
        total_rate          numeric,
        total_amount        numeric,
        hangup_cause_code   integer,
        hangup_cause_name   text,
        hangup_source       text,
        stir_verification   text,
        stir_attestation    text,
        voice_network_group text,
        source_ip           text,
        raw                 jsonb       NOT NULL,
        synced_at           timestamptz NOT NULL DEFAULT now(),
        changed_at          timestamptz,
        PRIMARY KEY (account_id, call_uuid)
      )`,
      sql`CREATE INDEX trunk_calls_end_time_idx ON ${s}.trunk_calls (account_id, end_time)`,
      sql`CREATE INDEX trunk_calls_from_number_idx ON ${s}.trunk_calls (account_id, from_number text_pattern_ops)`,
      sql`CREATE INDEX trunk_calls_to_number_idx ON ${s}.trunk_calls (account_id, to_number text_pattern_ops)`,

      // ---- SIP endpoints (2.1), a snapshot --------------------------------------------------
      sql`CREATE TABLE ${s}.sip_endpoints (
        account_id      text        NOT NULL,
        endpoint_id     text        NOT NULL,
        username        text,
        alias           text,
        application     text,
        resource_uri    text,
        sip_uri         text,
        sip_registered  boolean,
        sip_contact     text,
        sip_expires     timestamptz,
        sip_user_agent  text,
        sub_account     text,
        raw             jsonb       NOT NULL,
        synced_at       timestamptz NOT NULL DEFAULT now(),
        changed_at      timestamptz,
        first_seen_at   timestamptz NOT NULL DEFAULT now(),
        last_seen_at    timestamptz NOT NULL DEFAULT now(),
        deleted_at      timestamptz,
        PRIMARY KEY (account_id, endpoint_id)
      )`,

      // ---- verified caller IDs (2.2), a snapshot -------------------------------------------
      sql`CREATE TABLE ${s}.verified_caller_ids (
        account_id         text        NOT NULL,
        phone_number       text        NOT NULL,
        alias              text,
        country            text,
        created_at         timestamptz,
        modified_at        timestamptz,
        resource_uri       text,
        subaccount         text,
        verification_uuid  text,
        raw                jsonb       NOT NULL,
        synced_at          timestamptz NOT NULL DEFAULT now(),
        changed_at         timestamptz,
        first_seen_at      timestamptz NOT NULL DEFAULT now(),
        last_seen_at       timestamptz NOT NULL DEFAULT now(),
        deleted_at         timestamptz,
        PRIMARY KEY (account_id, phone_number)
      )`,

      // ---- message detail records (2.3) ----------------------------------------------------
      sql`CREATE TABLE ${s}.messages (
        account_id                         text        NOT NULL,
        message_uuid                       text        NOT NULL,
        resource_uri                       text,
        message_direction                  text,
        message_state                      text,
        message_type                       text,
        message_time                       timestamptz,
        from_number                        text,
        to_number                          text,
        replaced_sender                    text,
        destination_country_iso2           text,
        destination_network                text,
        mcc                                text,
        mnc                                text,
        units                              integer,
        total_rate                         numeric,
        total_amount                       numeric,
        carrier_fees_rate                  numeric,
        carrier_fees                       numeric,
        error_code                         text,
        is_domestic                        boolean,
        powerpack_id                       text,
        tendlc_campaign_id                 text,
        tendlc_registration_status         text,
        dlt_entity_id                      text,
        dlt_template_id                    text,
        dlt_template_category              text,
        requester_ip                       text,
        conversation_id                    text,
        conversation_origin                text,
        conversation_expiration_timestamp  timestamptz,
        log                                text,
        api_id                             text,
        raw                                jsonb       NOT NULL,
        synced_at                          timestamptz NOT NULL DEFAULT now(),
        changed_at                         timestamptz,
        PRIMARY KEY (account_id, message_uuid)
      )`,
      sql`CREATE INDEX messages_message_time_idx ON ${s}.messages (account_id, message_time)`,
      sql`CREATE INDEX messages_powerpack_idx ON ${s}.messages (account_id, powerpack_id)`,

      // ---- sender packs (2.4) --------------------------------------------------------------
      sql`CREATE TABLE ${s}.powerpacks (
        account_id        text        NOT NULL,
        uuid              text        NOT NULL,
        name              text,
        application_id    text,
        application_type  text,
        created_on        timestamptz,
        local_connect     boolean,
        sticky_sender     boolean,
        number_pool       text,
        number_priority   jsonb       NOT NULL DEFAULT '[]'::jsonb
                          CHECK (jsonb_typeof(number_priority) = 'array'),
        api_id            text,
        raw               jsonb       NOT NULL,
        synced_at         timestamptz NOT NULL DEFAULT now(),
        changed_at        timestamptz,
        PRIMARY KEY (account_id, uuid)
      )`,
      sql`CREATE VIEW ${s}.powerpack_number_priorities AS
        SELECT p.account_id,
               p.uuid                                AS powerpack_uuid,
               p.name                                AS powerpack_name,
               entry.ordinality::integer             AS position,
               entry.value ->> 'country_iso'         AS country_iso,
               entry.value ->> 'service_type'        AS service_type,
               entry.value -> 'priority' ->> 'priority1' AS priority1,
               entry.value -> 'priority' ->> 'priority2' AS priority2,
               entry.value -> 'priority' ->> 'priority3' AS priority3
          FROM ${s}.powerpacks p
          CROSS JOIN LATERAL jsonb_array_elements(p.number_priority) WITH ORDINALITY AS entry(value, ordinality)`,

      // ---- audio-stream records of calls (2.5) ---------------------------------------------
      sql`CREATE TABLE ${s}.call_streams (
        account_id             text        NOT NULL,
        stream_id              text        NOT NULL,
        call_uuid              text        NOT NULL,
        service_auth_id        text,
        resource_uri           text,
        service_url            text,
        audio_track            text,
        bidirectional          boolean,
        created_at             timestamptz,
        start_time             timestamptz,
        end_time               timestamptz,
        bill_duration          integer,
        rounded_bill_duration  integer,
        billed_amount          numeric,
        raw                    jsonb       NOT NULL,
        synced_at              timestamptz NOT NULL DEFAULT now(),
        changed_at             timestamptz,
        PRIMARY KEY (account_id, stream_id)
      )`,
      sql`CREATE INDEX call_streams_call_idx ON ${s}.call_streams (account_id, call_uuid)`,

      // ---- lookup queues --------------------------------------------------------------------
      ...['message_refs', 'call_stream_refs', 'powerpack_refs'].map((table) => {
        const key = {
          message_refs: 'message_uuid',
          call_stream_refs: 'call_uuid',
          powerpack_refs: 'powerpack_uuid',
        }[table]!;
        return sql`CREATE TABLE ${s}.${sql.id(table)} (
          account_id       text        NOT NULL,
          ${sql.id(key)}   text        NOT NULL,
          requested_at     timestamptz NOT NULL DEFAULT now(),
          requested_by     text,
          status           text        NOT NULL DEFAULT 'pending'
                           CHECK (status IN ('pending', 'fetched', 'not_found', 'failed')),
          attempts         integer     NOT NULL DEFAULT 0,
          next_attempt_at  timestamptz,
          last_error       text,
          fetched_at       timestamptz,
          PRIMARY KEY (account_id, ${sql.id(key)})
        )`;
      }),
      sql`CREATE INDEX message_refs_pending_idx ON ${s}.message_refs (account_id, next_attempt_at) WHERE status = 'pending'`,
      sql`CREATE INDEX call_stream_refs_pending_idx ON ${s}.call_stream_refs (account_id, next_attempt_at) WHERE status = 'pending'`,
      sql`CREATE INDEX powerpack_refs_pending_idx ON ${s}.powerpack_refs (account_id, next_attempt_at) WHERE status = 'pending'`,

      // ---- bookkeeping --------------------------------------------------------------------
      sql`CREATE TABLE ${s}.sync_state (
        account_id  text        NOT NULL,
        stream      text        NOT NULL,
        watermark   timestamptz,
        cursor      jsonb       NOT NULL DEFAULT '{}'::jsonb,
        updated_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, stream)
      )`,
      sql`CREATE TABLE ${s}.sync_runs (
        id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id         text        NOT NULL,
        stream             text        NOT NULL,
        command            text        NOT NULL,
        status             text        NOT NULL DEFAULT 'running'
                           CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'stopped')),
        started_at         timestamptz NOT NULL DEFAULT now(),
        finished_at        timestamptz,
        window_start       timestamptz,
        window_end         timestamptz,
        windows_planned    integer     NOT NULL DEFAULT 0,
        windows_completed  integer     NOT NULL DEFAULT 0,
        requests           integer     NOT NULL DEFAULT 0,
        retries            integer     NOT NULL DEFAULT 0,
        wait_ms            bigint      NOT NULL DEFAULT 0,
        records_fetched    integer     NOT NULL DEFAULT 0,
        records_upserted   integer     NOT NULL DEFAULT 0,
        records_changed    integer     NOT NULL DEFAULT 0,
        records_rejected   integer     NOT NULL DEFAULT 0,
        gap_start          timestamptz,
        gap_end            timestamptz,
        error              text,
        pid                integer,
        host               text
      )`,
      sql`CREATE INDEX sync_runs_recent_idx ON ${s}.sync_runs (account_id, stream, started_at DESC)`,
      sql`CREATE TABLE ${s}.sync_windows (
        id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id   text        NOT NULL,
        stream       text        NOT NULL DEFAULT 'trunk_calls',
        slot_start   timestamptz NOT NULL,
        time_range   tstzrange   NOT NULL
                     CHECK (lower_inc(time_range) AND NOT upper_inc(time_range)
                            AND NOT lower_inf(time_range) AND NOT upper_inf(time_range)),
        status       text        NOT NULL DEFAULT 'planned'
                     CHECK (status IN ('planned', 'running', 'complete', 'failed')),
        total_count  integer,
        rows_stored  integer,
        attempts     integer     NOT NULL DEFAULT 0,
        last_error   text,
        last_run_id  bigint      REFERENCES ${s}.sync_runs (id) ON DELETE SET NULL,
        read_at      timestamptz,
        verified_at  timestamptz,
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now()
      )`,
      // One row per slot of the UTC grid: a slot still open (its end not yet settled) keeps its row
      // and widens it; a slot cut by the horizon keeps its row and narrows it.
      sql`CREATE UNIQUE INDEX sync_windows_slot_idx ON ${s}.sync_windows (account_id, stream, slot_start)`,
      sql`CREATE TABLE ${s}.rejected_records (
        id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id      text        NOT NULL,
        stream          text        NOT NULL,
        reason          text        NOT NULL,
        record_key      text,
        raw_payload     text,
        raw_bytes       bytea       NOT NULL,
        payload_sha256  text        NOT NULL,
        run_id          bigint      REFERENCES ${s}.sync_runs (id) ON DELETE SET NULL,
        first_seen_at   timestamptz NOT NULL DEFAULT now(),
        last_seen_at    timestamptz NOT NULL DEFAULT now(),
        occurrences     integer     NOT NULL DEFAULT 1,
        UNIQUE (account_id, stream, payload_sha256)
      )`,
    ];
    for (const statement of statements) await statement.execute(db);
    for (const statement of commentStatements(schema)) await statement.execute(db);
  },
};

/** COMMENT ON statements: the meaning of each table and of the columns that need one, for BI. */
function commentStatements(schema: string) {
  const s = sql.id(schema);
  const table = (name: string, text: string) =>
    sql`COMMENT ON TABLE ${s}.${sql.id(name)} IS ${sql.lit(text)}`;
  const column = (name: string, col: string, text: string) =>
    sql`COMMENT ON COLUMN ${s}.${sql.id(name)}.${sql.id(col)} IS ${sql.lit(text)}`;
  const dataTables = [
    'trunk_calls',
    'sip_endpoints',
    'verified_caller_ids',
    'messages',
    'powerpacks',
    'call_streams',
  ];
  return [
    table(
      'trunk_calls',
      'Completed trunk call records (CDRs), one row per call, upserted by end_time window.',
    ),
    table(
      'sip_endpoints',
      'Snapshot of the SIP endpoints of each account; rows missing from a complete snapshot get deleted_at.',
    ),
    table(
      'verified_caller_ids',
      'Snapshot of the verified caller IDs of each account; rows missing from a complete snapshot get deleted_at.',
    ),
    table('messages', 'Message detail records looked up by UUID from message_refs.'),
    table('powerpacks', 'Sender packs (Powerpack) referenced by stored messages.'),
    table('call_streams', 'Audio-stream records of the calls queued in call_stream_refs.'),
    table(
      'message_refs',
      'Queue of message UUIDs to look up: filled by users, other systems and `telesync lookup messages`.',
    ),
    table(
      'call_stream_refs',
      'Queue of call UUIDs whose audio-stream records are wanted (`telesync lookup streams`).',
    ),
    table(
      'powerpack_refs',
      'Sender packs to fetch, filled from the powerpack_id of stored messages.',
    ),
    table(
      'sync_state',
      'Per account and stream: the watermark up to which data is complete, and stream-specific cursor state.',
    ),
    table(
      'sync_windows',
      'Ledger of planned trunk-call windows: the service total, rows stored and status of each [start, end) range.',
    ),
    table(
      'sync_runs',
      'One row per run (account x stream): counts of requests, retries, records and the outcome.',
    ),
    table(
      'rejected_records',
      'Records that could not be normalised, with the reason and the payload exactly as received.',
    ),
    ...dataTables.flatMap((name) => [
      column(name, 'account_id', 'The account (auth_id) the record was read from.'),
      column(name, 'raw', 'The record as received from the service.'),
      column(name, 'synced_at', 'When telesync wrote this version of the row.'),
      column(
        name,
        'changed_at',
        'When a later sync found the record changed at the service (null: never changed since first stored).',
      ),
    ]),
    ...['sip_endpoints', 'verified_caller_ids'].flatMap((name) => [
      column(name, 'first_seen_at', 'First snapshot that contained the row.'),
      column(name, 'last_seen_at', 'Latest complete snapshot that contained the row.'),
      column(
        name,
        'deleted_at',
        'Set when a complete snapshot no longer contained the row; cleared if it comes back.',
      ),
    ]),
    column(
      'trunk_calls',
      'stir_attestation',
      'Wire field Stir_attestation (capital S on the wire).',
    ),
    column(
      'trunk_calls',
      'total_amount',
      'Amount billed for the call, exact decimal as sent by the service.',
    ),
    column(
      'messages',
      'is_domestic',
      'The service sends this key twice (text and boolean); both must agree.',
    ),
    column(
      'sip_endpoints',
      'sip_expires',
      'Registration expiry; sent without an offset and read as UTC.',
    ),
    column(
      'rejected_records',
      'raw_payload',
      'The record text exactly as received; null when it is not valid UTF-8 or contains NUL (see raw_bytes).',
    ),
    column('rejected_records', 'raw_bytes', 'The record bytes exactly as received.'),
    column(
      'sync_windows',
      'time_range',
      'Half-open [end_time__gte, end_time__lt) range read, UTC: the slot, or less of it while it is still open or where the 90-day horizon cuts it.',
    ),
    column(
      'sync_windows',
      'slot_start',
      'Start of the slot of the UTC grid (TELESYNC_SLICE_HOURS wide) the row stands for: one row per slot.',
    ),
    column('sync_windows', 'read_at', 'Last time every page of the window was read.'),
    column('sync_windows', 'total_count', 'meta.total_count the service reported for the window.'),
    column('sync_windows', 'rows_stored', 'Rows of trunk_calls in the window after it completed.'),
    column(
      'sync_windows',
      'verified_at',
      'Last time a count probe found the service total unchanged since the window was read (rows_stored can still differ by quarantined records).',
    ),
    column(
      'sync_runs',
      'records_upserted',
      'Records handed to the upsert (written or found unchanged); fetched = upserted + rejected.',
    ),
    column(
      'sync_runs',
      'records_changed',
      'Rows inserted or rewritten because their content changed.',
    ),
    column(
      'sync_runs',
      'gap_start',
      'Start of an unrecoverable gap: data older than the 90-day horizon that was never synced.',
    ),
  ];
}

import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * A COMMENT on every table, view and column, for the BI tools that show them (Metabase, DataGrip,
 * dbt docs): what each holds, in which unit and form. The longer guide is docs/schema.md.
 *
 * Written out in full here rather than derived from the guide or the code: a migration must do the
 * same thing forever, whatever later becomes of the files around it. It replaces the few column
 * comments of 0001 with fuller ones.
 */
export const columnComments: SchemaMigration = {
  name: '0003-column-comments',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    for (const [relation, entry] of Object.entries(RELATION_COMMENTS)) {
      const name = sql.id(relation);
      const kind = sql.raw(entry.kind);
      await sql`COMMENT ON ${kind} ${s}.${name} IS ${sql.lit(entry.comment)}`.execute(db);
      for (const [column, text] of Object.entries(entry.columns)) {
        await sql`COMMENT ON COLUMN ${s}.${name}.${sql.id(column)} IS ${sql.lit(text)}`.execute(db);
      }
    }
  },
};

interface RelationComments {
  readonly kind: 'TABLE' | 'VIEW';
  readonly comment: string;
  /** Column name → comment. */
  readonly columns: Readonly<Record<string, string>>;
}

const EXACT = 'exact decimal as sent, never rounded';
const CURRENCY = "in the account's billing currency (the service does not name it in the record)";
const KEPT_AS_RECEIVED = 'stored as received, not validated';

/** Columns every data table has. */
function dataColumns(what: string, verb: string): Record<string, string> {
  return {
    account_id: `The account (auth_id) the ${what} was read from. Every key starts with it.`,
    raw: `The ${what} as the service sent it (jsonb): every field, including ones without a column; original time offsets are here.`,
    synced_at: `When telesync wrote this version of the row (UTC, telesync's clock). Re-reading an unchanged ${what} does not touch it.`,
    changed_at: `When a later ${verb} found the ${what} changed at the service and rewrote the row (UTC, telesync's clock); null: never changed since first stored.`,
  };
}

/** Columns of the two snapshot tables. */
function snapshotColumns(what: string): Record<string, string> {
  return {
    first_seen_at: `First snapshot that contained the ${what} (UTC; not its creation at the service).`,
    last_seen_at: `Latest snapshot that contained the ${what} (UTC); registration-like fields are as of this time.`,
    deleted_at: `When a complete snapshot no longer contained the ${what} (UTC); null while it exists, cleared if it comes back. Filter deleted_at IS NULL for current rows.`,
  };
}

/** Columns of the three lookup queues. */
function queueColumns(
  key: string,
  keyText: string,
  extra: { requestedBy?: string; status?: string; next?: string } = {},
): Record<string, string> {
  return {
    account_id: 'The account (auth_id) the entry belongs to.',
    [key]: keyText,
    requested_at: 'When the entry was queued, or queued again (UTC).',
    requested_by:
      extra.requestedBy ?? 'Who queued it: cli, demo, or whatever an inserting system writes.',
    status:
      extra.status ??
      "pending (to fetch when next_attempt_at is null or past), fetched, not_found (the service answered 404; not retried) or failed (given up after TELESYNC_LOOKUP_MAX_ATTEMPTS, or the record was rejected). Queueing again resets it to 'pending'.",
    attempts: 'Lookups attempted since the entry was last queued (count).',
    next_attempt_at:
      extra.next ??
      'Earliest time of the next attempt after a failure (UTC; backoff 1, 4, 16, … minutes, at most 6 hours); null: as soon as possible.',
    last_error: 'Why the last attempt failed (or the 404, or the rejection); null after a success.',
    fetched_at: 'When the record was last fetched and stored (UTC).',
  };
}

const RELATION_COMMENTS: Readonly<Record<string, RelationComments>> = {
  trunk_calls: {
    kind: 'TABLE',
    comment:
      'Completed trunk call records (CDRs), one row per call, read by end_time window (see sync_windows). The service keeps calls for 90 days only. Key: (account_id, call_uuid).',
    columns: {
      ...dataColumns('call record', 'sync'),
      call_uuid: 'The call identifier (UUID text).',
      parent_call_uuid: 'The parent call (UUID text); null when the service sends null.',
      conference_uuid: 'The conference (UUID text); null when the service sends null.',
      api_id:
        'Request identifier of the read that stored this version. Not content: a re-read with another api_id rewrites nothing.',
      resource_uri: 'Path of the call at the service: /v1/Account/{auth_id}/Call/<call_uuid>/.',
      call_direction: 'inbound or outbound.',
      call_state: `State of the call, e.g. ANSWER; ${KEPT_AS_RECEIVED}.`,
      from_number: 'Calling number, as sent.',
      to_number: 'Called number or SIP URI, as sent.',
      initiation_time:
        'When the call was initiated (UTC, to the microsecond; the offset sent is in raw).',
      answer_time:
        'When the call was answered (UTC, to the microsecond); null for a call never answered.',
      end_time:
        'When the call ended (UTC, to the microsecond). Never null. The time windows (sync_windows) and billing_daily go by.',
      call_duration: 'Duration of the call, in seconds.',
      bill_duration: 'Bill duration, in seconds, as sent (the service does not say more).',
      billed_duration: 'Time billed, in seconds; what billing_daily sums.',
      total_rate: `Rate applied to the call, ${CURRENCY}; ${EXACT}.`,
      total_amount: `Amount billed for the call, ${CURRENCY}; ${EXACT}.`,
      hangup_cause_code: 'Numeric hangup cause code.',
      hangup_cause_name: 'Hangup cause name, as sent.',
      hangup_source:
        'Who hung up as the trunk sees it: Caller, Callee or Error (not the customer/carrier/trunk names of the service filter).',
      stir_verification: 'STIR/SHAKEN verification: Verified, Not Verified or Not Applicable.',
      stir_attestation:
        'STIR/SHAKEN attestation level, e.g. A. Wire field Stir_attestation (capital S on the wire).',
      voice_network_group: 'Voice network group; empty string when none (never null).',
      source_ip: 'IP address the call came from.',
    },
  },

  sip_endpoints: {
    kind: 'TABLE',
    comment:
      'SIP endpoints of each account, one row per endpoint ever seen in a full snapshot. Current ones: deleted_at IS NULL. Key: (account_id, endpoint_id).',
    columns: {
      ...dataColumns('endpoint', 'snapshot'),
      ...snapshotColumns('endpoint'),
      endpoint_id: 'The endpoint identifier (numeric text).',
      username: 'SIP username.',
      alias: 'Friendly name.',
      application:
        'Path of the linked application: /v1/Account/{auth_id}/Application/<application_id>/.',
      resource_uri: 'Path of the endpoint: /v1/Account/{auth_id}/Endpoint/<endpoint_id>/.',
      sip_uri: 'SIP address: sip:<username>@<sip domain>.',
      sip_registered:
        'Whether a device was registered at the last snapshot (sent as the text "true"/"false").',
      sip_contact: 'Contact URI of the registered device; null when unregistered.',
      sip_expires:
        'When the registration expires (UTC: sent as YYYY-MM-DD HH:MM:SS without an offset and read as UTC); null when unregistered.',
      sip_user_agent: 'User agent of the registered device; null when unregistered.',
      sub_account: 'Sub-account reference; null when the endpoint belongs to the main account.',
    },
  },

  verified_caller_ids: {
    kind: 'TABLE',
    comment:
      'Verified caller IDs of each account, one row per number ever seen in a full snapshot. Current ones: deleted_at IS NULL. Key: (account_id, phone_number).',
    columns: {
      ...dataColumns('caller ID', 'snapshot'),
      ...snapshotColumns('caller ID'),
      phone_number: 'The verified number, E.164.',
      alias: 'Friendly name.',
      country: '2-letter ISO 3166-1 country code, e.g. US.',
      created_at: 'When the caller ID was created at the service (UTC, to the microsecond).',
      modified_at: 'When it was last modified at the service (UTC, to the microsecond).',
      resource_uri:
        'Path at the service: /v1/Account/{auth_id}/VerifiedCallerId/<digits> (no plus sign).',
      subaccount: 'Sub-account auth ID; empty string when none (never null).',
      verification_uuid: 'Verification identifier (UUID text).',
    },
  },

  messages: {
    kind: 'TABLE',
    comment:
      "Message detail records, one row per message looked up from message_refs: only the messages someone queued, not the account's whole traffic. Key: (account_id, message_uuid).",
    columns: {
      ...dataColumns('message record', 'lookup'),
      message_uuid: 'The message identifier (UUID text).',
      resource_uri: 'Path of the message: /v1/Account/{auth_id}/Message/<message_uuid>/.',
      message_direction: `Direction, e.g. outbound; ${KEPT_AS_RECEIVED}.`,
      message_state: `State when the message was looked up, e.g. delivered; ${KEPT_AS_RECEIVED}. Queue it again to refresh it.`,
      message_type: `Type, e.g. sms; ${KEPT_AS_RECEIVED}.`,
      message_time:
        'When the message was sent (UTC, to the microsecond; the offset sent is in raw). messages_billing_daily goes by its UTC day.',
      from_number: 'Sender number: digits, no plus sign.',
      to_number: 'Recipient number: digits, no plus sign.',
      replaced_sender: 'Number that replaced the requested sender.',
      destination_country_iso2: '2-letter country code of the destination.',
      destination_network: 'Destination carrier or network name.',
      mcc: 'Mobile country code (text, as sent).',
      mnc: 'Mobile network code (text, as sent).',
      units: 'Number of message units billed (count).',
      total_rate: `Rate per message unit, ${CURRENCY}; ${EXACT}.`,
      total_amount: `Amount billed for the message, ${CURRENCY}; ${EXACT}. Whether it includes carrier_fees is not documented: report both.`,
      carrier_fees_rate: `Carrier fee rate, ${CURRENCY}; ${EXACT}.`,
      carrier_fees: `Carrier fees for the message, ${CURRENCY}; ${EXACT}.`,
      error_code: 'Three-digit text, leading zeros kept; 000 for a delivered message.',
      is_domestic:
        'Whether the destination is domestic. The service sends this key twice (text "false" and boolean false); both must agree, stored once.',
      powerpack_id:
        'Sender pack used: powerpacks.uuid of the same account (the pack row may not be fetched yet); empty string when none.',
      tendlc_campaign_id: '10DLC campaign identifier (registered 10-digit long code traffic).',
      tendlc_registration_status: `10DLC registration status, e.g. registered; ${KEPT_AS_RECEIVED}.`,
      dlt_entity_id: 'DLT entity identifier; empty string when not applicable (never null).',
      dlt_template_id: 'DLT template identifier; empty string when not applicable (never null).',
      dlt_template_category:
        'DLT template category; empty string when not applicable (never null).',
      requester_ip: 'IP address of the requester.',
      conversation_id: 'Conversation identifier.',
      conversation_origin: `Conversation origin, e.g. authentication; ${KEPT_AS_RECEIVED}.`,
      conversation_expiration_timestamp: 'When the conversation expires (UTC).',
      log: `Logging mode, e.g. number_only; ${KEPT_AS_RECEIVED}.`,
      api_id:
        'Request identifier of the lookup that stored this version. Not content: a re-read with another api_id rewrites nothing.',
    },
  },

  powerpacks: {
    kind: 'TABLE',
    comment:
      'Sender packs (pools of sending numbers) named by stored messages, fetched from powerpack_refs and refreshed daily. Key: (account_id, uuid); join messages.powerpack_id = powerpacks.uuid.',
    columns: {
      ...dataColumns('sender pack', 'fetch'),
      uuid: 'The pack identifier (UUID text).',
      name: 'Pack name.',
      application_id: 'Linked application; empty string when none (never null).',
      application_type: 'Type of the linked application; empty string when none (never null).',
      created_on: 'When the pack was created at the service (UTC, to the microsecond).',
      local_connect: 'Local connect setting of the pack, as sent.',
      sticky_sender: 'Sticky sender setting of the pack, as sent.',
      number_pool: 'Path of the number pool: /v1/Account/<id>/NumberPool/<numberpool_id>/.',
      number_priority:
        'The number_priority array as sent (jsonb): one entry per country and service type. Read it as rows in powerpack_number_priorities.',
      api_id:
        'Request identifier of the response; null when absent. Not content: a re-read with another api_id rewrites nothing.',
    },
  },

  powerpack_number_priorities: {
    kind: 'VIEW',
    comment:
      'One row per sender pack and entry of its number_priority array (country and service type), with the three number-type priorities as columns. (account_id, powerpack_uuid, position) is unique.',
    columns: {
      account_id: 'The account (auth_id) of the pack.',
      powerpack_uuid: 'The pack: powerpacks.uuid.',
      powerpack_name: "The pack's name: powerpacks.name.",
      position: 'Place of the entry in number_priority: 1 for the first, 2 for the second, …',
      country_iso: '2-letter country code of the entry, e.g. US, CA.',
      service_type: 'Service type of the entry, e.g. SMS, MMS.',
      priority1: 'Number type tried first: shortcode, tollfree or longcode.',
      priority2: 'Number type tried second: shortcode, tollfree or longcode.',
      priority3: 'Number type tried third: shortcode, tollfree or longcode.',
    },
  },

  call_streams: {
    kind: 'TABLE',
    comment:
      'Audio-stream records of the calls queued in call_stream_refs (only those). A running stream has end_time null and 0 billed until it ends and is read again. Key: (account_id, stream_id).',
    columns: {
      ...dataColumns('stream record', 'read'),
      stream_id: 'The stream identifier (UUID text).',
      call_uuid:
        'The call carrying the stream (UUID text); join trunk_calls on (account_id, call_uuid).',
      service_auth_id: 'Account identifier as the stream record names it.',
      resource_uri:
        'Path of the stream: /v1/Account/{auth_id}/Call/<call_uuid>/Stream/<stream_id>/.',
      service_url: 'WebSocket URL (wss://) the audio was sent to.',
      audio_track: 'Track streamed: inbound, outbound or both.',
      bidirectional: 'Whether the WebSocket could send audio back into the call.',
      created_at: 'When the stream was created (UTC, to the microsecond).',
      start_time: 'When the stream started (UTC). call_streams_billing_daily goes by its UTC day.',
      end_time: 'When the stream ended (UTC); null while it is still running.',
      bill_duration: 'Billed duration in seconds; 0 while running.',
      rounded_bill_duration:
        'Billed duration in seconds, rounded up by the service to whole minutes (21 becomes 60); 0 while running.',
      billed_amount: `Amount billed for the stream, ${CURRENCY}; ${EXACT}. 0 while running.`,
    },
  },

  billing_daily: {
    kind: 'VIEW',
    comment:
      'Trunk calls per UTC day of end_time, account and direction: calls, billed time and the exact sum of total_amount.',
    columns: {
      day: 'The UTC day the calls ended: (end_time AT TIME ZONE UTC)::date.',
      account_id: 'The account (auth_id).',
      direction: 'Call direction: inbound or outbound (trunk_calls.call_direction).',
      calls: 'Number of calls that ended that day.',
      billed_seconds: 'Sum of billed_duration, in seconds; exact.',
      billed_minutes:
        'billed_seconds / 60, in minutes, rounded to 4 decimals. For a month, sum billed_seconds and divide once.',
      total_amount: `Sum of total_amount, ${CURRENCY}; exact numeric sum.`,
    },
  },

  messages_billing_daily: {
    kind: 'VIEW',
    comment:
      'Stored messages per UTC day of message_time, account, direction and type: units, amount and carrier fees (only the messages queued for lookup).',
    columns: {
      day: 'The UTC day of message_time.',
      account_id: 'The account (auth_id).',
      direction: 'Message direction, e.g. outbound (messages.message_direction).',
      message_type: 'Message type, e.g. sms.',
      messages: 'Number of messages.',
      units: 'Sum of message units (count).',
      total_amount: `Sum of total_amount, ${CURRENCY}; exact numeric sum.`,
      carrier_fees: `Sum of carrier_fees, ${CURRENCY}; exact numeric sum.`,
    },
  },

  call_streams_billing_daily: {
    kind: 'VIEW',
    comment:
      'Audio streams per UTC day of start_time and account: billed seconds and the exact sum of billed_amount. Running streams count 0 until they end.',
    columns: {
      day: 'The UTC day the streams started.',
      account_id: 'The account (auth_id).',
      streams: 'Number of streams.',
      bill_seconds: 'Sum of bill_duration, in seconds; exact.',
      rounded_bill_seconds:
        'Sum of rounded_bill_duration, in seconds as rounded up by the service.',
      billed_amount: `Sum of billed_amount, ${CURRENCY}; exact numeric sum.`,
    },
  },

  message_refs: {
    kind: 'TABLE',
    comment:
      'Queue of message UUIDs to look up into messages. Anyone may insert (account_id and message_uuid suffice); `telesync lookup messages` does too. Key: (account_id, message_uuid).',
    columns: queueColumns('message_uuid', 'The message to fetch (messages.message_uuid).'),
  },

  call_stream_refs: {
    kind: 'TABLE',
    comment:
      'Queue of calls whose audio-stream records to fetch into call_streams. Anyone may insert (account_id and call_uuid suffice); `telesync lookup streams` does too. Key: (account_id, call_uuid).',
    columns: queueColumns(
      'call_uuid',
      'The call whose streams to fetch (call_streams.call_uuid).',
      {
        status:
          "pending, fetched, not_found (404; not retried) or failed (given up). Stays 'pending' while a stream of the call is still running, and is read again 10 minutes later.",
        next: 'Earliest time of the next attempt (UTC): after a failure, or 10 minutes after a running stream was read; null: as soon as possible.',
      },
    ),
  },

  powerpack_refs: {
    kind: 'TABLE',
    comment:
      'Queue of sender packs to fetch into powerpacks, filled from the powerpack_id of stored messages. Key: (account_id, powerpack_uuid).',
    columns: queueColumns('powerpack_uuid', 'The pack to fetch (powerpacks.uuid).', {
      requestedBy: "Who queued it: messages when queued from stored messages' powerpack_id.",
      status:
        "pending, fetched, not_found (404; not retried) or failed (given up). A fetched pack returns to 'pending' after TELESYNC_POWERPACK_REFRESH_HOURS (default 24).",
    }),
  },

  sync_state: {
    kind: 'TABLE',
    comment:
      'Per account and stream: the watermark up to which data is complete, and stream-specific cursor state. Key: (account_id, stream).',
    columns: {
      account_id: 'The account (auth_id).',
      stream: 'The stream: trunk_calls, endpoints or caller_ids.',
      watermark:
        'trunk_calls: calls that ended before this instant (UTC) have been read, back to the first synced window; trails now by the settle lag and never moves back. Snapshots: time of the last complete snapshot. Null before the first.',
      cursor:
        'Stream-specific state (jsonb); for trunk_calls, {"backfill": {"startedAt", "from", "to"}} while a backfill is unfinished, else {}.',
      updated_at: 'When the row last changed (UTC).',
    },
  },

  sync_windows: {
    kind: 'TABLE',
    comment:
      "Ledger of trunk-call windows: one row per slot of the UTC grid (one per UTC day by default) with the service's count beside the rows stored. Reconcile the service with the database here.",
    columns: {
      id: 'Row identifier.',
      account_id: 'The account (auth_id).',
      stream: 'Always trunk_calls.',
      slot_start:
        'Start of the slot of the UTC grid (TELESYNC_SLICE_HOURS wide, default 24) the row stands for; one row per slot.',
      time_range:
        'Half-open [start, end) range of end_time read, UTC (the end_time__gte and end_time__lt sent): the slot, or less of it while it is still open or where the 90-day horizon cuts it.',
      status:
        'planned (not read yet), running (being read, or left so by a crashed run), complete (read in full and added up) or failed (see last_error; read again by the next run).',
      total_count:
        "The service's count of calls in the range (meta.total_count) at the last complete read or count probe.",
      rows_stored:
        'Rows of trunk_calls in the range when the window last completed or was verified. Below total_count by the records quarantined.',
      attempts: 'Full reads started for this slot (count).',
      last_error: 'Why the last attempt failed; null once complete.',
      last_run_id: 'The run (sync_runs.id) that last read, verified or failed the window.',
      read_at: 'When every page of the window was last read (UTC).',
      verified_at:
        "When a one-request count probe last found the service's count consistent with what was read (UTC); null if only ever read in full.",
      created_at: "When the slot's row was created (UTC).",
      updated_at: 'When the row last changed (UTC).',
    },
  },

  sync_runs: {
    kind: 'TABLE',
    comment:
      'One row per run (one account x one stream): requests, retries, records fetched, stored and rejected, and the outcome. records_fetched = records_upserted + records_rejected for a finished run.',
    columns: {
      id: 'Run identifier (referenced by rejected_records.run_id and sync_windows.last_run_id).',
      account_id: 'The account (auth_id).',
      stream:
        'The stream: trunk_calls, endpoints, caller_ids, messages, powerpacks or call_streams.',
      command:
        'What started the run: sync, backfill, schedule, lookup messages, lookup streams or demo.',
      status:
        'running, succeeded, failed, skipped (another run of the stream was in progress) or stopped (asked to stop: what it fetched is stored). A run whose process died is closed as failed by the next run.',
      started_at: 'When the run started (UTC).',
      finished_at: 'When the run ended (UTC); null while running.',
      window_start:
        'trunk_calls: start of the span of end_time the run covered (UTC). Null for other streams.',
      window_end: 'trunk_calls: end (exclusive) of that span (UTC). Null for other streams.',
      windows_planned:
        'trunk_calls: windows planned. Snapshots: 1. Lookups: queue entries taken (count).',
      windows_completed:
        'trunk_calls: windows completed or skipped by a resumed backfill. Snapshots: 1 when complete. Lookups: entries done (count).',
      requests: 'HTTP requests sent to the service, retries included (count).',
      retries: 'Requests that were retries after a 429, 5xx, reset or timeout (count).',
      wait_ms: 'Time spent waiting before retries, in milliseconds.',
      records_fetched: 'Records received (count); a window read twice counts twice.',
      records_upserted:
        'Records handed to the upsert: stored, rewritten or found unchanged (count); fetched = upserted + rejected.',
      records_changed:
        'Rows inserted, or rewritten because their content changed (count); 0 for a re-read of unchanged data.',
      records_rejected: 'Records quarantined in rejected_records (count).',
      gap_start:
        'Start of an unrecoverable gap (UTC): the watermark had fallen behind the 90-day horizon, so calls that ended from here to gap_end can no longer be read. Null when none.',
      gap_end: 'End of that gap (UTC): the horizon at the time of the run.',
      error: 'Why the run failed; null when it did not fail.',
      pid: 'Operating-system process id of the run.',
      host: 'Host name the run ran on.',
    },
  },

  rejected_records: {
    kind: 'TABLE',
    comment:
      'Quarantine: records that could not be stored, with the reason and the payload exactly as received. The same bytes seen again are counted (occurrences), not stored twice.',
    columns: {
      id: 'Row identifier.',
      account_id: 'The account (auth_id) the record was read from.',
      stream: 'The stream it came from (trunk_calls, endpoints, caller_ids, messages, …).',
      reason: 'What is wrong: the field, the form expected and what arrived (the latest reason).',
      record_key:
        "The record's identifier (call_uuid, endpoint_id, message_uuid, …) when it could be read; else null.",
      raw_payload:
        'The record text exactly as received; null when it is not valid UTF-8 or contains NUL (see raw_bytes).',
      raw_bytes: 'The record bytes exactly as received.',
      payload_sha256:
        'SHA-256 of raw_bytes, 64 lower-case hex digits: the identity of the payload.',
      run_id: 'The latest run (sync_runs.id) that received it.',
      first_seen_at: 'When it was first quarantined (UTC).',
      last_seen_at: 'When it was last received (UTC).',
      occurrences: 'How many times these exact bytes were received (count).',
    },
  },

  // Kysely's migration bookkeeping shares the schema, so BI tools list it too.
  schema_migrations: {
    kind: 'TABLE',
    comment: "telesync's migration bookkeeping (not for reporting): one row per applied migration.",
    columns: {
      name: 'Name of the applied migration, e.g. 0001-initial-schema.',
      timestamp: 'When it was applied (ISO 8601 text, UTC).',
    },
  },
  schema_migrations_lock: {
    kind: 'TABLE',
    comment:
      "telesync's migration lock (not for reporting): keeps two processes from migrating at once.",
    columns: {
      id: 'The lock identifier (one row).',
      is_locked: '1 while a migration runs, else 0.',
    },
  },
};

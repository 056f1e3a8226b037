import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * Stream callbacks, hardened:
 *
 * - `stream_callback_nonces`: the nonces of accepted callbacks, for the replay window, so that a
 *   captured request sent again after a restart, or to another telesync, is refused too;
 * - `stream_events.nul_escaped`: a callback with U+0000 (which PostgreSQL cannot store) is stored
 *   with it escaped, and says so;
 * - every state the spec names for a stream (started, connected, stopped, timed out, failed,
 *   disconnected) in `stream_events.stream_status` and `call_streams.status`;
 * - the trigger that gives a call_streams row its status orders events as the repository does: by
 *   the event's time, then a stream's later state before its earlier one (a StartStream and a
 *   DroppedStream of the same second: disconnected), then the order stored.
 */
export const streamCallbackNonces: SchemaMigration = {
  name: '0008-stream-callback-nonces',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    const statuses = sql.raw(
      `'started', 'connected', 'stopped', 'timed_out', 'failed', 'disconnected'`,
    );
    const statements = [
      sql`CREATE TABLE ${s}.stream_callback_nonces (
        nonce          text        PRIMARY KEY,
        account_id     text        NOT NULL,
        signature      text        NOT NULL,
        accepted_until timestamptz NOT NULL,
        accepted_at    timestamptz NOT NULL DEFAULT now()
      )`,
      sql`CREATE INDEX stream_callback_nonces_until_idx ON ${s}.stream_callback_nonces (accepted_until)`,
      sql`ALTER TABLE ${s}.stream_events ADD COLUMN nul_escaped boolean NOT NULL DEFAULT false`,
      sql`ALTER TABLE ${s}.stream_events DROP CONSTRAINT stream_events_stream_status_check`,
      sql`ALTER TABLE ${s}.stream_events ADD CONSTRAINT stream_events_stream_status_check
            CHECK (stream_status IN (${statuses}))`,
      sql`ALTER TABLE ${s}.call_streams DROP CONSTRAINT call_streams_status_check`,
      sql`ALTER TABLE ${s}.call_streams ADD CONSTRAINT call_streams_status_check
            CHECK (status IN (${statuses}))`,
      sql`CREATE OR REPLACE FUNCTION ${s}.call_streams_status_from_events() RETURNS trigger
            LANGUAGE plpgsql AS ${sql.lit(`
        BEGIN
          IF NEW.status IS NULL THEN
            SELECT e.stream_status, e.event_time INTO NEW.status, NEW.status_at
              FROM ${quoteIdent(schema)}.stream_events e
             WHERE e.account_id = NEW.account_id
               AND e.stream_id = NEW.stream_id
               AND e.stream_status IS NOT NULL
             ORDER BY e.event_time DESC,
                      CASE e.stream_status WHEN 'started' THEN 0 WHEN 'connected' THEN 1 ELSE 2 END DESC,
                      e.id DESC
             LIMIT 1;
          END IF;
          RETURN NEW;
        END`)}`,
      sql`COMMENT ON TABLE ${s}.stream_callback_nonces IS ${sql.lit('Nonces of the stream callbacks accepted within the replay window: a request sent again, after a restart or to another telesync, is refused. Rows leave once the window has passed.')}`,
      comment(
        schema,
        'stream_callback_nonces',
        'nonce',
        'Header X-Plivo-Signature-V3-Nonce of an accepted callback.',
      ),
      comment(schema, 'stream_callback_nonces', 'account_id', 'The account whose token signed it.'),
      comment(
        schema,
        'stream_callback_nonces',
        'signature',
        'Header X-Plivo-Signature-V3 as received (not a secret: an HMAC).',
      ),
      comment(
        schema,
        'stream_callback_nonces',
        'accepted_until',
        'When the event leaves the replay window (its Timestamp plus the window, UTC); the row may be deleted after.',
      ),
      comment(schema, 'stream_callback_nonces', 'accepted_at', 'When telesync accepted it (UTC).'),
      comment(
        schema,
        'stream_events',
        'nul_escaped',
        'True when a field name or value of the callback carried U+0000, which PostgreSQL cannot store: each is stored in raw and error as the six characters \\u0000.',
      ),
      comment(schema, 'stream_events', 'stream_status', STATUS_COMMENT),
      comment(
        schema,
        'call_streams',
        'status',
        'Current status of the stream from its status callbacks (the latest event by event_time): started, connected, stopped, timed_out, failed or disconnected; null when no callback was received.',
      ),
    ];
    for (const statement of statements) await statement.execute(db);
  },
};

const STATUS_COMMENT =
  'Status the event gives the stream: connected (StartStream), stopped (StopStream), timed_out (StopStream saying stream_timeout), failed (DroppedStream before any StartStream), disconnected (DroppedStream after one), or the state a Status field names (started…); null for events that change nothing.';

function comment(schema: string, table: string, column: string, text: string) {
  return sql`COMMENT ON COLUMN ${sql.id(schema, table, column)} IS ${sql.lit(text)}`;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

import { sql, type Kysely } from 'kysely';
import type { SchemaMigration } from './migration-types.js';

/**
 * Stream status callbacks (spec section 6): `stream_events`, one row per event delivered (a
 * delivery sent again is stored once, by its delivery key), the current status of each stream in
 * `call_streams.status`, and the BI view `stream_events_daily`.
 *
 * A callback may arrive before the stream's record has been looked up: the trigger gives a
 * call_streams row inserted later the status of its latest stored event.
 */
export const streamEvents: SchemaMigration = {
  name: '0005-stream-events',
  async up(db: Kysely<unknown>, schema: string): Promise<void> {
    const s = sql.id(schema);
    const statuses = sql.raw(`'connected', 'stopped', 'failed', 'disconnected'`);
    const statements = [
      sql`CREATE TABLE ${s}.stream_events (
        id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id    text        NOT NULL,
        call_uuid     text        NOT NULL,
        stream_id     text        NOT NULL,
        event         text        NOT NULL,
        event_time    timestamptz NOT NULL,
        stream_status text        CHECK (stream_status IN (${statuses})),
        error         text,
        delivery_key  text        NOT NULL,
        raw           jsonb       NOT NULL,
        received_at   timestamptz NOT NULL DEFAULT now(),
        UNIQUE (account_id, delivery_key)
      )`,
      sql`CREATE INDEX stream_events_stream_idx ON ${s}.stream_events (account_id, stream_id, event_time)`,
      sql`CREATE INDEX stream_events_call_idx ON ${s}.stream_events (account_id, call_uuid)`,
      sql`ALTER TABLE ${s}.call_streams
            ADD COLUMN status    text CHECK (status IN (${statuses})),
            ADD COLUMN status_at timestamptz`,
      sql`CREATE FUNCTION ${s}.call_streams_status_from_events() RETURNS trigger
            LANGUAGE plpgsql AS ${sql.lit(`
        BEGIN
          IF NEW.status IS NULL THEN
            SELECT e.stream_status, e.event_time INTO NEW.status, NEW.status_at
              FROM ${quoteIdent(schema)}.stream_events e
             WHERE e.account_id = NEW.account_id
               AND e.stream_id = NEW.stream_id
               AND e.stream_status IS NOT NULL
             ORDER BY e.event_time DESC, e.id DESC
             LIMIT 1;
          END IF;
          RETURN NEW;
        END`)}`,
      sql`CREATE TRIGGER call_streams_status_from_events BEFORE INSERT ON ${s}.call_streams
            FOR EACH ROW EXECUTE FUNCTION ${s}.call_streams_status_from_events()`,
      sql`CREATE VIEW ${s}.stream_events_daily AS
        SELECT (event_time AT TIME ZONE 'UTC')::date       AS day,
               account_id,
               event,
               stream_status,
               count(*)::integer                          AS events,
               count(DISTINCT stream_id)::integer         AS streams,
               count(DISTINCT call_uuid)::integer         AS calls,
               count(error)::integer                      AS with_error
          FROM ${s}.stream_events
         GROUP BY 1, 2, 3, 4`,
    ];
    for (const statement of statements) await statement.execute(db);
    for (const statement of commentStatements(schema)) await statement.execute(db);
  },
};

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function commentStatements(schema: string) {
  const s = sql.id(schema);
  const column = (table: string, col: string, text: string) =>
    sql`COMMENT ON COLUMN ${s}.${sql.id(table)}.${sql.id(col)} IS ${sql.lit(text)}`;
  const events = (col: string, text: string) => column('stream_events', col, text);
  const daily = (col: string, text: string) => column('stream_events_daily', col, text);
  return [
    sql`COMMENT ON TABLE ${s}.stream_events IS ${sql.lit('Status callbacks of audio streams, one row per event the service delivered (a delivery sent again is stored once); only signed, fresh callbacks are stored.')}`,
    events('id', 'Order in which telesync stored the events.'),
    events('account_id', 'The account (auth_id) whose auth token signed the callback.'),
    events('call_uuid', 'Wire field CallUUID: the call carrying the stream.'),
    events('stream_id', 'Wire field StreamID: the stream (call_streams.stream_id).'),
    events(
      'event',
      'Wire field Event: StartStream, StopStream, DroppedStream, or another event the service sends.',
    ),
    events('event_time', 'Wire field Timestamp: when the event happened, UTC, microseconds kept.'),
    events(
      'stream_status',
      'Status the event gives the stream: connected (StartStream), stopped (StopStream, also on stream_timeout), failed (DroppedStream before any StartStream), disconnected (DroppedStream after one); null for events that change nothing.',
    ),
    events(
      'error',
      'Wire field Error: why the stream failed or was dropped; null when absent or empty.',
    ),
    events(
      'delivery_key',
      'SHA-256 of the callback fields: the same delivery sent again has the same key and is stored once.',
    ),
    events('raw', 'Every field of the callback as received, as a JSON object of texts.'),
    events('received_at', 'When telesync stored the event (UTC).'),
    column(
      'call_streams',
      'status',
      'Current status of the stream from its status callbacks (the latest event by event_time): connected, stopped, failed or disconnected; null when no callback was received.',
    ),
    column(
      'call_streams',
      'status_at',
      'When the event that set status happened (its event_time, UTC).',
    ),
    sql`COMMENT ON VIEW ${s}.stream_events_daily IS ${sql.lit('Stream status events per UTC day of event_time, account, event and status.')}`,
    daily('day', 'UTC day of event_time.'),
    daily('account_id', 'The account.'),
    daily('event', 'The Event of the callbacks.'),
    daily('stream_status', 'The status those events gave their streams (null: none).'),
    daily('events', 'Events stored.'),
    daily('streams', 'Distinct streams among them.'),
    daily('calls', 'Distinct calls among them.'),
    daily('with_error', 'Events that carried an Error.'),
  ];
}

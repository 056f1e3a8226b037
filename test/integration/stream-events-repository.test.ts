import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  insertStreamEvent,
  type StreamEventInput,
} from '../../src/db/repositories/stream-events-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let handle: TestDatabase;

beforeAll(async () => {
  handle = await createTestDatabase();
});

afterAll(async () => {
  await handle?.close();
});

let serial = 0;
function event(
  streamId: string,
  name: string,
  eventTime: string,
  extra: Partial<StreamEventInput> = {},
): StreamEventInput {
  const fields = {
    Event: name,
    StreamID: streamId,
    CallUUID: `call-of-${streamId}`,
    Timestamp: eventTime,
  };
  return {
    accountId: 'ACC1',
    callUuid: `call-of-${streamId}`,
    streamId,
    event: name,
    eventTime,
    error: null,
    deliveryKey: `key-${++serial}`,
    fields,
    ...extra,
  };
}

async function callStream(streamId: string, callUuid = `call-of-${streamId}`): Promise<void> {
  await handle.database.db
    .insertInto('call_streams')
    .values({ account_id: 'ACC1', stream_id: streamId, call_uuid: callUuid, raw: '{}' })
    .execute();
}

async function streamRow(streamId: string) {
  const result = await sql<{ status: string | null; status_at: string | null }>`
    SELECT status, to_char(status_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS status_at
      FROM ${sql.id(handle.database.schema, 'call_streams')}
     WHERE account_id = 'ACC1' AND stream_id = ${streamId}
  `.execute(handle.database.root);
  return result.rows[0];
}

async function storedEvents(streamId: string) {
  return handle.database.db
    .selectFrom('stream_events')
    .select(['event', 'stream_status', 'error', 'call_uuid', 'raw', 'delivery_key'])
    .select(
      sql<string>`to_char(event_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`.as(
        'event_time',
      ),
    )
    .where('stream_id', '=', streamId)
    .orderBy('id')
    .execute();
}

describe('insertStreamEvent', () => {
  it('stores connected then stopped, keeps the microseconds, sets the status and queues the call', async () => {
    await callStream('s-1');
    const { db } = handle.database;
    const start = await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-1', 'StartStream', '2026-01-05T10:00:00.123456Z')),
      );
    expect(start).toEqual({ stored: true, eventStatus: 'connected', streamStatus: 'connected' });
    expect(await streamRow('s-1')).toEqual({
      status: 'connected',
      status_at: '2026-01-05T10:00:00.123456',
    });

    const stop = await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-1', 'StopStream', '2026-01-05T10:05:00.000001Z')),
      );
    expect(stop).toEqual({ stored: true, eventStatus: 'stopped', streamStatus: 'stopped' });
    expect(await streamRow('s-1')).toEqual({
      status: 'stopped',
      status_at: '2026-01-05T10:05:00.000001',
    });

    expect(await storedEvents('s-1')).toEqual([
      expect.objectContaining({
        event: 'StartStream',
        stream_status: 'connected',
        event_time: '2026-01-05T10:00:00.123456',
        call_uuid: 'call-of-s-1',
      }),
      expect.objectContaining({
        event: 'StopStream',
        stream_status: 'stopped',
        event_time: '2026-01-05T10:05:00.000001',
      }),
    ]);
    const refs = await db
      .selectFrom('call_stream_refs')
      .select(['call_uuid', 'status', 'requested_by'])
      .where('account_id', '=', 'ACC1')
      .where('call_uuid', '=', 'call-of-s-1')
      .execute();
    expect(refs).toEqual([
      { call_uuid: 'call-of-s-1', status: 'pending', requested_by: 'stream-callback' },
    ]);
  });

  it('stores a delivery sent twice once', async () => {
    const { db } = handle.database;
    const first = event('s-2', 'StartStream', '2026-01-05T11:00:00Z', {
      deliveryKey: 'same-delivery',
    });
    await db.transaction().execute((trx) => insertStreamEvent(trx, first));
    const again = await db.transaction().execute((trx) => insertStreamEvent(trx, { ...first }));
    expect(again).toEqual({ stored: false, eventStatus: null, streamStatus: 'connected' });
    const rows = await storedEvents('s-2');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ delivery_key: 'same-delivery', raw: first.fields });
  });

  it('a dropped stream that never connected failed; one that had connected was disconnected', async () => {
    const { db } = handle.database;
    await callStream('s-failed');
    const failed = await db.transaction().execute((trx) =>
      insertStreamEvent(
        trx,
        event('s-failed', 'DroppedStream', '2026-01-05T12:00:00Z', {
          error: 'Could not establish connection with the remote service',
        }),
      ),
    );
    expect(failed).toMatchObject({ stored: true, streamStatus: 'failed' });
    expect(await streamRow('s-failed')).toMatchObject({ status: 'failed' });
    expect((await storedEvents('s-failed'))[0]).toMatchObject({
      error: 'Could not establish connection with the remote service',
    });

    await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-gone', 'StartStream', '2026-01-05T12:00:00Z')),
      );
    const dropped = await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-gone', 'DroppedStream', '2026-01-05T12:01:00Z')),
      );
    expect(dropped).toMatchObject({ eventStatus: 'disconnected', streamStatus: 'disconnected' });
  });

  it('a late delivery of an older event does not undo a newer status; an event that sets none leaves it', async () => {
    const { db } = handle.database;
    await callStream('s-3');
    await db
      .transaction()
      .execute((trx) => insertStreamEvent(trx, event('s-3', 'StopStream', '2026-01-05T13:05:00Z')));
    const late = await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-3', 'StartStream', '2026-01-05T13:00:00Z')),
      );
    expect(late).toEqual({ stored: true, eventStatus: 'connected', streamStatus: 'stopped' });
    const played = await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-3', 'PlayedStream', '2026-01-05T13:06:00Z')),
      );
    expect(played).toEqual({ stored: true, eventStatus: null, streamStatus: 'stopped' });
    expect(await streamRow('s-3')).toEqual({
      status: 'stopped',
      status_at: '2026-01-05T13:05:00.000000',
    });
  });

  it('a stream looked up after its events gets their status; a lookup rewrite keeps it', async () => {
    const { db } = handle.database;
    await db
      .transaction()
      .execute((trx) =>
        insertStreamEvent(trx, event('s-4', 'StartStream', '2026-01-05T14:00:00Z')),
      );
    expect(await streamRow('s-4')).toBeUndefined();
    await callStream('s-4');
    expect(await streamRow('s-4')).toEqual({
      status: 'connected',
      status_at: '2026-01-05T14:00:00.000000',
    });
    await db
      .updateTable('call_streams')
      .set({ end_time: '2026-01-05T14:10:00Z', raw: '{"ended":true}' })
      .where('stream_id', '=', 's-4')
      .execute();
    expect(await streamRow('s-4')).toMatchObject({ status: 'connected' });
  });

  it('rolls back with its transaction', async () => {
    const { db } = handle.database;
    await expect(
      db.transaction().execute(async (trx) => {
        await insertStreamEvent(trx, event('s-5', 'StartStream', '2026-01-05T15:00:00Z'));
        throw new Error('the request failed after storing');
      }),
    ).rejects.toThrow('the request failed');
    expect(await storedEvents('s-5')).toEqual([]);
  });
});

describe('the states of a stream, in the order of their events', () => {
  const store = (input: StreamEventInput) =>
    handle.database.db.transaction().execute((trx) => insertStreamEvent(trx, input));

  it('a StartStream arriving after the DroppedStream that followed it: disconnected, not failed', async () => {
    await callStream('late-1');
    const dropped = await store(event('late-1', 'DroppedStream', '2026-01-06T10:05:00Z'));
    expect(dropped).toMatchObject({ eventStatus: 'failed', streamStatus: 'failed' });
    const started = await store(event('late-1', 'StartStream', '2026-01-06T10:00:00Z'));
    expect(started).toMatchObject({ eventStatus: 'connected', streamStatus: 'disconnected' });
    expect(await streamRow('late-1')).toEqual({
      status: 'disconnected',
      status_at: '2026-01-06T10:05:00.000000',
    });
    expect((await storedEvents('late-1')).map((row) => row.stream_status)).toEqual([
      'disconnected',
      'connected',
    ]);
  });

  it('of two events in the same second, the later state wins whatever the order of arrival', async () => {
    await callStream('same-1');
    await store(event('same-1', 'StopStream', '2026-01-06T11:00:00Z'));
    const started = await store(event('same-1', 'StartStream', '2026-01-06T11:00:00Z'));
    expect(started.streamStatus).toBe('stopped');
    expect(await streamRow('same-1')).toMatchObject({ status: 'stopped' });
    // A row looked up later takes the same status from the trigger.
    await store(event('same-2', 'StopStream', '2026-01-06T11:00:00Z'));
    await store(event('same-2', 'StartStream', '2026-01-06T11:00:00Z'));
    await callStream('same-2');
    expect(await streamRow('same-2')).toMatchObject({ status: 'stopped' });
  });

  it('keeps started and timed_out, the states the spec names beyond the four events tell', async () => {
    await callStream('six-1');
    const started = await store({
      ...event('six-1', 'StreamStatus', '2026-01-06T12:00:00Z'),
      fields: { Status: 'started' },
    });
    expect(started).toMatchObject({ eventStatus: 'started', streamStatus: 'started' });
    await store(event('six-1', 'StartStream', '2026-01-06T12:00:01Z'));
    const timedOut = await store({
      ...event('six-1', 'StopStream', '2026-01-06T12:10:01Z'),
      fields: { Reason: 'stream_timeout' },
    });
    expect(timedOut).toMatchObject({ eventStatus: 'timed_out', streamStatus: 'timed_out' });
    expect(await streamRow('six-1')).toMatchObject({ status: 'timed_out' });
  });

  it('keeps a nonce for its window: the same nonce again is a replay, stored nowhere', async () => {
    const nonce = {
      value: 'nonce-repo-1',
      until: Date.now() * 1000 + 600_000_000,
      signature: 'sig',
    };
    const first = await store({
      ...event('nonce-1', 'StartStream', '2026-01-06T13:00:00Z'),
      nonce,
    });
    expect(first).toMatchObject({ stored: true });
    const again = await store({ ...event('nonce-1', 'StopStream', '2026-01-06T13:00:05Z'), nonce });
    expect(again).toMatchObject({ stored: false, replayed: true });
    expect(await storedEvents('nonce-1')).toHaveLength(1);
    // A nonce whose window has passed is forgotten when the next one is kept.
    const old = { value: 'nonce-repo-old', until: Date.now() * 1000 - 1_000_000, signature: 'sig' };
    await store({ ...event('nonce-2', 'StartStream', '2026-01-06T13:01:00Z'), nonce: old });
    await store({
      ...event('nonce-3', 'StartStream', '2026-01-06T13:02:00Z'),
      nonce: { ...nonce, value: 'nonce-repo-3' },
    });
    const kept = await handle.database.db
      .selectFrom('stream_callback_nonces')
      .select('nonce')
      .orderBy('nonce')
      .execute();
    expect(kept.map((row) => row.nonce)).toEqual(['nonce-repo-1', 'nonce-repo-3']);
  });
});

describe('stream_events_daily', () => {
  it('counts events per UTC day, event and status', async () => {
    const rows = await handle.database.db
      .selectFrom('stream_events_daily')
      .selectAll()
      .where('account_id', '=', 'ACC1')
      .where('day', '=', '2026-01-05')
      .orderBy('event')
      .orderBy('stream_status')
      .execute();
    const byKey = new Map(rows.map((row) => [`${row.event}/${row.stream_status}`, row]));
    expect(byKey.get('DroppedStream/failed')).toMatchObject({
      events: 1,
      streams: 1,
      calls: 1,
      with_error: 1,
    });
    expect(byKey.get('DroppedStream/disconnected')).toMatchObject({ events: 1, with_error: 0 });
    expect(byKey.get('StartStream/connected')).toMatchObject({ events: 5, streams: 5 });
    expect(byKey.get('StopStream/stopped')).toMatchObject({ events: 2, streams: 2 });
    expect(byKey.get('PlayedStream/null')).toMatchObject({ events: 1 });
  });
});

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

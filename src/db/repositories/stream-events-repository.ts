import type { Kysely } from 'kysely';
import { streamStatusAfter, type StreamStatus } from '../../domain/stream-status.js';
import type { Tables } from '../schema.js';
import { enqueueLookups } from './lookup-queue-repository.js';

/** A verified, parsed status callback, ready to store (the fields of api/stream-callback's event). */
export interface StreamEventInput {
  readonly accountId: string;
  readonly callUuid: string;
  readonly streamId: string;
  /** The Event field. */
  readonly event: string;
  /** ISO text, microseconds kept. */
  readonly eventTime: string;
  readonly error: string | null;
  /** Same callback, same key: a delivery sent again is stored once. */
  readonly deliveryKey: string;
  /** Every field as received. */
  readonly fields: Readonly<Record<string, string>>;
}

export interface StreamEventOutcome {
  /** False when this delivery was already stored (nothing was written). */
  readonly stored: boolean;
  /** The status this event gave the stream (null: it changes none, or it was a duplicate). */
  readonly eventStatus: StreamStatus | null;
  /** The stream's current status after it: that of its latest event by event time. */
  readonly streamStatus: StreamStatus | null;
}

/** Who queues the call in call_stream_refs. */
export const STREAM_EVENT_REQUESTER = 'stream-callback';

/**
 * Stores one status callback, idempotently per delivery, in the caller's transaction: the event
 * in stream_events; the stream's current status in its call_streams row (the latest event by
 * event time wins, so a retried old delivery cannot undo a newer status; a row stored later
 * takes it from the trigger of migration 0005); and the call queued in call_stream_refs, so the
 * next lookup reads the stream's final billing.
 */
export async function insertStreamEvent(
  trx: Kysely<Tables>,
  input: StreamEventInput,
): Promise<StreamEventOutcome> {
  const connectedBefore =
    input.event === 'DroppedStream' &&
    (await trx
      .selectFrom('stream_events')
      .select('id')
      .where('account_id', '=', input.accountId)
      .where('stream_id', '=', input.streamId)
      .where('event', '=', 'StartStream')
      .where('event_time', '<=', input.eventTime)
      .limit(1)
      .executeTakeFirst()) !== undefined;
  const eventStatus = streamStatusAfter(input.event, connectedBefore);

  const inserted = await trx
    .insertInto('stream_events')
    .values({
      account_id: input.accountId,
      call_uuid: input.callUuid,
      stream_id: input.streamId,
      event: input.event,
      event_time: input.eventTime,
      stream_status: eventStatus,
      error: input.error,
      delivery_key: input.deliveryKey,
      raw: JSON.stringify(input.fields),
    })
    .onConflict((conflict) => conflict.columns(['account_id', 'delivery_key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted === undefined) {
    const current = await findStreamStatus(trx, input.accountId, input.streamId);
    return { stored: false, eventStatus: null, streamStatus: current };
  }

  const latest = trx
    .selectFrom('stream_events')
    .where('account_id', '=', input.accountId)
    .where('stream_id', '=', input.streamId)
    .where('stream_status', 'is not', null)
    .orderBy('event_time', 'desc')
    .orderBy('id', 'desc')
    .limit(1);
  await trx
    .updateTable('call_streams')
    .set({
      status: latest.select('stream_status'),
      status_at: latest.select('event_time'),
    })
    .where('account_id', '=', input.accountId)
    .where('stream_id', '=', input.streamId)
    .execute();

  await enqueueLookups(
    trx,
    'call_stream_refs',
    input.accountId,
    [input.callUuid],
    STREAM_EVENT_REQUESTER,
    {
      retry: true,
    },
  );
  return {
    stored: true,
    eventStatus,
    streamStatus: await findStreamStatus(trx, input.accountId, input.streamId),
  };
}

/** The status of a stream's latest event that sets one; null when none does. */
export async function findStreamStatus(
  db: Kysely<Tables>,
  accountId: string,
  streamId: string,
): Promise<StreamStatus | null> {
  const row = await db
    .selectFrom('stream_events')
    .select('stream_status')
    .where('account_id', '=', accountId)
    .where('stream_id', '=', streamId)
    .where('stream_status', 'is not', null)
    .orderBy('event_time', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.stream_status ?? null;
}

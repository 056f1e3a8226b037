import { sql, type Kysely } from 'kysely';
import { streamStatusAfter, type StreamStatus } from '../../domain/stream-status.js';
import { formatIsoMicros, type EpochMicros } from '../../util/micros.js';
import type { Tables } from '../schema.js';
import { enqueueLookups, CALL_STREAM_REFS } from './lookup-queue-repository.js';

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
  /** Every field as received (U+0000 escaped). */
  readonly fields: Readonly<Record<string, string>>;
  /** Whether a field carried U+0000 and is stored escaped. Default false. */
  readonly nulEscaped?: boolean;
  /**
   * The callback's nonce, kept until `until` (epoch microseconds): stored with the event, and the
   * event is refused (`replayed`) when the nonce is kept already. Absent: no nonce is kept.
   */
  readonly nonce?: {
    readonly value: string;
    readonly until: EpochMicros;
    readonly signature: string;
  };
}

export interface StreamEventOutcome {
  /** False when this delivery was already stored, or refused as a replay (nothing was written). */
  readonly stored: boolean;
  /** True when the nonce was accepted before (here or at another telesync): nothing was written. */
  readonly replayed?: boolean;
  /** The status this event gave the stream (null: it changes none, or it was a duplicate). */
  readonly eventStatus: StreamStatus | null;
  /** The stream's current status after it: that of its latest event by event time. */
  readonly streamStatus: StreamStatus | null;
}

/** Who queues the call in call_stream_refs. */
export const STREAM_EVENT_REQUESTER = 'stream-callback';

// Of two events at the same time, the later state of a stream's life wins (domain streamStatusRank).
const STATUS_RANK = sql<number>`CASE stream_status WHEN 'started' THEN 0 WHEN 'connected' THEN 1 ELSE 2 END`;

/**
 * Stores one status callback, idempotently per delivery, in the caller's transaction: its nonce
 * (refused as a replay when kept already; nonces past their window are deleted first); the event
 * in stream_events; the stream's current status in its call_streams row (the latest event by
 * event time wins, so a late delivery of an older event cannot undo a newer status, and a late
 * StartStream turns an earlier-stored DroppedStream after it from failed into disconnected; a row
 * stored later takes it from the trigger); and the call queued in call_stream_refs, so the next
 * lookup reads the stream's final billing.
 */
export async function insertStreamEvent(
  trx: Kysely<Tables>,
  input: StreamEventInput,
): Promise<StreamEventOutcome> {
  if (input.nonce !== undefined && !(await keepNonce(trx, input.accountId, input.nonce)))
    return {
      stored: false,
      replayed: true,
      eventStatus: null,
      streamStatus: await findStreamStatus(trx, input.accountId, input.streamId),
    };

  const connectedBefore =
    (await trx
      .selectFrom('stream_events')
      .select('id')
      .where('account_id', '=', input.accountId)
      .where('stream_id', '=', input.streamId)
      .where('stream_status', '=', 'connected')
      .where('event_time', '<=', input.eventTime)
      .limit(1)
      .executeTakeFirst()) !== undefined;
  const eventStatus = streamStatusAfter(input.event, connectedBefore, input.fields);

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
      nul_escaped: input.nulEscaped ?? false,
    })
    .onConflict((conflict) => conflict.columns(['account_id', 'delivery_key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted === undefined) {
    const current = await findStreamStatus(trx, input.accountId, input.streamId);
    return { stored: false, eventStatus: null, streamStatus: current };
  }

  if (eventStatus === 'connected')
    // A drop stored before this (late) start, and at or after it, was a disconnection.
    await trx
      .updateTable('stream_events')
      .set({ stream_status: 'disconnected' })
      .where('account_id', '=', input.accountId)
      .where('stream_id', '=', input.streamId)
      .where('stream_status', '=', 'failed')
      .where('event', '=', 'DroppedStream')
      .where('event_time', '>=', input.eventTime)
      .execute();

  const latest = latestStatusEvent(trx, input.accountId, input.streamId);
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
    CALL_STREAM_REFS,
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

/**
 * Keeps a nonce for its window; false when it is kept already (a replay). Nonces whose window has
 * passed are deleted first (an index range, usually empty), so the table holds one window.
 */
async function keepNonce(
  trx: Kysely<Tables>,
  accountId: string,
  nonce: NonNullable<StreamEventInput['nonce']>,
): Promise<boolean> {
  await trx
    .deleteFrom('stream_callback_nonces')
    .where('accepted_until', '<', sql<string>`now()`)
    .execute();
  const kept = await trx
    .insertInto('stream_callback_nonces')
    .values({
      nonce: nonce.value,
      account_id: accountId,
      signature: nonce.signature,
      accepted_until: formatIsoMicros(nonce.until),
    })
    .onConflict((conflict) => conflict.column('nonce').doNothing())
    .returning('nonce')
    .executeTakeFirst();
  return kept !== undefined;
}

function latestStatusEvent(db: Kysely<Tables>, accountId: string, streamId: string) {
  return db
    .selectFrom('stream_events')
    .where('account_id', '=', accountId)
    .where('stream_id', '=', streamId)
    .where('stream_status', 'is not', null)
    .orderBy('event_time', 'desc')
    .orderBy(STATUS_RANK, 'desc')
    .orderBy('id', 'desc')
    .limit(1);
}

/** The status of a stream's latest event that sets one; null when none does. */
export async function findStreamStatus(
  db: Kysely<Tables>,
  accountId: string,
  streamId: string,
): Promise<StreamStatus | null> {
  const row = await latestStatusEvent(db, accountId, streamId)
    .select('stream_status')
    .executeTakeFirst();
  return row?.stream_status ?? null;
}

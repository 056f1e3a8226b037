import { STREAM_CALLBACK_FIELDS, type StreamCallbackEventName } from '../../api/stream-callback.js';
import { formatServiceTime } from '../../util/micros.js';
import type { LiveStream } from '../state/live-streams.js';

/**
 * The fields of a stream's status callback, as the service sends them (and as telesync's
 * parseStreamCallback reads them): Event, StreamID, CallUUID, Timestamp, and Error when the stream
 * failed or was dropped. Pure.
 */

/** An occasion that is called back: connected, or one of the endings. */
export type CallbackOccasion = 'connected' | 'stopped' | 'timed-out' | 'failed' | 'disconnected';

/** The Event each occasion is reported with (StopStream for a timeout too, as the service does). */
export const CALLBACK_EVENT_OF: Readonly<Record<CallbackOccasion, StreamCallbackEventName>> = {
  connected: 'StartStream',
  stopped: 'StopStream',
  'timed-out': 'StopStream',
  failed: 'DroppedStream',
  disconnected: 'DroppedStream',
};

/**
 * The callback fields of `stream` at `occasion`, which it must have reached (connectedMicros set
 * for `connected`, endMicros for the endings). The Timestamp is the occasion's time, so every
 * retry of one callback carries the same fields; it has the service's record form with
 * microseconds, `2026-01-05 10:00:00.123456+00:00`.
 */
export function buildStreamCallbackFields(
  stream: LiveStream,
  occasion: CallbackOccasion,
): Record<string, string> {
  const atMicros =
    occasion === 'connected'
      ? (stream.connectedMicros ?? stream.startMicros)
      : (stream.endMicros ?? stream.startMicros);
  const fields: Record<string, string> = {
    [STREAM_CALLBACK_FIELDS.event]: CALLBACK_EVENT_OF[occasion],
    [STREAM_CALLBACK_FIELDS.streamId]: stream.streamId,
    [STREAM_CALLBACK_FIELDS.callUuid]: stream.callUuid,
    [STREAM_CALLBACK_FIELDS.timestamp]: formatServiceTime(atMicros, 0, true),
  };
  if (occasion === 'failed' || occasion === 'disconnected')
    fields[STREAM_CALLBACK_FIELDS.error] =
      stream.error ??
      (occasion === 'failed'
        ? 'the stream could not connect to its service_url'
        : 'the stream was disconnected');
  return fields;
}

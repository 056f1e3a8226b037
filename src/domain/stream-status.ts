/**
 * The life of an audio stream as telesync records it (spec sections 3 and 6): what a stream's row
 * in call_streams says after each status callback. The service's callbacks name three occasions
 * (StartStream, StopStream, DroppedStream); the spec's five states are read from them:
 *
 * - StartStream: `connected` (audio begins);
 * - StopStream: `stopped`, whether stopped on request or by `stream_timeout` (the service sends the
 *   same event for both);
 * - DroppedStream: `failed` when the stream never connected, `disconnected` when it had.
 *
 * Other events (PlayedStream, ClearedAudio…) are stored but leave the status as it was.
 */
export const STREAM_STATUSES = ['connected', 'stopped', 'failed', 'disconnected'] as const;
export type StreamStatus = (typeof STREAM_STATUSES)[number];

/**
 * The status a stream has after `event`, given whether a StartStream of it was recorded before;
 * null when the event does not change the status. Pure.
 */
export function streamStatusAfter(event: string, connectedBefore: boolean): StreamStatus | null {
  switch (event) {
    case 'StartStream':
      return 'connected';
    case 'StopStream':
      return 'stopped';
    case 'DroppedStream':
      return connectedBefore ? 'disconnected' : 'failed';
    default:
      return null;
  }
}

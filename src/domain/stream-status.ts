/**
 * The life of an audio stream as telesync records it (spec section 3 names six states: started,
 * connected, stopped, timed out, failed, disconnected): what a stream's row in call_streams says
 * after each status callback. The service's documented callbacks name three events; the states
 * are read from them, and from a `Status` field when a callback carries one:
 *
 * - a `Status` field naming one of the six states (any case; spaces, `-` and `_` alike) sets it;
 * - StartStream: `connected` (audio begins);
 * - StopStream: `timed_out` when its `Error` or `Reason` says stream_timeout / timed out,
 *   `stopped` otherwise;
 * - DroppedStream: `failed` when the stream never connected, `disconnected` when it had.
 *
 * Other events (PlayedStream, ClearedAudio…) are stored but leave the status as it was.
 */
export const STREAM_STATUSES = [
  'started',
  'connected',
  'stopped',
  'timed_out',
  'failed',
  'disconnected',
] as const;
export type StreamStatus = (typeof STREAM_STATUSES)[number];

/**
 * Where a state falls in a stream's life: of two events at the same time, the later state wins
 * (a StartStream and a DroppedStream of the same second leave the stream disconnected).
 */
export function streamStatusRank(status: StreamStatus): number {
  return status === 'started' ? 0 : status === 'connected' ? 1 : 2;
}

const TIMEOUT_TEXT = /stream[_ ]?timeout|timed?[_ -]?out/i;

/**
 * The status a stream has after `event`, given whether it was connected before (a StartStream of
 * it recorded at or before the event) and the callback's other fields; null when the event does
 * not change the status. Pure.
 */
export function streamStatusAfter(
  event: string,
  connectedBefore: boolean,
  fields: Readonly<Record<string, string>> = {},
): StreamStatus | null {
  const named = statusNamed(fields['Status']);
  if (named !== undefined) return named === 'failed' && connectedBefore ? 'disconnected' : named;
  switch (event) {
    case 'StartStream':
      return 'connected';
    case 'StopStream':
      return TIMEOUT_TEXT.test(fields['Error'] ?? '') || TIMEOUT_TEXT.test(fields['Reason'] ?? '')
        ? 'timed_out'
        : 'stopped';
    case 'DroppedStream':
      return connectedBefore ? 'disconnected' : 'failed';
    default:
      return null;
  }
}

function statusNamed(text: string | undefined): StreamStatus | undefined {
  if (text === undefined) return undefined;
  const key = text
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '_');
  return (STREAM_STATUSES as readonly string[]).includes(key) ? (key as StreamStatus) : undefined;
}

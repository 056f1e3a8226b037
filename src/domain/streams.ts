/** The streams telesync syncs, by the names the command line and sync_runs use. */
export const STREAM_NAMES = [
  'trunk_calls',
  'endpoints',
  'caller_ids',
  'messages',
  'powerpacks',
  'call_streams',
] as const;

export type StreamName = (typeof STREAM_NAMES)[number];

export function isStreamName(name: string): name is StreamName {
  return (STREAM_NAMES as readonly string[]).includes(name);
}

/** What each stream holds, for --help and status. */
export const STREAM_DESCRIPTIONS: Readonly<Record<StreamName, string>> = {
  trunk_calls: 'completed trunk call records, by end_time window (incremental)',
  endpoints: 'SIP endpoints (full snapshot)',
  caller_ids: 'verified caller IDs (full snapshot)',
  messages: 'message detail records queued in message_refs',
  powerpacks: 'sender packs referenced by stored messages',
  call_streams: 'audio-stream records of the calls queued in call_stream_refs',
};

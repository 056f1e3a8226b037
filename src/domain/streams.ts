/**
 * The streams telesync syncs, by the names the command line and sync_runs use: the plain list the
 * inner layers (jobs, config) need. Each stream's definition is in src/sync/streams/ and the
 * registry (src/sync/stream-registry.ts) lists them in this order.
 */
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

/**
 * The name of a stream telesync ships with, as the command line, the schedule, sync_runs and
 * sync_state use it. The list of streams is the registry (src/sync/stream-registry.ts), which
 * composition roots hand down; a stream a root was given besides them (a test's) has its name
 * by a cast.
 */
export type StreamName =
  'trunk_calls' | 'endpoints' | 'caller_ids' | 'messages' | 'powerpacks' | 'call_streams';

import type { StreamName } from '../domain/streams.js';
import type { StreamDefinition } from './stream-definition.js';
import { CALL_STREAMS_STREAM } from './streams/call-streams.js';
import { CALLER_IDS_STREAM } from './streams/caller-ids.js';
import { ENDPOINTS_STREAM } from './streams/endpoints.js';
import { MESSAGES_STREAM } from './streams/messages.js';
import { POWERPACKS_STREAM } from './streams/powerpacks.js';
import { TRUNK_CALLS_STREAM } from './streams/trunk-calls.js';

/**
 * Every stream telesync syncs, in the order `sync` and `schedule --once` run them (lookups after
 * the streams whose rows they follow). Everything that lists, runs, schedules, shows or resets
 * streams reads this list (or one a composition root was given in its place).
 */
export const STREAMS: readonly StreamDefinition[] = [
  TRUNK_CALLS_STREAM,
  ENDPOINTS_STREAM,
  CALLER_IDS_STREAM,
  MESSAGES_STREAM,
  POWERPACKS_STREAM,
  CALL_STREAMS_STREAM,
];

/** The definition of `name` in `streams`; undefined when there is none. */
export function findStream(
  streams: readonly StreamDefinition[],
  name: string,
): StreamDefinition | undefined {
  return streams.find((stream) => stream.name === name);
}

/** The definition of a stream telesync ships with. */
export function streamDefinition(name: StreamName): StreamDefinition {
  const stream = findStream(STREAMS, name);
  if (stream === undefined) throw new Error(`no stream definition for ${name}`);
  return stream;
}

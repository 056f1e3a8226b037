import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { STREAMS } from '../../src/sync/stream-registry.js';

describe('the stream registry', () => {
  it('lists one definition for each stream, in the order sync runs them', () => {
    expect(STREAMS.map((stream) => stream.name)).toEqual([
      'trunk_calls',
      'endpoints',
      'caller_ids',
      'messages',
      'powerpacks',
      'call_streams',
    ]);
  });

  it("gives each stream's default schedule to the configuration", () => {
    expect(loadConfig({}).schedule.crons).toEqual({
      trunk_calls: '*/15 * * * *',
      endpoints: '0 * * * *',
      caller_ids: '0 * * * *',
      messages: '*/5 * * * *',
      powerpacks: '*/5 * * * *',
      call_streams: '*/5 * * * *',
    });
  });
});

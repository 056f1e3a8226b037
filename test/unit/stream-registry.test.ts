import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS } from '../../src/config/config-defaults.js';
import { STREAM_NAMES } from '../../src/domain/streams.js';
import { STREAMS } from '../../src/sync/stream-registry.js';

describe('the stream registry', () => {
  it('lists one definition for each stream name, in the order the names are given', () => {
    expect(STREAMS.map((stream) => stream.name)).toEqual([...STREAM_NAMES]);
  });

  it("gives each stream's default schedule to the configuration", () => {
    expect(CONFIG_DEFAULTS.crons).toEqual({
      trunk_calls: '*/15 * * * *',
      endpoints: '0 * * * *',
      caller_ids: '0 * * * *',
      messages: '*/5 * * * *',
      powerpacks: '*/5 * * * *',
      call_streams: '*/5 * * * *',
    });
  });
});

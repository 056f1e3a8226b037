import { describe, expect, it } from 'vitest';
import { findStartedStream } from '../../src/api/find-started-stream.js';
import type { ReceivedRecord } from '../../src/api/received-json.js';
import { toEpochMicros } from '../../src/util/micros.js';

const URL_SENT = 'wss://media.example.com/audio';
const SENT_AT = toEpochMicros('2026-11-28 12:00:00+00:00');

function record(fields: Record<string, unknown>): ReceivedRecord {
  const text = JSON.stringify(fields);
  return { bytes: Buffer.from(text), value: fields, text };
}

function idsOf(records: readonly ReceivedRecord[]): string[] {
  return findStartedStream(records, { serviceUrl: URL_SENT, sentAtMicros: SENT_AT }).candidates.map(
    (candidate) => candidate.streamId,
  );
}

describe('findStartedStream', () => {
  it('finds the stream to the URL sent, created after the request', () => {
    expect(
      idsOf([
        record({
          stream_id: 'old',
          service_url: URL_SENT,
          created_at: '2026-11-28 11:40:00.000000+00:00',
        }),
        record({
          stream_id: 'other',
          service_url: 'wss://elsewhere.example.com/a',
          created_at: '2026-11-28 12:00:01.000000+00:00',
        }),
        record({
          stream_id: 'ours',
          service_url: URL_SENT,
          created_at: '2026-11-28 17:30:01.250000+05:30',
        }),
      ]),
    ).toEqual(['ours']);
  });

  it("allows for the service's clock running a little behind", () => {
    expect(
      idsOf([
        record({
          stream_id: 'ours',
          service_url: URL_SENT,
          created_at: '2026-11-28 11:59:00.000000+00:00',
        }),
      ]),
    ).toEqual(['ours']);
  });

  it('reads the shorter shape: start_time, or no time at all while the stream has not ended', () => {
    expect(
      idsOf([
        record({
          stream_id: 'started',
          service_url: URL_SENT,
          status: 'in-progress',
          start_time: '2026-11-28 12:00:02+00:00',
          end_time: null,
        }),
        record({
          stream_id: 'pending',
          service_url: URL_SENT,
          status: 'in-progress',
          start_time: null,
          end_time: null,
        }),
        record({
          stream_id: 'ended-long-ago',
          service_url: URL_SENT,
          start_time: null,
          end_time: '2026-11-01 10:00:00+00:00',
        }),
      ]),
    ).toEqual(['started', 'pending']);
  });

  it('finds nothing in records that are not objects or carry no stream_id', () => {
    expect(
      idsOf([
        { bytes: Buffer.from('x'), value: undefined, problem: 'not JSON' },
        record({ service_url: URL_SENT, created_at: '2026-11-28 12:00:01.000000+00:00' }),
      ]),
    ).toEqual([]);
  });
});

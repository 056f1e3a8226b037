import { describe, expect, it } from 'vitest';
import { checkStartStreamParams, type StartStreamParams } from '../../src/api/stream-rules.js';
import { buildStreamCallbackFields } from '../../src/simulator/media/stream-callback-fields.js';
import { LiveStreamRegistry, statusAt } from '../../src/simulator/state/live-streams.js';
import { MICROS_PER_SECOND, toEpochMicros } from '../../src/util/micros.js';

const CALL = '11111111-1111-4111-8111-111111111111';
const T0 = toEpochMicros('2026-01-05T10:00:00.250000Z');
const S = MICROS_PER_SECOND;

function registry(): LiveStreamRegistry {
  return new LiveStreamRegistry('MAUNIT', [CALL], 42);
}

function params(extra: Partial<StartStreamParams> = {}) {
  const checked = checkStartStreamParams({ service_url: 'wss://media.example.com/a', ...extra });
  if (!checked.ok) throw new Error('bad params');
  return checked.params;
}

function started(streams: LiveStreamRegistry, extra: Partial<StartStreamParams> = {}) {
  const result = streams.start(CALL, params(extra), T0);
  if (!result.ok) throw new Error(result.reason);
  return result.stream;
}

describe('the life of a live stream', () => {
  it('runs started → connected → stopped, billed from start to stop rounded up to seconds', () => {
    const streams = registry();
    const stream = started(streams, { stream_timeout: 600 });
    expect(streams.find(stream.streamId.toUpperCase())).toBe(stream);
    expect(streams.markConnected(stream, T0 + S / 2)).toBe(true);
    expect(streams.records(CALL, T0 + S)![0]).toMatchObject({ end_time: null, bill_duration: 0 });
    expect(streams.end(stream, 'stopped', T0 + 61 * S + 1)).toBe('stopped');
    expect(streams.records(CALL, T0 + 100 * S)![0]).toMatchObject({
      start_time: '2026-01-05 10:00:00+00:00',
      end_time: '2026-01-05 10:01:02+00:00',
      bill_duration: 62,
      rounded_bill_duration: 120,
      billed_amount: '0.00600',
    });
    // Ended once: a second ending changes nothing.
    expect(streams.end(stream, 'disconnected', T0 + 70 * S, 'late')).toBeUndefined();
    expect(stream.status).toBe('stopped');
    expect(stream.error).toBeUndefined();
  });

  it('frees the URL once a stream has ended, and refuses a duplicate while it runs', () => {
    const streams = registry();
    const first = started(streams);
    expect(streams.start(CALL, params(), T0 + S)).toEqual({ ok: false, reason: 'duplicate' });
    streams.end(first, 'failed', T0 + S, 'refused');
    expect(streams.start(CALL, params(), T0 + 2 * S).ok).toBe(true);
  });

  it('records a stream that never connected as failed, with its reason and nothing billed', () => {
    const streams = registry();
    const stream = started(streams);
    expect(streams.end(stream, 'disconnected', T0 + 3 * S, 'refused')).toBe('failed');
    expect(stream.error).toBe('refused');
    expect(streams.markConnected(stream, T0 + 4 * S)).toBe(false);
    expect(streams.records(CALL, T0 + 5 * S)![0]).toMatchObject({
      end_time: '2026-01-05 10:00:00+00:00',
      bill_duration: 0,
      rounded_bill_duration: 0,
      billed_amount: '0.00000',
    });
  });

  it('counts as timed out once the clock passes stream_timeout, whatever ends it later', () => {
    const streams = registry();
    const stream = started(streams, { stream_timeout: 30 });
    streams.markConnected(stream, T0 + S);
    expect(statusAt(stream, T0 + 30 * S - 1)).toBe('connected');
    expect(statusAt(stream, T0 + 30 * S)).toBe('timed-out');
    expect(streams.end(stream, 'stopped', T0 + 45 * S)).toBe('timed-out');
    expect(stream.endMicros).toBe(T0 + 30 * S);
    expect(streams.records(CALL, T0 + 50 * S)![0]).toMatchObject({ bill_duration: 30 });
  });
});

describe('status callback fields', () => {
  it('names the occasion, the stream, the call and its time; an Error only for dropped streams', () => {
    const streams = registry();
    const stream = started(streams);
    streams.markConnected(stream, T0 + 1_500_000);
    expect(buildStreamCallbackFields(stream, 'connected')).toEqual({
      Event: 'StartStream',
      StreamID: stream.streamId,
      CallUUID: CALL,
      Timestamp: '2026-01-05 10:00:01.750000+00:00',
    });
    streams.end(stream, 'disconnected', T0 + 9 * S, 'the WebSocket service closed the connection');
    expect(buildStreamCallbackFields(stream, 'disconnected')).toEqual({
      Event: 'DroppedStream',
      StreamID: stream.streamId,
      CallUUID: CALL,
      Timestamp: '2026-01-05 10:00:09.250000+00:00',
      Error: 'the WebSocket service closed the connection',
    });
    const others = registry();
    const other = started(others);
    others.end(other, 'timed-out', T0);
    expect(buildStreamCallbackFields(other, 'timed-out').Event).toBe('StopStream');
    expect(buildStreamCallbackFields(other, 'stopped')).not.toHaveProperty('Error');
  });
});

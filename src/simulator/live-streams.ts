import type { ResolvedStartStreamParams } from '../api/stream-rules.js';
import type { StreamRecordWire } from '../api/wire-types.js';
import { formatServiceTime, MICROS_PER_SECOND, type EpochMicros } from '../util/micros.js';
import { formatDecimalUnits, roundUpToMinute } from './decimal-text.js';
import { Rng } from './prng.js';
import { STREAM_RATE_UNITS } from './trunk-call-data.js';

/**
 * The streams started on one account's live calls. A stream runs from its start until its
 * stream_timeout (live calls never end in the simulator); while it runs its record has end_time
 * null and zero durations (assumption A23), and a second stream to the same service_url on the same
 * call is refused (spec 4.5 and 7). The clock is passed in.
 */
export class LiveStreamRegistry {
  private readonly streams = new Map<string, LiveStream[]>();
  private readonly ids: Rng;

  /**
   * @param authId the account, written into each record
   * @param liveCallUuids the calls in progress; streams start on these only
   * @param seed draws the stream_ids
   */
  constructor(
    private readonly authId: string,
    liveCallUuids: readonly string[],
    seed: number,
  ) {
    for (const uuid of liveCallUuids) this.streams.set(uuid, []);
    this.ids = new Rng(seed);
  }

  /** Whether the call is in progress. */
  isLive(callUuid: string): boolean {
    return this.streams.has(callUuid.toLowerCase());
  }

  /**
   * Starts a stream, or says why not: `not-live` (no such call in progress) or `duplicate` (a
   * stream to that URL is still running on the call).
   */
  start(
    callUuid: string,
    params: ResolvedStartStreamParams,
    nowMicros: EpochMicros,
  ): { ok: true; stream: LiveStream } | { ok: false; reason: 'not-live' | 'duplicate' } {
    const list = this.streams.get(callUuid.toLowerCase());
    if (list === undefined) return { ok: false, reason: 'not-live' };
    if (
      list.some(
        (stream) => stream.serviceUrl === params.service_url && isRunning(stream, nowMicros),
      )
    )
      return { ok: false, reason: 'duplicate' };
    const stream: LiveStream = {
      streamId: this.ids.uuid(),
      callUuid: callUuid.toLowerCase(),
      serviceUrl: params.service_url,
      params,
      startMicros: nowMicros,
    };
    list.push(stream);
    return { ok: true, stream };
  }

  /** The stream records of a live call as of `nowMicros`, oldest first; undefined when not live. */
  records(callUuid: string, nowMicros: EpochMicros): StreamRecordWire[] | undefined {
    return this.streams
      .get(callUuid.toLowerCase())
      ?.map((stream) => liveStreamRecord(this.authId, stream, nowMicros));
  }
}

/** A stream started on a live call. */
export interface LiveStream {
  readonly streamId: string;
  readonly callUuid: string;
  readonly serviceUrl: string;
  readonly params: ResolvedStartStreamParams;
  readonly startMicros: EpochMicros;
}

function isRunning(stream: LiveStream, nowMicros: EpochMicros): boolean {
  return nowMicros < stream.startMicros + stream.params.stream_timeout * MICROS_PER_SECOND;
}

/** The record of a live stream: running (end_time null, A23) or stopped by its timeout. */
export function liveStreamRecord(
  authId: string,
  stream: LiveStream,
  nowMicros: EpochMicros,
): StreamRecordWire {
  const running = isRunning(stream, nowMicros);
  const startSeconds = Math.floor(stream.startMicros / MICROS_PER_SECOND);
  const duration = running ? 0 : stream.params.stream_timeout;
  return {
    stream_id: stream.streamId,
    call_uuid: stream.callUuid,
    service_auth_id: authId,
    resource_uri: `/v1/Account/${authId}/Call/${stream.callUuid}/Stream/${stream.streamId}/`,
    service_url: stream.serviceUrl,
    audio_track: stream.params.audio_track,
    bidirectional: stream.params.bidirectional,
    created_at: formatServiceTime(stream.startMicros, 0, true),
    start_time: formatServiceTime(startSeconds * MICROS_PER_SECOND, 0, false),
    end_time: running
      ? null
      : formatServiceTime((startSeconds + duration) * MICROS_PER_SECOND, 0, false),
    bill_duration: duration,
    rounded_bill_duration: roundUpToMinute(duration),
    billed_amount: running
      ? '0'
      : formatDecimalUnits((STREAM_RATE_UNITS * roundUpToMinute(duration)) / 60),
  };
}

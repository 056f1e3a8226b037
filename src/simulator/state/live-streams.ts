import type { ResolvedStartStreamParams } from '../../api/stream-rules.js';
import type { StreamRecordWire } from '../../api/wire-types.js';
import { formatServiceTime, MICROS_PER_SECOND, type EpochMicros } from '../../util/micros.js';
import { formatDecimalUnits, roundUpToMinute } from '../data/decimal-text.js';
import { Rng } from '../data/prng.js';
import { STREAM_RATE_UNITS } from '../data/trunk-call-data.js';

/**
 * The streams started on one account's live calls, and where each is in its life (spec 3 and 6):
 * started → connected (audio begins) → stopped | timed out | disconnected, or started → failed
 * (never connected). Live calls never end in the simulator. A stream runs at most its
 * stream_timeout: once the clock passes it the stream has timed out, whether or not the timer that
 * acts on it has fired yet (so a test's hand-moved clock is enough). While it runs its record has
 * end_time null and zero durations (assumption A23); a second stream to the same service_url on
 * the same call is refused while one runs (spec 4.5 and 7). This file only records the life; the
 * sockets, timers and callbacks that make it happen live in ../media/. The clock is passed in.
 */

/** Where a stream is in its life. */
export type LiveStreamStatus =
  'started' | 'connected' | 'stopped' | 'timed-out' | 'failed' | 'disconnected';

/** How a stream can end. */
export type LiveStreamEnding = Exclude<LiveStreamStatus, 'started' | 'connected'>;

/** A stream started on a live call. Its life is changed through the registry only. */
export interface LiveStream {
  readonly streamId: string;
  readonly callUuid: string;
  readonly serviceUrl: string;
  readonly params: ResolvedStartStreamParams;
  readonly startMicros: EpochMicros;
  /** As last recorded; read it through statusAt (a timeout the clock has passed counts). */
  status: LiveStreamStatus;
  connectedMicros: EpochMicros | undefined;
  endMicros: EpochMicros | undefined;
  /** Why it failed or was disconnected. */
  error: string | undefined;
}

export class LiveStreamRegistry {
  private readonly streams = new Map<string, LiveStream[]>();
  private readonly byId = new Map<string, LiveStream>();
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
      status: 'started',
      connectedMicros: undefined,
      endMicros: undefined,
      error: undefined,
    };
    list.push(stream);
    this.byId.set(stream.streamId, stream);
    return { ok: true, stream };
  }

  /** A stream of this account by its stream_id. */
  find(streamId: string): LiveStream | undefined {
    return this.byId.get(streamId.toLowerCase());
  }

  /** Every stream started on this account, oldest first. */
  all(): LiveStream[] {
    return [...this.byId.values()];
  }

  /**
   * Records that the stream's WebSocket is open and audio begins. False (nothing changes) when
   * the stream is no longer waiting to connect: ended meanwhile, or timed out by the clock.
   */
  markConnected(stream: LiveStream, nowMicros: EpochMicros): boolean {
    if (statusAt(stream, nowMicros) !== 'started') return false;
    stream.status = 'connected';
    stream.connectedMicros = nowMicros;
    return true;
  }

  /**
   * Ends a stream that is still running and returns how it ended; undefined when it had already
   * ended. Once the clock is past the stream's timeout, any ending is recorded as `timed-out`, at
   * the timeout: that is what happened first. A `disconnected` ending of a stream that never
   * connected is recorded as `failed`.
   */
  end(
    stream: LiveStream,
    ending: LiveStreamEnding,
    nowMicros: EpochMicros,
    error?: string,
  ): LiveStreamEnding | undefined {
    if (stream.endMicros !== undefined) return undefined;
    const deadline = timeoutMicros(stream);
    if (ending === 'timed-out' || nowMicros >= deadline) {
      stream.status = 'timed-out';
      stream.endMicros = deadline;
      return stream.status;
    }
    stream.status = ending === 'disconnected' && stream.status === 'started' ? 'failed' : ending;
    stream.endMicros = nowMicros;
    if (stream.status === 'failed' || stream.status === 'disconnected') stream.error = error;
    return stream.status;
  }

  /** The stream records of a live call as of `nowMicros`, oldest first; undefined when not live. */
  records(callUuid: string, nowMicros: EpochMicros): StreamRecordWire[] | undefined {
    return this.streams
      .get(callUuid.toLowerCase())
      ?.map((stream) => liveStreamRecord(this.authId, stream, nowMicros));
  }
}

/** When the stream's stream_timeout stops it, epoch microseconds. */
export function timeoutMicros(stream: LiveStream): EpochMicros {
  return stream.startMicros + stream.params.stream_timeout * MICROS_PER_SECOND;
}

/** The stream's status as of `nowMicros`: as recorded, or `timed-out` once the clock passed it. */
export function statusAt(stream: LiveStream, nowMicros: EpochMicros): LiveStreamStatus {
  if (stream.endMicros === undefined && nowMicros >= timeoutMicros(stream)) return 'timed-out';
  return stream.status;
}

/** Whether the stream has not ended as of `nowMicros`. */
export function isRunning(stream: LiveStream, nowMicros: EpochMicros): boolean {
  const status = statusAt(stream, nowMicros);
  return status === 'started' || status === 'connected';
}

/**
 * The record of a live stream: running (end_time null, A23), or ended and billed from its start
 * to its end in whole seconds rounded up (a stream that failed to connect bills nothing).
 */
export function liveStreamRecord(
  authId: string,
  stream: LiveStream,
  nowMicros: EpochMicros,
): StreamRecordWire {
  const status = statusAt(stream, nowMicros);
  const running = status === 'started' || status === 'connected';
  const startSeconds = Math.floor(stream.startMicros / MICROS_PER_SECOND);
  const endMicros = stream.endMicros ?? timeoutMicros(stream);
  const duration =
    running || status === 'failed'
      ? 0
      : Math.min(
          stream.params.stream_timeout,
          Math.ceil((endMicros - stream.startMicros) / MICROS_PER_SECOND),
        );
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

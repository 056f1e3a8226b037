import type { MediaFormat, MediaTrack } from './stream-audio.js';

/**
 * The JSON text messages the service sends on a stream's WebSocket, as its documentation shows
 * them (docs/assumptions.md, "Media WebSocket"). Builders only: pure.
 */

/** Sent once, first, when the WebSocket opens. */
export interface MediaStartMessage {
  readonly event: 'start';
  readonly sequenceNumber: number;
  readonly start: {
    readonly callId: string;
    readonly streamId: string;
    readonly accountId: string;
    readonly tracks: readonly MediaTrack[];
    readonly mediaFormat: MediaFormat;
  };
  /** The stream's extra_headers text as given; absent when the stream has none. */
  readonly extra_headers?: string;
}

/** One frame of one track's audio. */
export interface MediaChunkMessage {
  readonly event: 'media';
  readonly sequenceNumber: number;
  readonly streamId: string;
  readonly media: {
    readonly track: MediaTrack;
    /** When the frame's audio was captured: epoch milliseconds, as text. */
    readonly timestamp: string;
    /** Counts this track's media messages from 1. */
    readonly chunk: number;
    /** The raw audio of the frame, base64. */
    readonly payload: string;
  };
  readonly extra_headers?: string;
}

/** Confirms that the audio before a `checkpoint` the server sent has been played. */
export interface PlayedStreamMessage {
  readonly event: 'playedStream';
  readonly streamId: string;
  readonly name: string;
}

/** Confirms a `clearAudio` the server sent. */
export interface ClearedAudioMessage {
  readonly event: 'clearedAudio';
  readonly streamId: string;
}

export interface MediaStartInput {
  readonly sequenceNumber: number;
  readonly callUuid: string;
  readonly streamId: string;
  readonly accountId: string;
  readonly tracks: readonly MediaTrack[];
  readonly format: MediaFormat;
  readonly extraHeaders: string | undefined;
}

export function buildMediaStartMessage(input: MediaStartInput): MediaStartMessage {
  return {
    event: 'start',
    sequenceNumber: input.sequenceNumber,
    start: {
      callId: input.callUuid,
      streamId: input.streamId,
      accountId: input.accountId,
      tracks: input.tracks,
      mediaFormat: { encoding: input.format.encoding, sampleRate: input.format.sampleRate },
    },
    ...(input.extraHeaders === undefined ? {} : { extra_headers: input.extraHeaders }),
  };
}

export interface MediaChunkInput {
  readonly sequenceNumber: number;
  readonly streamId: string;
  readonly track: MediaTrack;
  readonly timestampMs: number;
  readonly chunk: number;
  readonly audio: Buffer;
  readonly extraHeaders: string | undefined;
}

export function buildMediaChunkMessage(input: MediaChunkInput): MediaChunkMessage {
  return {
    event: 'media',
    sequenceNumber: input.sequenceNumber,
    streamId: input.streamId,
    media: {
      track: input.track,
      timestamp: String(Math.floor(input.timestampMs)),
      chunk: input.chunk,
      payload: input.audio.toString('base64'),
    },
    ...(input.extraHeaders === undefined ? {} : { extra_headers: input.extraHeaders }),
  };
}

import { WebSocket, type RawData } from 'ws';
import {
  PLAY_AUDIO_EVENT,
  playAudioFormatMismatch,
  validatePlayAudioMessage,
} from '../../api/play-audio.js';
import type { LiveStream } from '../state/live-streams.js';
import {
  buildMediaChunkMessage,
  buildMediaStartMessage,
  type ClearedAudioMessage,
  type PlayedStreamMessage,
} from './media-messages.js';
import {
  generateToneFrame,
  MEDIA_FRAME_MS,
  mediaFormatOf,
  mediaFrameCount,
  mediaTracksOf,
  TRACK_TONE_HZ,
  type MediaFormat,
  type MediaTrack,
} from './stream-audio.js';

/**
 * One stream's WebSocket to its service_url, as the service drives it: connect (verifying TLS,
 * with the extra trusted authorities if any), send `start`, then the audio in 20 ms `media`
 * frames at real-time pace; read what the far side sends (playAudio on a bidirectional stream,
 * checkpoint and clearAudio); tell the owner when the socket opens, fails to open, or is closed
 * by the far side. Closing on request is the owner's (close or drop), and is not reported back.
 */

/** What a connection tells its owner. */
export interface MediaConnectionEvents {
  /** The handshake succeeded (101): the stream is connected. */
  opened(): void;
  /** The socket never opened: refused, TLS error, an answer other than 101, timeout. */
  failed(reason: string): void;
  /** The socket was open and the far side closed it or the connection was lost. */
  lost(reason: string): void;
  /** A `start` or `media` message went out. */
  sent(): void;
  /** A message arrived that is (or should have been) a playAudio, with the verdict. */
  playAudio(outcome: { ok: true; durationMs: number } | { ok: false; reason: string }): void;
}

export interface MediaConnectionOptions {
  readonly stream: LiveStream;
  /** auth_id of the account, sent as start.accountId. */
  readonly accountId: string;
  /** Authorities trusted for wss:// (undefined: the usual ones). */
  readonly ca: readonly (string | Buffer)[] | undefined;
  /** Seconds of audio to stream after `start`. */
  readonly audioSeconds: number;
  /** The simulator's clock in epoch milliseconds, for media timestamps. */
  readonly nowMillis: () => number;
  readonly events: MediaConnectionEvents;
}

/** How long the handshake may take before the connect counts as failed. */
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** How long a closing handshake may take before the socket is cut. */
const CLOSE_GRACE_MS = 2_000;

export class MediaConnection {
  readonly #options: MediaConnectionOptions;
  readonly #socket: WebSocket;
  readonly #format: MediaFormat;
  readonly #tracks: readonly MediaTrack[];
  readonly #closed: Promise<void>;
  #opened = false;
  /** Set once the owner closes it: what follows is not reported. */
  #closing = false;
  #sequence = 0;
  #pacer: NodeJS.Timeout | undefined;
  #graceTimer: NodeJS.Timeout | undefined;

  /** Starts connecting at once. */
  constructor(options: MediaConnectionOptions) {
    this.#options = options;
    const { params } = options.stream;
    this.#format = mediaFormatOf(params.content_type);
    this.#tracks = mediaTracksOf(params.audio_track);
    this.#socket = new WebSocket(options.stream.serviceUrl, {
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      perMessageDeflate: false,
      followRedirects: false,
      headers: { 'User-Agent': 'telesync-simulator' },
      ...(options.ca === undefined ? {} : { ca: [...options.ca] }),
    });
    this.#closed = new Promise((resolve) => this.#socket.once('close', () => resolve()));
    this.#socket.on('open', () => this.#onOpen());
    this.#socket.on('error', (error) => this.#onError(error));
    this.#socket.on('close', (code, reason) => this.#onClose(code, reason.toString('utf8')));
    this.#socket.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
  }

  /** Resolves once the socket is closed, whichever way. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Ends the stream politely: a close frame (1000) with `reason`, cut after a short grace. */
  close(reason: string): void {
    if (this.#closing) return;
    this.#closing = true;
    this.#stopPacing();
    if (this.#socket.readyState !== WebSocket.OPEN) {
      this.#socket.terminate();
      return;
    }
    // Close reasons are limited to 123 bytes.
    this.#socket.close(1000, Buffer.from(reason).subarray(0, 123).toString('utf8'));
    this.#graceTimer = setTimeout(() => this.#socket.terminate(), CLOSE_GRACE_MS);
    this.#graceTimer.unref();
  }

  /** Cuts the connection without a close frame: the far side sees it lost (1006). */
  drop(): void {
    this.#closing = true;
    this.#stopPacing();
    this.#socket.terminate();
  }

  #onOpen(): void {
    if (this.#closing) return;
    this.#opened = true;
    this.#options.events.opened();
    if (this.#closing) return;
    const { stream, accountId } = this.#options;
    this.#send(
      buildMediaStartMessage({
        sequenceNumber: ++this.#sequence,
        callUuid: stream.callUuid,
        streamId: stream.streamId,
        accountId,
        tracks: this.#tracks,
        format: this.#format,
        extraHeaders: stream.params.extra_headers,
      }),
    );
    this.#startPacing();
  }

  /**
   * Sends the frames at real-time pace: each tick sends every frame whose time has come, so a
   * late timer catches up instead of stretching the audio.
   */
  #startPacing(): void {
    const total = mediaFrameCount(this.#options.audioSeconds);
    if (total === 0) return;
    const startedAt = performance.now();
    const startMillis = this.#options.nowMillis();
    const { stream } = this.#options;
    let sent = 0;
    const tick = (): void => {
      const due = Math.min(total, Math.floor((performance.now() - startedAt) / MEDIA_FRAME_MS) + 1);
      for (; sent < due && !this.#closing; sent++) {
        for (const track of this.#tracks) {
          this.#send(
            buildMediaChunkMessage({
              sequenceNumber: ++this.#sequence,
              streamId: stream.streamId,
              track,
              timestampMs: startMillis + sent * MEDIA_FRAME_MS,
              chunk: sent + 1,
              audio: generateToneFrame(this.#format, TRACK_TONE_HZ[track], sent),
              extraHeaders: stream.params.extra_headers,
            }),
          );
        }
      }
      if (sent >= total) this.#stopPacing();
    };
    tick();
    if (sent < total) {
      this.#pacer = setInterval(tick, MEDIA_FRAME_MS);
      this.#pacer.unref();
    }
  }

  #stopPacing(): void {
    if (this.#pacer !== undefined) clearInterval(this.#pacer);
    this.#pacer = undefined;
  }

  #send(message: object): void {
    if (this.#socket.readyState !== WebSocket.OPEN) return;
    this.#socket.send(JSON.stringify(message));
    if ('sequenceNumber' in message) this.#options.events.sent();
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#closing) return;
    const { events, stream } = this.#options;
    if (isBinary) {
      events.playAudio({ ok: false, reason: 'binary messages are not accepted; send JSON text' });
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.isBuffer(data)
        ? data.toString('utf8')
        : Buffer.from(data).toString('utf8');
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      events.playAudio({ ok: false, reason: 'invalid playAudio: the message is not JSON' });
      return;
    }
    const event = isRecord(message) ? message.event : undefined;
    // Control messages of the protocol: acknowledged at once (the simulator plays audio instantly).
    if (event === 'checkpoint' && isRecord(message) && typeof message.name === 'string') {
      const played: PlayedStreamMessage = {
        event: 'playedStream',
        streamId: stream.streamId,
        name: message.name,
      };
      this.#send(played);
      return;
    }
    if (event === 'clearAudio') {
      const cleared: ClearedAudioMessage = { event: 'clearedAudio', streamId: stream.streamId };
      this.#send(cleared);
      return;
    }
    if (!stream.params.bidirectional) {
      events.playAudio({
        ok: false,
        reason: `the stream is not bidirectional: it does not accept ${event === PLAY_AUDIO_EVENT ? 'playAudio' : 'messages'}`,
      });
      return;
    }
    const check = validatePlayAudioMessage(message);
    if (!check.ok) {
      events.playAudio({ ok: false, reason: check.reason });
      return;
    }
    const mismatch = playAudioFormatMismatch(check.message, stream.params.content_type);
    events.playAudio(
      mismatch === undefined
        ? { ok: true, durationMs: check.durationMs }
        : { ok: false, reason: mismatch },
    );
  }

  #onError(error: Error): void {
    // Errors before the socket opened are the connect failing; after, 'close' follows and tells.
    if (this.#opened || this.#closing) return;
    this.#closing = true;
    this.#options.events.failed(describeConnectError(error, this.#options.stream.serviceUrl));
  }

  #onClose(code: number, reason: string): void {
    this.#stopPacing();
    if (this.#graceTimer !== undefined) clearTimeout(this.#graceTimer);
    if (this.#closing) return;
    this.#closing = true;
    if (!this.#opened) {
      this.#options.events.failed(
        `the connection to ${this.#options.stream.serviceUrl} closed before it opened`,
      );
      return;
    }
    this.#options.events.lost(
      code === 1006
        ? 'the connection to the WebSocket service was lost'
        : `the WebSocket service closed the connection (code ${code}${reason === '' ? '' : `: ${reason}`})`,
    );
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A connect failure in words a user can act on. */
function describeConnectError(error: Error, url: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  const unexpected = /^Unexpected server response: (\d+)/.exec(error.message);
  if (unexpected !== null)
    return `the WebSocket service at ${url} answered HTTP ${unexpected[1]} instead of switching protocols (101)`;
  if (code === 'ECONNREFUSED') return `the WebSocket service at ${url} refused the connection`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `the host of ${url} could not be resolved`;
  if (/handshake has timed out/i.test(error.message))
    return `the WebSocket service at ${url} did not complete the handshake in time`;
  return `could not connect to ${url}: ${error.message}${code === undefined ? '' : ` (${code})`}`;
}

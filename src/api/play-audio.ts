/**
 * The `playAudio` message a bidirectional stream's WebSocket sends to the service (spec 4.5),
 * for users' media servers (build) and for the simulator (validate):
 *
 * ```json
 * { "event": "playAudio",
 *   "media": { "contentType": "audio/x-l16", "sampleRate": 8000, "payload": "<base64>" } }
 * ```
 *
 * Rules, from the spec and the service's documentation: `contentType` is audio/x-l16 (16-bit
 * signed linear PCM, little-endian, mono) or audio/x-mulaw (8-bit G.711 µ-law, mono); `sampleRate`
 * is 8000 or 16000, either with either (the spec's table pairs them freely, though a stream's
 * content_type offers µ-law at 8000 only); `payload` is the raw audio in standard base64 (RFC
 * 4648, padded), not empty, and for L16 a whole number of 2-byte samples. A `streamId` string
 * may accompany the message (the service's examples send it); other keys are ignored. Whether a
 * message must also be in its stream's format is a separate question: playAudioFormatMismatch.
 */

export const PLAY_AUDIO_EVENT = 'playAudio';
export const PLAY_AUDIO_CONTENT_TYPES = ['audio/x-l16', 'audio/x-mulaw'] as const;
export type PlayAudioContentType = (typeof PLAY_AUDIO_CONTENT_TYPES)[number];
export const PLAY_AUDIO_SAMPLE_RATES = [8000, 16000] as const;
export type PlayAudioSampleRate = (typeof PLAY_AUDIO_SAMPLE_RATES)[number];

/** Bytes per sample of each content type (mono). */
export const PLAY_AUDIO_BYTES_PER_SAMPLE: Readonly<Record<PlayAudioContentType, number>> = {
  'audio/x-l16': 2,
  'audio/x-mulaw': 1,
};

export interface PlayAudioMessage {
  readonly event: typeof PLAY_AUDIO_EVENT;
  readonly media: {
    readonly contentType: PlayAudioContentType;
    readonly sampleRate: PlayAudioSampleRate;
    /** The raw audio, base64. */
    readonly payload: string;
  };
  readonly streamId?: string;
}

export type PlayAudioField =
  | 'message'
  | 'event'
  | 'media'
  | 'media.contentType'
  | 'media.sampleRate'
  | 'media.payload'
  | 'streamId';

export interface PlayAudioProblem {
  readonly field: PlayAudioField;
  readonly reason: string;
}

export type PlayAudioCheck =
  | {
      readonly ok: true;
      readonly message: PlayAudioMessage;
      /** Bytes of raw audio the payload carries. */
      readonly audioBytes: number;
      /** Its length in milliseconds at the message's rate (fractional: 1 µ-law byte is 0.125 ms). */
      readonly durationMs: number;
    }
  | {
      readonly ok: false;
      /** One entry per invalid field. */
      readonly problems: readonly PlayAudioProblem[];
      /** Every problem in one line. */
      readonly reason: string;
    };

/** A playAudio message that could not be built; `problems` name each invalid field. */
export class PlayAudioError extends Error {
  constructor(readonly problems: readonly PlayAudioProblem[]) {
    super(`invalid playAudio: ${problems.map((problem) => problem.reason).join('; ')}`);
    this.name = 'PlayAudioError';
  }
}

export interface PlayAudioInput {
  readonly contentType: PlayAudioContentType;
  readonly sampleRate: PlayAudioSampleRate;
  /** Raw audio: L16 little-endian samples, or µ-law bytes. */
  readonly audio: Uint8Array;
  readonly streamId?: string;
}

/**
 * Builds a playAudio message from raw audio.
 *
 * @throws PlayAudioError when the audio or the format breaks a rule (an unknown content type or
 *   rate, an odd number of L16 bytes, no audio)
 */
export function buildPlayAudioMessage(input: PlayAudioInput): PlayAudioMessage {
  const message: PlayAudioMessage = {
    event: PLAY_AUDIO_EVENT,
    media: {
      contentType: input.contentType,
      sampleRate: input.sampleRate,
      payload: Buffer.from(
        input.audio.buffer,
        input.audio.byteOffset,
        input.audio.byteLength,
      ).toString('base64'),
    },
    ...(input.streamId === undefined ? {} : { streamId: input.streamId }),
  };
  const check = validatePlayAudioMessage(message);
  if (!check.ok) throw new PlayAudioError(check.problems);
  return message;
}

/**
 * Checks a received WebSocket text message: JSON, then every field. Pure.
 */
export function parsePlayAudioMessage(text: string): PlayAudioCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse([{ field: 'message', reason: 'the message is not JSON' }]);
  }
  return validatePlayAudioMessage(value);
}

/**
 * Checks a decoded message field by field and reports every invalid one; a valid message comes
 * back typed, with its audio length. Pure.
 */
export function validatePlayAudioMessage(value: unknown): PlayAudioCheck {
  if (!isObject(value))
    return refuse([
      { field: 'message', reason: `the message must be a JSON object, not ${describe(value)}` },
    ]);
  const problems: PlayAudioProblem[] = [];
  if (value.event !== PLAY_AUDIO_EVENT)
    problems.push({
      field: 'event',
      reason: `event must be "${PLAY_AUDIO_EVENT}", not ${describe(value.event)}`,
    });
  if (value.streamId !== undefined && typeof value.streamId !== 'string')
    problems.push({
      field: 'streamId',
      reason: `streamId, when given, must be a string, not ${describe(value.streamId)}`,
    });
  const media = value.media;
  if (!isObject(media)) {
    problems.push({
      field: 'media',
      reason: `media must be an object with contentType, sampleRate and payload, not ${describe(media)}`,
    });
    return refuse(problems);
  }

  const contentType = (PLAY_AUDIO_CONTENT_TYPES as readonly unknown[]).includes(media.contentType)
    ? (media.contentType as PlayAudioContentType)
    : undefined;
  if (contentType === undefined)
    problems.push({
      field: 'media.contentType',
      reason: `media.contentType must be ${PLAY_AUDIO_CONTENT_TYPES.join(' or ')}, not ${describe(media.contentType)}`,
    });

  const sampleRate = (PLAY_AUDIO_SAMPLE_RATES as readonly unknown[]).includes(media.sampleRate)
    ? (media.sampleRate as PlayAudioSampleRate)
    : undefined;
  if (sampleRate === undefined)
    problems.push({
      field: 'media.sampleRate',
      reason: `media.sampleRate must be the number 8000 or 16000, not ${describe(media.sampleRate)}`,
    });

  const audioBytes = payloadBytes(media.payload, contentType, problems);
  if (
    problems.length > 0 ||
    contentType === undefined ||
    sampleRate === undefined ||
    audioBytes === undefined
  )
    return refuse(problems);
  return {
    ok: true,
    message: {
      event: PLAY_AUDIO_EVENT,
      media: { contentType, sampleRate, payload: media.payload as string },
      ...(typeof value.streamId === 'string' ? { streamId: value.streamId } : {}),
    },
    audioBytes,
    durationMs: playAudioDurationMs(contentType, sampleRate, audioBytes),
  };
}

/**
 * Why a valid playAudio cannot play on a stream whose content_type is `streamContentType`
 * (`audio/x-l16;rate=8000`…), or undefined when its contentType and sampleRate are the stream's.
 * The service documents no conversion, so audio in another format than the stream's is refused
 * (assumption: the simulator's rule, docs/assumptions.md "playAudio"). Pure.
 */
export function playAudioFormatMismatch(
  message: PlayAudioMessage,
  streamContentType: string,
): string | undefined {
  const { contentType, sampleRate } = message.media;
  const format = `${contentType};rate=${sampleRate}`;
  return format === streamContentType
    ? undefined
    : `playAudio of ${format} on a stream of ${streamContentType}: send audio in the stream's content_type`;
}

/** Milliseconds of mono audio in `bytes` bytes of `contentType` at `sampleRate`. */
export function playAudioDurationMs(
  contentType: PlayAudioContentType,
  sampleRate: PlayAudioSampleRate,
  bytes: number,
): number {
  return (bytes / PLAY_AUDIO_BYTES_PER_SAMPLE[contentType] / sampleRate) * 1000;
}

// Standard alphabet, padded to a multiple of 4 (what Buffer and every base64 encoder produce).
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function payloadBytes(
  payload: unknown,
  contentType: PlayAudioContentType | undefined,
  problems: PlayAudioProblem[],
): number | undefined {
  if (typeof payload !== 'string' || payload === '') {
    problems.push({
      field: 'media.payload',
      reason: `media.payload must be base64-encoded raw audio, not ${describe(payload)}`,
    });
    return undefined;
  }
  if (!BASE64.test(payload)) {
    problems.push({
      field: 'media.payload',
      reason:
        'media.payload is not valid base64 (standard alphabet A-Z a-z 0-9 + /, padded with =)',
    });
    return undefined;
  }
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const bytes = (payload.length / 4) * 3 - padding;
  if (contentType !== undefined && bytes % PLAY_AUDIO_BYTES_PER_SAMPLE[contentType] !== 0) {
    problems.push({
      field: 'media.payload',
      reason: `media.payload holds ${bytes} bytes, not a whole number of ${PLAY_AUDIO_BYTES_PER_SAMPLE[contentType]}-byte ${contentType} samples`,
    });
    return undefined;
  }
  return bytes;
}

function refuse(problems: readonly PlayAudioProblem[]): PlayAudioCheck {
  return {
    ok: false,
    problems,
    reason: `invalid playAudio: ${problems.map((problem) => problem.reason).join('; ')}`,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

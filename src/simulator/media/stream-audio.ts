import {
  PLAY_AUDIO_BYTES_PER_SAMPLE,
  type PlayAudioContentType,
  type PlayAudioSampleRate,
} from '../../api/play-audio.js';
import type { StreamContentType } from '../../api/stream-rules.js';
import type { AudioTrack } from '../../api/wire-types.js';

/**
 * The audio the simulator streams: a steady tone per track (the call's audio is generated, not
 * recorded), cut into 20 ms frames in the stream's content_type. Pure.
 */

/** Length of one media frame, milliseconds (what telephony media is usually packetised in). */
export const MEDIA_FRAME_MS = 20;

/** A track of audio sent over the WebSocket. */
export type MediaTrack = 'inbound' | 'outbound';

/** The encoding and rate of the audio, as the `start` message's mediaFormat names them. */
export interface MediaFormat {
  readonly encoding: PlayAudioContentType;
  readonly sampleRate: PlayAudioSampleRate;
}

/** `audio/x-l16;rate=16000` → `{encoding: 'audio/x-l16', sampleRate: 16000}`. */
export function mediaFormatOf(contentType: StreamContentType): MediaFormat {
  const [encoding, rate] = contentType.split(';rate=') as [PlayAudioContentType, string];
  return { encoding, sampleRate: Number(rate) as PlayAudioSampleRate };
}

/** The tracks a stream's audio_track sends: `both` is inbound then outbound. */
export function mediaTracksOf(audioTrack: AudioTrack): MediaTrack[] {
  return audioTrack === 'both' ? ['inbound', 'outbound'] : [audioTrack];
}

/** Frequency of each track's tone, Hz: different, so a listener can tell the tracks apart. */
export const TRACK_TONE_HZ: Readonly<Record<MediaTrack, number>> = { inbound: 440, outbound: 660 };

/** A quarter of full scale: clearly audible, never clipped. */
const TONE_AMPLITUDE = 0.25 * 32767;

/** Bytes in one frame of `format` (mono). */
export function mediaFrameBytes(format: MediaFormat): number {
  return (
    ((format.sampleRate * MEDIA_FRAME_MS) / 1000) * PLAY_AUDIO_BYTES_PER_SAMPLE[format.encoding]
  );
}

/** How many frames `seconds` of audio make (whole frames, rounded). */
export function mediaFrameCount(seconds: number): number {
  return Math.round((seconds * 1000) / MEDIA_FRAME_MS);
}

/**
 * Frame number `index` (from 0) of a continuous tone of `frequencyHz`: 16-bit little-endian
 * signed PCM for audio/x-l16, G.711 µ-law bytes for audio/x-mulaw. The phase runs on across frames.
 */
export function generateToneFrame(format: MediaFormat, frequencyHz: number, index: number): Buffer {
  const samples = (format.sampleRate * MEDIA_FRAME_MS) / 1000;
  const bytesPerSample = PLAY_AUDIO_BYTES_PER_SAMPLE[format.encoding];
  const frame = Buffer.alloc(samples * bytesPerSample);
  const first = index * samples;
  for (let k = 0; k < samples; k++) {
    const value = Math.round(
      TONE_AMPLITUDE * Math.sin((2 * Math.PI * frequencyHz * (first + k)) / format.sampleRate),
    );
    if (format.encoding === 'audio/x-l16') frame.writeInt16LE(value, k * 2);
    else frame[k] = encodeMulaw(value);
  }
  return frame;
}

const MULAW_BIAS = 0x84;
const MULAW_CLIP = 32635;

/** One 16-bit linear sample as a G.711 µ-law byte (ITU-T G.711, as every telephony stack does it). */
export function encodeMulaw(sample: number): number {
  let magnitude = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = magnitude < 0 ? 0x80 : 0;
  if (magnitude < 0) magnitude = -magnitude;
  magnitude = Math.min(magnitude, MULAW_CLIP) + MULAW_BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** A G.711 µ-law byte back to a 16-bit linear sample (for checking what was sent). */
export function decodeMulaw(byte: number): number {
  const value = ~byte & 0xff;
  const exponent = (value >> 4) & 0x07;
  const magnitude = (((value & 0x0f) << 3) + MULAW_BIAS) << exponent;
  return value & 0x80 ? MULAW_BIAS - magnitude : magnitude - MULAW_BIAS;
}

import { describe, expect, it } from 'vitest';
import {
  buildMediaChunkMessage,
  buildMediaStartMessage,
} from '../../src/simulator/media/media-messages.js';
import {
  decodeMulaw,
  encodeMulaw,
  generateToneFrame,
  mediaFormatOf,
  mediaFrameBytes,
  mediaFrameCount,
  mediaTracksOf,
} from '../../src/simulator/media/stream-audio.js';

describe('G.711 µ-law', () => {
  it('encodes the reference points of the standard', () => {
    expect(encodeMulaw(0)).toBe(0xff);
    expect(encodeMulaw(-1)).toBe(0x7f);
    expect(encodeMulaw(32767)).toBe(0x80);
    expect(encodeMulaw(-32768)).toBe(0x00);
    expect(encodeMulaw(1000)).toBe(0xce);
  });

  it('decodes back within the step of each segment, keeping the sign', () => {
    for (const sample of [0, 5, -5, 100, -100, 1000, -1000, 8000, -8000, 30000, -30000]) {
      const back = decodeMulaw(encodeMulaw(sample));
      expect(Math.sign(back) === Math.sign(sample) || sample === 0 || Math.abs(back) < 8).toBe(
        true,
      );
      expect(Math.abs(back - sample)).toBeLessThanOrEqual(Math.max(8, Math.abs(sample) / 16));
    }
  });
});

describe('the generated audio', () => {
  it('reads content types and audio tracks as the stream gives them', () => {
    expect(mediaFormatOf('audio/x-l16;rate=8000')).toEqual({
      encoding: 'audio/x-l16',
      sampleRate: 8000,
    });
    expect(mediaFormatOf('audio/x-l16;rate=16000')).toEqual({
      encoding: 'audio/x-l16',
      sampleRate: 16000,
    });
    expect(mediaFormatOf('audio/x-mulaw;rate=8000')).toEqual({
      encoding: 'audio/x-mulaw',
      sampleRate: 8000,
    });
    expect(mediaTracksOf('inbound')).toEqual(['inbound']);
    expect(mediaTracksOf('outbound')).toEqual(['outbound']);
    expect(mediaTracksOf('both')).toEqual(['inbound', 'outbound']);
  });

  it('cuts 20 ms frames: 320 bytes of L16 at 8 kHz, 640 at 16 kHz, 160 of µ-law', () => {
    expect(mediaFrameBytes(mediaFormatOf('audio/x-l16;rate=8000'))).toBe(320);
    expect(mediaFrameBytes(mediaFormatOf('audio/x-l16;rate=16000'))).toBe(640);
    expect(mediaFrameBytes(mediaFormatOf('audio/x-mulaw;rate=8000'))).toBe(160);
    for (const type of [
      'audio/x-l16;rate=8000',
      'audio/x-l16;rate=16000',
      'audio/x-mulaw;rate=8000',
    ] as const) {
      const format = mediaFormatOf(type);
      expect(generateToneFrame(format, 440, 3)).toHaveLength(mediaFrameBytes(format));
    }
    expect(mediaFrameCount(0)).toBe(0);
    expect(mediaFrameCount(0.2)).toBe(10);
    expect(mediaFrameCount(2)).toBe(100);
  });

  it('is a continuous tone of the asked frequency across frames', () => {
    const format = mediaFormatOf('audio/x-l16;rate=8000');
    const frames = [0, 1, 2, 3, 4].map((index) => generateToneFrame(format, 400, index));
    const samples = frames.flatMap((frame) =>
      Array.from({ length: frame.length / 2 }, (_, k) => frame.readInt16LE(k * 2)),
    );
    // 400 Hz over 100 ms: 40 cycles, 80 sign changes, and the phase runs on across frame edges.
    let crossings = 0;
    for (let k = 1; k < samples.length; k++)
      if (Math.sign(samples[k]!) !== Math.sign(samples[k - 1]!) && samples[k] !== 0) crossings++;
    expect(crossings).toBeGreaterThanOrEqual(78);
    expect(crossings).toBeLessThanOrEqual(81);
    expect(Math.max(...samples)).toBeGreaterThan(8000);
    expect(Math.max(...samples)).toBeLessThan(32767);
    expect(generateToneFrame(format, 400, 1).equals(frames[1]!)).toBe(true);
  });

  it('encodes a µ-law frame as the L16 frame of the same tone would sound', () => {
    const l16 = generateToneFrame(mediaFormatOf('audio/x-l16;rate=8000'), 440, 2);
    const mulaw = generateToneFrame(mediaFormatOf('audio/x-mulaw;rate=8000'), 440, 2);
    for (let k = 0; k < mulaw.length; k++) {
      const sample = l16.readInt16LE(k * 2);
      expect(Math.abs(decodeMulaw(mulaw[k]!) - sample)).toBeLessThanOrEqual(
        Math.max(8, Math.abs(sample) / 16),
      );
    }
  });
});

describe('media messages', () => {
  it('builds start with the stream, the format and the extra headers, and leaves them out when none', () => {
    const input = {
      sequenceNumber: 1,
      callUuid: 'call-1',
      streamId: 'stream-1',
      accountId: 'MA1',
      tracks: ['inbound', 'outbound'] as const,
      format: mediaFormatOf('audio/x-mulaw;rate=8000'),
    };
    expect(buildMediaStartMessage({ ...input, extraHeaders: 'a=1,b=2' })).toEqual({
      event: 'start',
      sequenceNumber: 1,
      start: {
        callId: 'call-1',
        streamId: 'stream-1',
        accountId: 'MA1',
        tracks: ['inbound', 'outbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
      },
      extra_headers: 'a=1,b=2',
    });
    expect(buildMediaStartMessage({ ...input, extraHeaders: undefined })).not.toHaveProperty(
      'extra_headers',
    );
  });

  it('builds media with the timestamp as epoch milliseconds text and the audio in base64', () => {
    expect(
      buildMediaChunkMessage({
        sequenceNumber: 7,
        streamId: 'stream-1',
        track: 'outbound',
        timestampMs: 1_705_312_200_000.6,
        chunk: 3,
        audio: Buffer.from([1, 2, 3]),
        extraHeaders: undefined,
      }),
    ).toEqual({
      event: 'media',
      sequenceNumber: 7,
      streamId: 'stream-1',
      media: { track: 'outbound', timestamp: '1705312200000', chunk: 3, payload: 'AQID' },
    });
  });
});

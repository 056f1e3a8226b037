import { describe, expect, it } from 'vitest';
import {
  buildPlayAudioMessage,
  parsePlayAudioMessage,
  PlayAudioError,
  playAudioDurationMs,
  playAudioFormatMismatch,
  validatePlayAudioMessage,
} from '../../src/api/play-audio.js';

/** 20 ms of L16 at 8000 Hz: 160 samples, 320 bytes. */
const L16_20MS = new Uint8Array(320).map((_, i) => i % 251);
const VALID = {
  event: 'playAudio',
  media: {
    contentType: 'audio/x-l16',
    sampleRate: 8000,
    payload: Buffer.from(L16_20MS).toString('base64'),
  },
};

function withMedia(media: Record<string, unknown>): unknown {
  return { ...VALID, media: { ...VALID.media, ...media } };
}

describe('validatePlayAudioMessage', () => {
  it('accepts a valid message and measures its audio', () => {
    expect(validatePlayAudioMessage(VALID)).toEqual({
      ok: true,
      message: VALID,
      audioBytes: 320,
      durationMs: 20,
    });
  });

  it.each([
    ['audio/x-l16', 16000, 640, 20],
    ['audio/x-mulaw', 8000, 160, 20],
    ['audio/x-mulaw', 8000, 1, 0.125],
    // The spec's table pairs either type with either rate.
    ['audio/x-mulaw', 16000, 320, 20],
  ] as const)('measures %s at %d: %d bytes are %d ms', (contentType, sampleRate, bytes, ms) => {
    const check = validatePlayAudioMessage(
      withMedia({ contentType, sampleRate, payload: Buffer.alloc(bytes, 0x7f).toString('base64') }),
    );
    expect(check).toMatchObject({ ok: true, audioBytes: bytes, durationMs: ms });
    expect(playAudioDurationMs(contentType, sampleRate, bytes)).toBe(ms);
  });

  it('keeps a streamId and ignores other keys', () => {
    const check = validatePlayAudioMessage({ ...VALID, streamId: 's-1', extra: true });
    expect(check.ok && check.message).toEqual({ ...VALID, streamId: 's-1' });
  });

  it.each([
    ['event', { ...VALID, event: 'playaudio' }, 'event must be "playAudio", not "playaudio"'],
    ['event', { media: VALID.media }, 'event must be "playAudio", not missing'],
    ['streamId', { ...VALID, streamId: 7 }, 'streamId, when given, must be a string'],
    ['media', { event: 'playAudio' }, 'media must be an object'],
    ['media', { event: 'playAudio', media: 'x' }, 'media must be an object'],
    ['media.contentType', withMedia({ contentType: 'audio/wav' }), 'not "audio/wav"'],
    [
      'media.contentType',
      withMedia({ contentType: 'audio/x-l16;rate=8000' }),
      'media.contentType must be',
    ],
    ['media.contentType', withMedia({ contentType: undefined }), 'not missing'],
    [
      'media.sampleRate',
      withMedia({ sampleRate: '8000' }),
      'must be the number 8000 or 16000, not "8000"',
    ],
    ['media.sampleRate', withMedia({ sampleRate: 44100 }), 'not 44100'],
    ['media.payload', withMedia({ payload: '' }), 'must be base64-encoded raw audio'],
    ['media.payload', withMedia({ payload: 12 }), 'must be base64-encoded raw audio, not 12'],
    ['media.payload', withMedia({ payload: 'AAE' }), 'not valid base64'],
    ['media.payload', withMedia({ payload: 'AA-_' }), 'not valid base64'],
    ['media.payload', withMedia({ payload: 'AAEC AAEC' }), 'not valid base64'],
    ['media.payload', withMedia({ payload: 'AAEC' }), '3 bytes, not a whole number of 2-byte'],
  ])('refuses a wrong %s, naming it', (field, message, reason) => {
    const check = validatePlayAudioMessage(message);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.problems).toEqual([{ field, reason: expect.stringContaining(reason) as unknown }]);
    expect(check.reason).toContain(reason);
  });

  it('reports every invalid field at once', () => {
    const check = validatePlayAudioMessage({
      event: 'play',
      media: { contentType: 'audio/ogg', sampleRate: 1, payload: '!' },
    });
    expect(check.ok === false && check.problems.map((problem) => problem.field)).toEqual([
      'event',
      'media.contentType',
      'media.sampleRate',
      'media.payload',
    ]);
  });

  it('refuses what is not an object', () => {
    for (const value of [null, [], 'playAudio', 3])
      expect(validatePlayAudioMessage(value)).toMatchObject({
        ok: false,
        problems: [{ field: 'message' }],
      });
  });
});

describe('playAudioFormatMismatch', () => {
  const message = (contentType: 'audio/x-l16' | 'audio/x-mulaw', sampleRate: 8000 | 16000) =>
    buildPlayAudioMessage({ contentType, sampleRate, audio: new Uint8Array(320) });

  it("accepts audio in the stream's own content_type", () => {
    expect(playAudioFormatMismatch(message('audio/x-l16', 8000), 'audio/x-l16;rate=8000')).toBe(
      undefined,
    );
    expect(
      playAudioFormatMismatch(message('audio/x-l16', 16000), 'audio/x-l16;rate=16000'),
    ).toBeUndefined();
    expect(
      playAudioFormatMismatch(message('audio/x-mulaw', 8000), 'audio/x-mulaw;rate=8000'),
    ).toBeUndefined();
  });

  it('names both formats when the type or the rate differs', () => {
    expect(playAudioFormatMismatch(message('audio/x-mulaw', 8000), 'audio/x-l16;rate=8000')).toBe(
      "playAudio of audio/x-mulaw;rate=8000 on a stream of audio/x-l16;rate=8000: send audio in the stream's content_type",
    );
    expect(
      playAudioFormatMismatch(message('audio/x-l16', 8000), 'audio/x-l16;rate=16000'),
    ).toContain('audio/x-l16;rate=8000 on a stream of audio/x-l16;rate=16000');
    expect(
      playAudioFormatMismatch(message('audio/x-mulaw', 16000), 'audio/x-mulaw;rate=8000'),
    ).toContain('audio/x-mulaw;rate=16000 on a stream of audio/x-mulaw;rate=8000');
  });
});

describe('parsePlayAudioMessage', () => {
  it('reads the WebSocket text', () => {
    expect(parsePlayAudioMessage(JSON.stringify(VALID))).toMatchObject({
      ok: true,
      durationMs: 20,
    });
  });

  it('refuses text that is not JSON', () => {
    expect(parsePlayAudioMessage('{"event":')).toEqual({
      ok: false,
      problems: [{ field: 'message', reason: 'the message is not JSON' }],
      reason: 'invalid playAudio: the message is not JSON',
    });
  });
});

describe('buildPlayAudioMessage', () => {
  it('builds a message the validator accepts, with the audio round-tripping', () => {
    const message = buildPlayAudioMessage({
      contentType: 'audio/x-l16',
      sampleRate: 8000,
      audio: L16_20MS,
      streamId: 's-1',
    });
    expect(message).toEqual({ ...VALID, streamId: 's-1' });
    expect(new Uint8Array(Buffer.from(message.media.payload, 'base64'))).toEqual(L16_20MS);
    expect(parsePlayAudioMessage(JSON.stringify(message))).toMatchObject({
      ok: true,
      durationMs: 20,
    });
  });

  it('encodes only the view it is given of a larger buffer', () => {
    const whole = new Uint8Array([9, 9, 1, 2, 3, 4, 9]);
    const message = buildPlayAudioMessage({
      contentType: 'audio/x-mulaw',
      sampleRate: 8000,
      audio: whole.subarray(2, 6),
    });
    expect(message.media.payload).toBe(Buffer.from([1, 2, 3, 4]).toString('base64'));
  });

  it('throws a PlayAudioError naming each rule the input breaks', () => {
    expect(() =>
      buildPlayAudioMessage({
        contentType: 'audio/x-mulaw',
        sampleRate: 8000,
        audio: new Uint8Array(0),
      }),
    ).toThrow(PlayAudioError);
    expect(
      buildPlayAudioMessage({
        contentType: 'audio/x-mulaw',
        sampleRate: 16000,
        audio: new Uint8Array(1),
      }).media,
    ).toMatchObject({ contentType: 'audio/x-mulaw', sampleRate: 16000 });
    const thrown = ((): unknown => {
      try {
        buildPlayAudioMessage({
          contentType: 'audio/x-l16',
          sampleRate: 8000,
          audio: new Uint8Array(3),
        });
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(PlayAudioError);
    expect((thrown as PlayAudioError).problems).toEqual([
      { field: 'media.payload', reason: expect.stringContaining('3 bytes') as unknown },
    ]);
  });
});

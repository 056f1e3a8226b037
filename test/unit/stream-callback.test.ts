import { describe, expect, it } from 'vitest';
import { CallbackNonceLedger, judgeCallbackReplay } from '../../src/api/callback-replay-guard.js';
import {
  parseCallbackTimestamp,
  parseStreamCallback,
  streamCallbackDeliveryKey,
} from '../../src/api/stream-callback.js';
import { streamStatusAfter } from '../../src/domain/stream-status.js';
import { toEpochMicros } from '../../src/util/micros.js';

const STREAM = '87654321-4321-4321-4321-cba987654321';
const CALL = '12345678-1234-1234-1234-123456789abc';
const FIELDS = {
  Event: 'StartStream',
  StreamID: STREAM,
  CallUUID: CALL,
  Timestamp: '2026-01-05 10:00:00.123456',
};

describe('parseStreamCallback', () => {
  it('reads the fields of a callback into a typed event, the time in µs ISO text', () => {
    const parsed = parseStreamCallback({ ...FIELDS, Extra: 'kept' });
    expect(parsed).toEqual({
      ok: true,
      event: {
        event: 'StartStream',
        known: true,
        streamId: STREAM,
        callUuid: CALL,
        eventTime: '2026-01-05T10:00:00.123456Z',
        eventTimeMicros: toEpochMicros('2026-01-05T10:00:00.123456Z'),
        error: null,
        fields: { ...FIELDS, Extra: 'kept' },
        deliveryKey: streamCallbackDeliveryKey({ ...FIELDS, Extra: 'kept' }),
        nulEscaped: false,
      },
    });
  });

  it('takes any field name as a field, those of Object.prototype too', () => {
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const params = new URLSearchParams(FIELDS);
    for (const name of names) params.append(name, `v-${name}`);
    const parsed = parseStreamCallback(params);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(Object.keys(parsed.event.fields).sort()).toEqual(
      [...Object.keys(FIELDS), ...names].sort(),
    );
    expect(JSON.parse(JSON.stringify(parsed.event.fields))).toMatchObject({
      __proto__: 'v-__proto__',
      constructor: 'v-constructor',
    });
    const twice = new URLSearchParams(FIELDS);
    twice.append('constructor', '1');
    twice.append('constructor', '2');
    const refused = parseStreamCallback(twice);
    expect(refused.ok || refused.problems).toEqual([
      { field: 'constructor', reason: 'constructor is given 2 times' },
    ]);
  });

  it('escapes U+0000 in a value or a name, says so, and keeps the key of the fields as received', () => {
    const received = { ...FIELDS, Error: 'closed\0by peer', 'X\0Y': 'v\0' };
    const parsed = parseStreamCallback(received);
    expect(parsed.ok && parsed.event).toMatchObject({
      error: 'closed\\u0000by peer',
      nulEscaped: true,
      deliveryKey: streamCallbackDeliveryKey(received),
    });
    expect(parsed.ok && parsed.event.fields).toMatchObject({ 'X\\u0000Y': 'v\\u0000' });
    const texts = Object.entries(parsed.ok ? parsed.event.fields : {}).flat();
    expect(texts.some((text) => text.includes('\0'))).toBe(false);
    // An identifier with U+0000 is not escaped into another identifier: it is refused.
    expect(parseStreamCallback({ ...FIELDS, StreamID: 'a\0b' }).ok).toBe(false);
  });

  it('reads a query string or a form body the same way', () => {
    const params = new URLSearchParams({
      ...FIELDS,
      Event: 'DroppedStream',
      Error: 'Could not establish connection with the remote service',
    });
    const parsed = parseStreamCallback(params);
    expect(parsed.ok && parsed.event).toMatchObject({
      event: 'DroppedStream',
      known: true,
      error: 'Could not establish connection with the remote service',
    });
  });

  it('keeps an offset and turns it into UTC', () => {
    const parsed = parseStreamCallback({ ...FIELDS, Timestamp: '2026-01-05 15:30:00.5+05:30' });
    expect(parsed.ok && parsed.event.eventTime).toBe('2026-01-05T10:00:00.500000Z');
  });

  it('accepts an event it does not know, saying so', () => {
    const parsed = parseStreamCallback({ ...FIELDS, Event: 'Degraded' });
    expect(parsed.ok && parsed.event).toMatchObject({ event: 'Degraded', known: false });
  });

  it('treats an empty Error as no error', () => {
    const parsed = parseStreamCallback({ ...FIELDS, Error: '' });
    expect(parsed.ok && parsed.event.error).toBeNull();
  });

  it.each([
    ['Event', { Event: undefined }, 'Event is missing'],
    ['Event', { Event: '' }, 'Event is missing'],
    ['Event', { Event: 'Start Stream' }, 'Event must be a name'],
    ['StreamID', { StreamID: undefined }, 'StreamID is missing'],
    ['StreamID', { StreamID: 'has space' }, 'StreamID must be an identifier'],
    ['StreamID', { StreamID: 'x'.repeat(257) }, 'at most 256'],
    ['CallUUID', { CallUUID: undefined }, 'CallUUID is missing'],
    ['Timestamp', { Timestamp: undefined }, 'Timestamp is missing'],
    ['Timestamp', { Timestamp: '2026-02-30 10:00:00' }, 'Timestamp must be a date-time'],
    ['Timestamp', { Timestamp: 'yesterday' }, 'not "yesterday"'],
    ['Error', { Error: 'e'.repeat(5000) }, 'more than 4096'],
  ])('refuses a callback whose %s is wrong (%j)', (field, change, reason) => {
    const fields = Object.fromEntries(
      Object.entries({ ...FIELDS, ...change }).filter(([, value]) => value !== undefined),
    ) as Record<string, string>;
    const parsed = parseStreamCallback(fields);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems).toEqual([
      { field, reason: expect.stringContaining(reason) as unknown },
    ]);
    expect(parsed.message).toContain(reason);
  });

  it('reports every problem at once, and a field given twice', () => {
    const params = new URLSearchParams([
      ['Event', 'StopStream'],
      ['StreamID', 'a'],
      ['StreamID', 'b'],
    ]);
    const parsed = parseStreamCallback(params);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems.map((problem) => problem.field)).toEqual([
      'StreamID',
      'CallUUID',
      'Timestamp',
    ]);
    expect(parsed.problems[0]!.reason).toBe('StreamID is given 2 times');
  });

  it('gives one delivery key to a callback sent again, another to a different event', () => {
    const first = parseStreamCallback(FIELDS);
    const again = parseStreamCallback(new URLSearchParams(Object.entries(FIELDS).reverse()));
    const stop = parseStreamCallback({ ...FIELDS, Event: 'StopStream' });
    expect(first.ok && again.ok && stop.ok).toBe(true);
    if (!first.ok || !again.ok || !stop.ok) return;
    expect(again.event.deliveryKey).toBe(first.event.deliveryKey);
    expect(stop.event.deliveryKey).not.toBe(first.event.deliveryKey);
    expect(first.event.deliveryKey).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('parseCallbackTimestamp', () => {
  it.each([
    ['2026-01-05 10:00:00', '2026-01-05T10:00:00Z'],
    ['2026-01-05T10:00:00.000001Z', '2026-01-05T10:00:00.000001Z'],
    ['1767607200', '2026-01-05T10:00:00Z'],
    ['1767607200123', '2026-01-05T10:00:00.123Z'],
    ['1767607200123456', '2026-01-05T10:00:00.123456Z'],
  ])('reads %s', (text, iso) => {
    expect(parseCallbackTimestamp(text)).toBe(toEpochMicros(iso));
  });

  it.each(['', '17676072', '2026-01-05', '2026-13-01 00:00:00', '10:00'])('refuses %j', (text) => {
    expect(parseCallbackTimestamp(text)).toBeUndefined();
  });
});

describe('the replay guard', () => {
  const now = toEpochMicros('2026-01-05T10:00:00Z');
  const seconds = (n: number) => n * 1_000_000;

  it('accepts a fresh callback and remembers it until its event leaves the window', () => {
    expect(
      judgeCallbackReplay({ nonce: 'n1', eventTime: now - seconds(30), now, seenUntil: undefined }),
    ).toEqual({ accept: true, rememberUntil: now - seconds(30) + seconds(600) });
  });

  it('refuses a stale event, one from too far in the future, and a nonce seen before', () => {
    expect(
      judgeCallbackReplay({ nonce: 'n', eventTime: now - seconds(601), now, seenUntil: undefined }),
    ).toMatchObject({
      accept: false,
      reason: 'stale',
      message: expect.stringContaining('601 s old') as unknown,
    });
    expect(
      judgeCallbackReplay({ nonce: 'n', eventTime: now + seconds(601), now, seenUntil: undefined }),
    ).toMatchObject({ accept: false, reason: 'future' });
    expect(
      judgeCallbackReplay({ nonce: 'n', eventTime: now, now, seenUntil: now + seconds(1) }),
    ).toMatchObject({ accept: false, reason: 'replayed' });
    // The window's edge is still inside it.
    expect(
      judgeCallbackReplay({ nonce: 'n', eventTime: now - seconds(600), now, seenUntil: undefined })
        .accept,
    ).toBe(true);
    expect(
      judgeCallbackReplay({
        nonce: 'n',
        eventTime: now - seconds(5),
        now,
        seenUntil: undefined,
        windowSeconds: 4,
      }),
    ).toMatchObject({ reason: 'stale' });
  });

  it('a ledger refuses a remembered nonce, forgets it once its event is stale, and stays bounded', () => {
    const ledger = new CallbackNonceLedger({ maxEntries: 2 });
    const first = ledger.check('n1', now, now);
    expect(first.accept).toBe(true);
    // Not remembered until told: a delivery that failed to store may come again.
    expect(ledger.check('n1', now, now).accept).toBe(true);
    if (first.accept) ledger.remember('n1', first.rememberUntil, now);
    expect(ledger.check('n1', now, now + seconds(10))).toMatchObject({ reason: 'replayed' });
    expect(ledger.check('n1', now, now + seconds(601))).toMatchObject({ reason: 'stale' });

    ledger.remember('n2', now + seconds(600), now);
    ledger.remember('n3', now + seconds(600), now);
    expect(ledger.size).toBe(2);
    expect(ledger.check('n1', now, now).accept).toBe(true);
    ledger.remember('n4', now + seconds(5), now);
    ledger.remember('n5', now + seconds(600), now + seconds(10));
    expect(ledger.size).toBe(2);
  });
});

describe('streamStatusAfter', () => {
  it.each([
    ['StartStream', false, 'connected'],
    ['StopStream', true, 'stopped'],
    ['StopStream', false, 'stopped'],
    ['DroppedStream', false, 'failed'],
    ['DroppedStream', true, 'disconnected'],
    ['PlayedStream', true, null],
    ['Degraded', true, null],
  ] as const)('%s (connected before: %s) → %s', (event, connectedBefore, status) => {
    expect(streamStatusAfter(event, connectedBefore)).toBe(status);
  });

  it('keeps every state the spec names: started and timed out too', () => {
    expect(streamStatusAfter('StreamStatus', false, { Status: 'started' })).toBe('started');
    expect(streamStatusAfter('StopStream', true, { Status: 'Timed Out' })).toBe('timed_out');
    expect(streamStatusAfter('StopStream', true, { Reason: 'stream_timeout' })).toBe('timed_out');
    expect(streamStatusAfter('StopStream', true, { Error: 'stream timed out' })).toBe('timed_out');
    expect(streamStatusAfter('StopStream', true, { Reason: 'api request' })).toBe('stopped');
    expect(streamStatusAfter('DroppedStream', true, { Status: 'failed' })).toBe('disconnected');
    expect(streamStatusAfter('StartStream', false, { Status: 'bogus' })).toBe('connected');
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { Exchange } from '../../src/api/exchange.js';
import type { ExchangeController } from '../../src/api/keep-alive-client.js';
import { StoppedError } from '../../src/util/stopped-error.js';

/** The controller the client hands a handler, its aborts recorded. */
function controller(): ExchangeController & { abortedWith: unknown[] } {
  const abortedWith: unknown[] = [];
  return { abortedWith, abort: (reason: Error) => abortedWith.push(reason) };
}

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

afterEach(() => {
  vi.useRealTimers();
});

describe('Exchange (the transport’s dispatch handler)', () => {
  it('gathers the body of the final answer, after an informational one', async () => {
    const exchange = new Exchange(1_000, 5_000, undefined);
    const started = controller();
    exchange.onRequestStart(started);
    // An informational answer's headers say nothing of the final one's body.
    exchange.onResponseStart(started, 100, { 'content-length': '5000' });
    exchange.onResponseStart(started, 429, { 'retry-after': ['7', '9'], location: '/x' });
    exchange.onResponseData(started, bytes('{"a":'));
    exchange.onResponseData(started, bytes('"é"}'));
    exchange.onResponseEnd();
    const answer = await exchange.answer;
    expect(answer.status).toBe(429);
    expect(answer.retryAfterHeader).toBe('7');
    expect(answer.location).toBe('/x');
    expect(Buffer.from(answer.body!).toString('utf8')).toBe('{"a":"é"}');
    expect(started.abortedWith).toEqual([]);
  });

  it('stops at the size cap, declared or counted, and aborts the rest', async () => {
    const declared = new Exchange(10, 5_000, undefined);
    const first = controller();
    declared.onRequestStart(first);
    declared.onResponseStart(first, 200, { 'content-length': '11' });
    expect((await declared.answer).body).toBeUndefined();
    expect(first.abortedWith).toHaveLength(1);

    const counted = new Exchange(10, 5_000, undefined);
    const second = controller();
    counted.onRequestStart(second);
    counted.onResponseStart(second, 200, {});
    counted.onResponseData(second, bytes('123456'));
    counted.onResponseData(second, bytes('78901'));
    // Whatever undici still delivers changes nothing.
    counted.onResponseData(second, bytes('2'));
    counted.onResponseEnd();
    const answer = await counted.answer;
    expect(answer.status).toBe(200);
    expect(answer.body).toBeUndefined();
    expect(second.abortedWith).toHaveLength(1);
  });

  it('ends on its timer, aborting the request, and ignores what arrives later', async () => {
    vi.useFakeTimers();
    const exchange = new Exchange(1_000, 50, undefined);
    const started = controller();
    exchange.onRequestStart(started);
    exchange.onResponseStart(started, 200, {});
    exchange.onResponseData(started, bytes('{}'));
    vi.advanceTimersByTime(50);
    const error = await exchange.answer.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(exchange.endedBy).toBe('timeout');
    expect(started.abortedWith).toEqual([error]);
    exchange.onResponseEnd();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("ends on the caller's abort, before or after the request has a connection", async () => {
    const late = new AbortController();
    const waiting = new Exchange(1_000, 5_000, late.signal);
    late.abort(new Error('stop'));
    const started = controller();
    // The dispatcher reaches the handler after the abort: the request goes no further.
    waiting.onRequestStart(started);
    const error = await waiting.answer.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoppedError);
    expect(waiting.endedBy).toBe('aborted');
    expect((error as StoppedError).cause).toEqual(new Error('stop'));
    expect(started.abortedWith).toEqual([error]);

    const early = new AbortController();
    early.abort();
    const never = new Exchange(1_000, 5_000, early.signal);
    expect(never.over).toBe(true);
    await expect(never.answer).rejects.toBeInstanceOf(StoppedError);
  });

  it("rejects with undici's error, or the error of sending, once", async () => {
    const failing = new Exchange(1_000, 5_000, undefined);
    const started = controller();
    failing.onRequestStart(started);
    failing.onResponseError(started, new Error('socket hang up'));
    failing.onResponseEnd();
    await expect(failing.answer).rejects.toThrow('socket hang up');

    const unsent = new Exchange(1_000, 5_000, undefined);
    unsent.failToSend('invalid origin');
    await expect(unsent.answer).rejects.toThrow('invalid origin');
  });
});

import { describe, expect, it } from 'vitest';
import {
  HEAD_MAX_BYTES,
  INFORMATIONAL_MAX,
  ResponseParser,
  type ExchangeController,
  type ResponseHandler,
  type ResponseHeaders,
} from '../../src/api/keep-alive-client.js';

const controller: ExchangeController = { abort: () => undefined };

/** A handler that records what the parser tells it. */
function recorder(): ResponseHandler & {
  heads: { status: number; headers: ResponseHeaders }[];
  body: () => string;
  pieces: Buffer[];
} {
  const pieces: Buffer[] = [];
  const heads: { status: number; headers: ResponseHeaders }[] = [];
  return {
    heads,
    pieces,
    body: () => Buffer.concat(pieces).toString('utf8'),
    onRequestStart: () => undefined,
    onResponseStart: (_controller, status, headers) => heads.push({ status, headers }),
    onResponseData: (_controller, chunk) => pieces.push(Buffer.from(chunk)),
    onResponseEnd: () => undefined,
    onResponseError: () => undefined,
  };
}

/** Feeds `answer` to a new parser in pieces of `size` bytes; the last outcome and the handler. */
function feed(answer: string | Buffer, size: number, head = false) {
  const bytes = typeof answer === 'string' ? Buffer.from(answer, 'utf8') : answer;
  const parser = new ResponseParser(head);
  const handler = recorder();
  let outcome = 'more';
  for (let at = 0; at < bytes.length; at += size) {
    expect(outcome, `an outcome before byte ${at}`).toBe('more');
    outcome = parser.push(bytes.subarray(at, at + size), handler, controller);
  }
  return { outcome, handler, parser };
}

const BODY = '{"objects":[{"call_uuid":"é"}],"meta":{"next":null}}';
const BODY_BYTES = Buffer.byteLength(BODY);

describe('ResponseParser', () => {
  it('reads a content-length answer delivered in pieces of any size, byte for byte', () => {
    const answer = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${BODY_BYTES}\r\n\r\n${BODY}`;
    for (const size of [1, 2, 3, 7, 64, 10_000]) {
      const { outcome, handler } = feed(answer, size);
      expect(outcome, `pieces of ${size}`).toBe('done');
      expect(handler.body()).toBe(BODY);
      expect(handler.heads).toEqual([
        {
          status: 200,
          headers: { 'content-type': 'application/json', 'content-length': `${BODY_BYTES}` },
        },
      ]);
    }
  });

  it('reads a chunked answer split at every byte, extensions and trailers included', () => {
    const half = Buffer.from(BODY).subarray(0, 20);
    const rest = Buffer.from(BODY).subarray(20);
    const answer = Buffer.concat([
      Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n`),
      Buffer.from(`${half.length.toString(16)};name=value\r\n`),
      half,
      Buffer.from(`\r\n${rest.length.toString(16).toUpperCase()}\r\n`),
      rest,
      Buffer.from('\r\n0\r\nX-Trailer: 1\r\n\r\n'),
    ]);
    for (const size of [1, 2, 5, 13, answer.length]) {
      const { outcome, handler } = feed(answer, size);
      expect(outcome, `pieces of ${size}`).toBe('done');
      expect(handler.body()).toBe(BODY);
    }
  });

  it('passes an informational answer on, then reads the final one', () => {
    const { outcome, handler } = feed(
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nRetry-After: 9\r\nContent-Length: 0\r\n\r\n',
      5,
    );
    expect(outcome).toBe('done');
    expect(handler.heads.map((head) => head.status)).toEqual([100, 429]);
    expect(handler.heads[1]!.headers['retry-after']).toEqual(['7', '9']);
  });

  it('leaves the connection unused again when the answer says close, is HTTP/1.0, or is followed by more bytes', () => {
    expect(
      feed('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok', 100).outcome,
    ).toBe('close');
    expect(feed('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok', 100).outcome).toBe('close');
    expect(
      feed('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok', 100).outcome,
    ).toBe('done');
    const extra = feed('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1', 100);
    expect(extra.outcome).toBe('close');
    expect(extra.handler.body()).toBe('ok');
    // An empty body followed by bytes: nothing is passed on as its data, not even an empty piece.
    const empty = feed('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1', 100);
    expect(empty.outcome).toBe('close');
    expect(empty.handler.pieces).toEqual([]);
  });

  it('reads how long the server keeps the connection idle from its Keep-Alive header', () => {
    const hint = (header: string) =>
      feed(`HTTP/1.1 200 OK\r\n${header}Content-Length: 0\r\n\r\n`, 100).parser.keepAliveHintMs;
    expect(hint('Keep-Alive: timeout=5\r\n')).toBe(5_000);
    expect(hint('Keep-Alive: max=100, timeout=30\r\n')).toBe(30_000);
    expect(hint('Keep-Alive: max=100\r\n')).toBe(Number.POSITIVE_INFINITY);
    expect(hint('')).toBe(Number.POSITIVE_INFINITY);
  });

  it('reads a body without a length until the connection closes', () => {
    const { outcome, handler, parser } = feed('HTTP/1.1 200 OK\r\n\r\n' + BODY, 9);
    expect(outcome).toBe('more');
    expect(parser.endsAtClose()).toBe(true);
    expect(handler.body()).toBe(BODY);
  });

  it('expects no body after a 204, a 304 or the answer to HEAD', () => {
    expect(feed('HTTP/1.1 204 No Content\r\n\r\n', 4).outcome).toBe('done');
    expect(feed('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n', 4).outcome).toBe('done');
    expect(feed('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n', 4, true).outcome).toBe('done');
  });

  it.each([
    ['not an HTTP status line', 'HTTP/2 200 OK\r\n\r\n', /status line/],
    ['a folded header line', 'HTTP/1.1 200 OK\r\nA: 1\r\n  2\r\n\r\n', /header line/],
    ['a header name with a space', 'HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n', /header line/],
    [
      'two different lengths',
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok',
      /content-length/,
    ],
    ['a negative length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', /content-length/],
    [
      'a coding it does not read',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n',
      /not chunked/,
    ],
    [
      'a chunk size that is not hex',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      /chunked/,
    ],
    [
      'chunk data not followed by CRLF',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX\r\n',
      /chunked/,
    ],
    ['a switch of protocols', 'HTTP/1.1 101 Switching Protocols\r\n\r\n', /switched/],
  ])('refuses %s', (_what, answer, message) => {
    expect(() => feed(answer, 3)).toThrow(message);
  });

  it('refuses an endless run of informational answers', () => {
    const continues = 'HTTP/1.1 100 Continue\r\n\r\n';
    const final = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n';
    expect(feed(continues.repeat(INFORMATIONAL_MAX) + final, 50).outcome).toBe('done');
    expect(() => feed(continues.repeat(INFORMATIONAL_MAX + 1) + final, 50)).toThrow(
      /informational/,
    );
  });

  it('refuses chunked framing far larger than its data: endless tiny chunks or trailers', () => {
    const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
    const tinyChunks = '1;' + 'e'.repeat(500) + '\r\nx\r\n';
    expect(() => feed(head + tinyChunks.repeat(100), 4096)).toThrow(/far larger than its data/);
    const trailers = '0\r\n' + 'X-Trailer: 1\r\n'.repeat(2000);
    expect(() => feed(head + trailers, 4096)).toThrow(/far larger than its data/);
    // Framing in proportion to its data is read.
    const chunk = 'y'.repeat(1000);
    const ordinary = `${head}${`3e8;e=1\r\n${chunk}\r\n`.repeat(100)}0\r\n\r\n`;
    expect(feed(ordinary, 4096).handler.body()).toBe(chunk.repeat(100));
  });

  it('refuses a head longer than its bound before it ends, and a chunk-size line past its bound', () => {
    const longHead = `HTTP/1.1 200 OK\r\nX: ${'a'.repeat(HEAD_MAX_BYTES)}`;
    expect(() => feed(longHead, 1024)).toThrow(/status line and headers pass/);
    expect(() =>
      feed(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;${'x'.repeat(2000)}`, 100),
    ).toThrow(/chunk-size line/);
  });
});

import { describe, expect, it } from 'vitest';
import {
  parseListBody,
  parseListOrRecordBody,
  parseRecordBody,
  RECORD_MAX_DEPTH,
  takeRecords,
} from '../../src/api/received-json.js';
import { ApiError } from '../../src/api/api-errors.js';
import { findUnstorableText } from '../../src/normalize/parse.js';

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))),
  );
const text = (value: Uint8Array) => Buffer.from(value).toString('latin1');

const META =
  '"meta":{"limit":20,"offset":0,"next":"/v1/Account/A/Endpoint/?limit=20&offset=20","previous":null,"total_count":41}';

describe('parseListBody', () => {
  it('checks the envelope at once and reads the records when asked; takeRecords leaves none behind', () => {
    // A truncated body fails when it arrives (the transport retries it), records or not.
    expect(() => parseListBody(bytes(`{${META},"objects":[{"a":1},{"a":`))).toThrow(ApiError);
    const body = bytes(`{${META},"objects":[{"a":1},{"a":2}]}`);
    const list = parseListBody(body);
    // Read once, then the same records on every ask.
    expect(list.records.map((record) => record.value)).toEqual([{ a: 1 }, { a: 2 }]);
    expect(list.records).toBe(list.records);

    const taken = parseListBody(body);
    expect(takeRecords(taken).map((record) => record.value)).toEqual([{ a: 1 }, { a: 2 }]);
    // The list keeps its envelope, and nothing of its records: asking again is a mistake, said so.
    expect(taken.meta.total_count).toBe(41);
    expect(() => taken.records).toThrow(/after takeRecords took them/);
    // A list read eagerly (a single record as a list, assumption A9) gives its records as they are.
    const single = parseListOrRecordBody(bytes('{"phone_number":"14155550100"}'));
    expect(takeRecords(single)).toBe(single.records);
  });

  it('keeps each record exactly as received, whatever the spacing and key order', () => {
    const first = '{ "id" : "a,b]}" , "n":1 }';
    const second = '{"id":"\\"quoted\\" \\\\ back","nested":{"x":[1,{"y":"}"}]}}';
    const body = bytes(`{"objects":[${first},\n  ${second}],${META},"api_id":"req-1"}`);
    const list = parseListBody(body);
    expect(list.apiId).toBe('req-1');
    expect(list.meta).toEqual({
      limit: 20,
      offset: 0,
      next: '/v1/Account/A/Endpoint/?limit=20&offset=20',
      previous: null,
      total_count: 41,
    });
    expect(list.records.map((record) => text(record.bytes))).toEqual([first, second]);
    expect(list.records.map((record) => record.value)).toEqual([
      { id: 'a,b]}', n: 1 },
      { id: '"quoted" \\ back', nested: { x: [1, { y: '}' }] } },
    ]);
  });

  it('isolates a record with invalid UTF-8 or invalid JSON; its neighbours are read', () => {
    const body = bytes(
      `{"api_id":"x",${META},"objects":[{"a":"ok"},{"a":"`,
      [0xc3, 0x28],
      `"},{"a":NaN},{"a":"\u00e9"}]}`,
    );
    const { records } = parseListBody(body);
    expect(records).toHaveLength(4);
    expect(records[0]).toMatchObject({ value: { a: 'ok' } });
    expect(records[1]).toMatchObject({
      value: undefined,
      problem: 'the record is not valid UTF-8',
    });
    expect([...records[1]!.bytes.slice(6, 8)]).toEqual([0xc3, 0x28]);
    expect(records[2]?.problem).toMatch(/^the record is not valid JSON/);
    expect(records[3]).toMatchObject({ value: { a: 'é' } });
  });

  it('reports keys given twice with every value, in order', () => {
    const { records } = parseListBody(
      bytes(`{${META},"objects":[{"k":"false","x":1,"k":false},{"k":1}]}`),
    );
    expect(records[0]?.duplicateKeys).toEqual({ k: ['false', false] });
    expect(records[0]?.value).toEqual({ k: false, x: 1 });
    expect(records[1]?.duplicateKeys).toBeUndefined();
  });

  it('keeps the exact text of records with non-ASCII characters', () => {
    const first = '{"name":"Zoë ☎","n":1}';
    const second = '{"name":"plain"}';
    const { records } = parseListBody(bytes(`{${META},"objects":[${first},${second}]}`));
    expect(records.map((record) => record.text)).toEqual([first, second]);
    expect(records.map((record) => record.value)).toEqual([
      { name: 'Zoë ☎', n: 1 },
      { name: 'plain' },
    ]);
  });

  it('reads an empty page', () => {
    expect(parseListBody(bytes(`{"api_id":"x",${META},"objects":[ ]}`)).records).toEqual([]);
    expect(parseListBody(bytes(`{"objects":[] ,${META}}`)).records).toEqual([]);
  });

  it('steps over envelope members it does not read, whatever their value holds', () => {
    const body = bytes(
      `{"extra":{"objects":[{"not":"a record"}],"s":"]}"},"objects":[{"a":1}],"list":[1,[2]],${META}}`,
    );
    const list = parseListBody(body);
    expect(list.records.map((record) => record.value)).toEqual([{ a: 1 }]);
    expect(list.meta.total_count).toBe(41);
  });

  it.each([
    ['truncated inside a record', `{"api_id":"x",${META},"objects":[{"a":1},{"b":`],
    ['truncated inside a string', `{"api_id":"x",${META},"objects":[{"a":"abc`],
    ['truncated after the array', `{"api_id":"x",${META},"objects":[]`],
    ['no objects', `{"api_id":"x",${META}}`],
    ['no meta', '{"api_id":"x","objects":[]}'],
    ['objects not an array', `{${META},"objects":{}}`],
    ['not JSON at all', '<html>502 Bad Gateway</html>'],
    ['trailing bytes', `{${META},"objects":[]} x`],
    [
      'a negative total',
      '{"meta":{"limit":20,"offset":0,"next":null,"previous":null,"total_count":-1},"objects":[]}',
    ],
  ])('refuses a body that is %s', (_name, body) => {
    expect(() => parseListBody(bytes(body))).toThrow(ApiError);
  });
});

describe('parseRecordBody', () => {
  it('reads a single resource with its duplicate keys', () => {
    const body = '{"message_uuid":"m-1","is_domestic":"false","units":1,"is_domestic":false}\n';
    const record = parseRecordBody(bytes(body));
    expect(record.value).toEqual({ message_uuid: 'm-1', is_domestic: false, units: 1 });
    expect(record.duplicateKeys).toEqual({ is_domestic: ['false', false] });
    expect(text(record.bytes)).toBe(body.trim());
  });
  it('keeps the decoded text beside the bytes, and a repeated __proto__ key', () => {
    const body = '{"__proto__":1,"a":"\u00e9","__proto__":2}';
    const record = parseRecordBody(bytes(body));
    expect(record.text).toBe(body);
    expect(Object.getOwnPropertyDescriptor(record.duplicateKeys, '__proto__')?.value).toEqual([
      1, 2,
    ]);
  });
  it('refuses an empty or truncated body', () => {
    expect(() => parseRecordBody(bytes(''))).toThrow(ApiError);
    expect(() => parseRecordBody(bytes('{"a":'))).toThrow(ApiError);
    expect(() => parseRecordBody(bytes('{"a":'))).toThrow(
      expect.objectContaining({ kind: 'malformed', retryable: true }) as Error,
    );
  });

  it('throws the error the reader is given, naming the request', () => {
    const named = (message: string) =>
      new ApiError({
        kind: 'malformed',
        method: 'GET',
        path: '/x',
        retryable: true,
        serviceMessage: message,
      });
    expect(() => parseListBody(bytes('{"objects":[]}'), named)).toThrow(
      expect.objectContaining({
        path: '/x',
        serviceMessage: 'the response has no "meta" block',
      }) as Error,
    );
  });
});

describe('shapes of the real service (A9, A45)', () => {
  it('reads a stream list whose meta counts with "count" and says "no page" with ""', () => {
    // plivo-python tests/resources/fixtures/liveCallStreamGetAllResponse.json, next and previous as ""
    const body = bytes(
      '{"api_id":"8d1d27f0","meta":{"count":1,"limit":20,"next":"","offset":0,"previous":""},"objects":[{"stream_id":"s"}]}',
    );
    expect(parseListBody(body).meta).toEqual({
      limit: 20,
      offset: 0,
      next: null,
      previous: null,
      total_count: 1,
    });
  });

  it('still refuses a meta with neither total_count nor count', () => {
    const body = bytes('{"meta":{"limit":20,"offset":0,"next":null},"objects":[]}');
    expect(() => parseListBody(body)).toThrow(ApiError);
  });

  it('reads a single caller ID answered as one object as a list of one, exact bytes kept', () => {
    const record = '{"alias":"test","api_id":"ee7c3cb1","phone_number":"+919768368718"}';
    const list = parseListOrRecordBody(bytes(record));
    expect(list.apiId).toBe('ee7c3cb1');
    expect(list.meta).toEqual({ limit: 1, offset: 0, next: null, previous: null, total_count: 1 });
    expect(list.records.map((one) => text(one.bytes))).toEqual([record]);
  });

  it('reads a list envelope as a list, and refuses a body that is neither', () => {
    const list = parseListOrRecordBody(bytes(`{${META},"objects":[{"a":1}]}`));
    expect(list.meta.total_count).toBe(41);
    expect(list.records).toHaveLength(1);
    expect(() => parseListOrRecordBody(bytes('[1]'))).toThrow(ApiError);
    expect(() => parseListOrRecordBody(bytes(''))).toThrow(ApiError);
  });
});

describe('nesting depth (hostile input)', () => {
  const nested = (levels: number) =>
    `{"id":"d","x":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;

  it.each([
    ['ASCII pages (read in one pass)', ''],
    ['pages read record by record (non-ASCII)', '"é":"é",'],
  ])('quarantines a record nested too deep and reads its neighbours: %s', (_name, extra) => {
    const deep = nested(20_000);
    const body = bytes(`{${extra}${META},"objects":[{"id":"a"},${deep},{"id":"b"}]}`);
    const { records } = parseListBody(body);
    expect(records.map((record) => record.value)).toEqual([{ id: 'a' }, undefined, { id: 'b' }]);
    expect(records[1]!.problem).toBe(
      `the record nests 20000 levels deep; at most ${RECORD_MAX_DEPTH} are accepted (PostgreSQL's jsonb cannot store much deeper values)`,
    );
    expect(text(records[1]!.bytes)).toBe(deep);
  });

  it('accepts exactly the deepest nesting allowed, and refuses one level more', () => {
    expect(parseRecordBody(bytes(nested(RECORD_MAX_DEPTH))).problem).toBeUndefined();
    expect(parseRecordBody(bytes(nested(RECORD_MAX_DEPTH + 1))).problem).toMatch(/nests 65 levels/);
  });
});

/** Whether the api layer's walk notes an escape PostgreSQL cannot store in the record. */
function unstorableEscape(text: string): boolean {
  return parseRecordBody(bytes(text)).unstorableEscape === true;
}

describe('unstorableEscape', () => {
  // PostgreSQL refuses \u0000 and unpaired surrogate escapes in jsonb, and stores every other.
  it.each([
    ['{"a":"\\u0000"}', true],
    ['{"a\\u0000":1}', true],
    ['{"a":"x\\ud800"}', true],
    ['{"a":"\\udc00\\ud800"}', true],
    ['{"a":"\\ud800\\ud800"}', true],
    ['{"a":"\\ud800\\n"}', true],
    ['{"a":["\\\\","\\u0000"]}', true],
    ['{"a":"plain"}', false],
    ['{"a":"\\ud83d\\ude00"}', false],
    ['{"a":"\\\\u0000"}', false],
    ['{"a":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\uFFFF"}', false],
    ['{"a":"😀"}', false],
  ])('%s → unstorable: %s', (text, unstorable) => {
    expect(unstorableEscape(text)).toBe(unstorable);
  });

  it('is found in a record of a list, and only in its own record', () => {
    const list = parseListBody(
      bytes(
        '{"meta":{"limit":20,"offset":0,"total_count":3,"next":null,"previous":null},"objects":[{"a":"\\u0001"},{"a":"\\u0000"},{"a":1}]}',
      ),
    );
    expect(list.records.map((record) => record.unstorableEscape === true)).toEqual([
      false,
      true,
      false,
    ]);
  });

  it('agrees with findUnstorableText on the parsed text, escape by escape', () => {
    const units = [0x0, 0x1, 0x5c, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xffff];
    for (const first of units) {
      for (const second of units) {
        // Every character escaped, as a service may write any of them.
        const escaped = [first, second]
          .map((unit) => `\\u${unit.toString(16).padStart(4, '0')}`)
          .join('');
        const text = `{"a":"${escaped}"}`;
        const parsed = JSON.parse(text) as Record<string, unknown>;
        expect(unstorableEscape(text), text).toBe(findUnstorableText(parsed) !== undefined);
      }
    }
  });
});

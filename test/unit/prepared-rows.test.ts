import type { QueryResult } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { CopyPayload } from '../../src/db/copy-payload.js';
import { PreparedRows, rowKey, upsertPreparedRows } from '../../src/db/data-loader.js';
import type { LoadConnection, RunOptions } from '../../src/db/load-connection.js';
import { SIP_ENDPOINTS, TRUNK_CALLS, type DataTableSpec } from '../../src/db/table-specs.js';
import { CopyBinary } from '../../src/db/copy-binary.js';
import { binaryRows, copyText } from '../support/copy-data.js';
import { trunkCallRow } from '../support/load-rows.js';
import { parseListBody } from '../../src/api/received-json.js';
import { RecordJson } from '../../src/util/record-json.js';

/** What a recording connection was asked to do: a COPY, or a statement and its options. */
type Sent =
  | { readonly copy: CopyPayload }
  | { readonly sql: string; readonly options: RunOptions | undefined };

/**
 * A loading port that keeps what it is given and answers with no rows: one connection, whose
 * transaction lasts until the test makes another.
 */
function recordingRunner(): { runner: LoadConnection; queries: Sent[] } {
  const queries: Sent[] = [];
  const runner: LoadConnection = {
    copyIn: (copy) => {
      queries.push({ copy });
      return Promise.resolve(0);
    },
    run: <R>(sql: string, _parameters: readonly unknown[], options?: RunOptions) => {
      queries.push({ sql, options });
      return Promise.resolve({ rows: [] as R[], numAffectedRows: 0n } as QueryResult<R>);
    },
    stagedInTransaction: new Set(),
  };
  return { runner, queries };
}

/** The COPY of `sent`, if it is one. */
function copyPayloadOf(sent: Sent): CopyPayload | undefined {
  return 'copy' in sent ? sent.copy : undefined;
}

const spec: DataTableSpec = SIP_ENDPOINTS;

function endpoint(id: string, alias: string): Record<string, unknown> {
  const row: Record<string, unknown> = Object.fromEntries(spec.columns.map((c) => [c, null]));
  return { ...row, account_id: 'A', endpoint_id: id, alias, sip_registered: false, raw: { id } };
}

describe('rowKey', () => {
  it('joins the key columns with a separator, so ("a","bc") and ("ab","c") differ', () => {
    expect(rowKey({ x: 'a', y: 'bc' }, ['x', 'y'])).not.toBe(
      rowKey({ x: 'ab', y: 'c' }, ['x', 'y']),
    );
    expect(rowKey({ x: 'a', y: 7 }, ['x', 'y'])).toBe('a\u00017');
  });
});

describe('PreparedRows', () => {
  it("writes a record's raw JSON as the same COPY text from its bytes as from its text", () => {
    const body = Buffer.from(
      '{"meta":{"limit":20,"offset":0,"total_count":3,"next":null,"previous":null},"objects":[{"id":"é1"},{\n"id":"e2"},{"id":"\\\\e3\\t"}]}',
    );
    const records = parseListBody(body).records;
    expect(records.map((record) => record.plainBytes === true)).toEqual([true, false, false]);
    const fromBytes = new PreparedRows(spec);
    const fromText = new PreparedRows(spec);
    for (const [index, record] of records.entries()) {
      const raw = new RecordJson(record.bytes, record.text!, record.plainBytes === true);
      fromBytes.add({ ...endpoint(`e${index}`, 'a'), raw });
      fromText.add({ ...endpoint(`e${index}`, 'a'), raw: record.text });
    }
    expect(copyText(fromBytes.copy)).toBe(copyText(fromText.copy));
    const raws = copyText(fromBytes.copy)
      .split('\n')
      .slice(0, 3)
      .map((line) => line.split('\t').at(-1));
    expect(raws).toEqual(['{"id":"é1"}', '{\\n"id":"e2"}', '{"id":"\\\\\\\\e3\\\\t"}']);
  });

  it('holds each row as a COPY line, and its key', () => {
    const copy = new PreparedRows(spec);
    const row = endpoint('e1', 'tab\there');
    copy.add(row);
    expect(copy.keys).toEqual(['A\u0001e1']);
    const fields = copyText(copy.copy).split('\n')[0]!.split('\t');
    expect(copyText(copy.copy).endsWith('\n')).toBe(true);
    expect(fields).toHaveLength(spec.columns.length);
    expect(fields[spec.columns.indexOf('alias')]).toBe('tab\\there');
    expect(fields[spec.columns.indexOf('sip_registered')]).toBe('f');
    expect(fields[spec.columns.indexOf('raw')]).toBe('{"id":"e1"}');
  });

  it('writes trunk_calls rows in COPY binary, each starting with a synced_at placeholder', () => {
    const calls = new PreparedRows(TRUNK_CALLS);
    calls.add(trunkCallRow('c1'));
    expect(calls.copy).toBeInstanceOf(CopyBinary);
    expect(calls.copyOptions).toBe('FORMAT binary');
    const [fields] = binaryRows(calls.copyData());
    expect(calls.copyColumns()[0]).toBe('"synced_at"');
    expect(fields).toHaveLength(TRUNK_CALLS.columns.length + 1);
    // 1970-01-01 is 946,684,800 s before PostgreSQL's epoch.
    expect(fields![0]!.readBigInt64BE()).toBe(-946_684_800_000_000n);
    expect(fields![1 + TRUNK_CALLS.columns.indexOf('call_uuid')]!.toString()).toBe('c1');
  });

  it('sends a batch asked to go directly as a COPY into the table, stamped, after a savepoint', async () => {
    const calls = new PreparedRows(TRUNK_CALLS);
    calls.add(trunkCallRow('c1'));
    calls.add(trunkCallRow('c2'));
    const { runner, queries } = recordingRunner();
    const result = await upsertPreparedRows(runner, 'telephony', calls, '2026-11-21T00:00:00.5Z', {
      direct: true,
    });
    expect(result.direct).toBe('written');
    expect(queries).toHaveLength(1);
    const payload = copyPayloadOf(queries[0]!)!;
    expect(payload.target).toBe('"telephony"."trunk_calls"');
    expect(payload.statement('STDIN')).toMatch(/ WITH \(FORMAT binary\)$/);
    expect(firstWords(payload.before)).toEqual(['savepoint']);
    const stamp = BigInt(Date.parse('2026-11-21T00:00:00Z') - Date.parse('2000-01-01T00:00:00Z'));
    const stamps = binaryRows(payload).map((fields) => fields[0]!.readBigInt64BE());
    expect(stamps).toEqual([stamp * 1000n + 500_000n, stamp * 1000n + 500_000n]);
  });

  it('upserts only the last trunk call of each key, picked from the binary rows', async () => {
    const calls = new PreparedRows(TRUNK_CALLS);
    for (const id of ['c1', 'c2', 'c1']) calls.add(trunkCallRow(id));
    const { runner, queries } = recordingRunner();
    const result = await upsertPreparedRows(runner, 'telephony', calls, '2026-11-21T00:00:00Z', {
      direct: true,
    });
    expect(result.direct).toBeUndefined();
    const copy = copyPayloadOf(queries[0]!)!;
    const uuid = 1 + TRUNK_CALLS.columns.indexOf('call_uuid');
    expect(binaryRows(copy).map((fields) => fields[uuid]!.toString())).toEqual(['c2', 'c1']);
  });

  it('sends the last row of each key once, in COPY text, one line per row', async () => {
    const prepared = new PreparedRows(spec);
    for (const row of [endpoint('e1', 'old'), endpoint('e2', 'two'), endpoint('e1', 'new')])
      prepared.add(row);
    const { runner, queries } = recordingRunner();
    const result = await upsertPreparedRows(runner, 'telephony', prepared, '2026-11-21T00:00:00Z');
    expect(result.upserted).toBe(2);
    const copies = queries.map((query) => copyPayloadOf(query)).filter((p) => p !== undefined);
    expect(copies).toHaveLength(1);
    const aliases = Buffer.concat(copies[0]!.chunks())
      .toString('utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split('\t')[spec.columns.indexOf('alias')]);
    expect(aliases).toEqual(['two', 'new']);
  });

  const firstWords = (statements: readonly string[]) =>
    statements.map((statement) => statement.split(' ')[0]!.toLowerCase());

  it('empties the staging table only before a second batch of the same transaction', async () => {
    const { runner, queries } = recordingRunner();
    const batch = (): PreparedRows => {
      const prepared = new PreparedRows(spec);
      prepared.add(endpoint('e1', 'one'));
      return prepared;
    };
    const kinds = (): string[] =>
      queries.map((query) => ('copy' in query ? 'copy' : query.sql.split(' ')[0]!.toLowerCase()));
    await upsertPreparedRows(runner, 'telephony', batch(), '2026-11-21T00:00:00Z');
    // The staging table's creation goes with every COPY as the session's setup (the driver sends
    // it once a session), its emptying as a statement before the COPY.
    expect(kinds()).toEqual(['copy', 'insert']);
    expect(firstWords(copyPayloadOf(queries[0]!)!.sessionSetup)).toEqual(['create']);
    expect(copyPayloadOf(queries[0]!)!.before).toEqual([]);
    queries.length = 0;
    await upsertPreparedRows(runner, 'telephony', batch(), '2026-11-21T00:00:00Z');
    expect(kinds()).toEqual(['copy', 'insert']);
    expect(firstWords(copyPayloadOf(queries[0]!)!.sessionSetup)).toEqual(['create']);
    expect(firstWords(copyPayloadOf(queries[0]!)!.before)).toEqual(['delete']);
    // Another transaction (another connection, or this one after a commit) starts empty.
    const other = recordingRunner();
    await upsertPreparedRows(other.runner, 'telephony', batch(), '2026-11-21T00:00:00Z');
    expect(copyPayloadOf(other.queries[0]!)!.before).toEqual([]);
  });

  it('sends the upsert from the staging table as a prepared query, the same name every batch', async () => {
    const { runner, queries } = recordingRunner();
    const upserts: Sent[] = [];
    for (const at of ['2026-11-21T00:00:00Z', '2026-11-21T01:00:00Z']) {
      const prepared = new PreparedRows(spec);
      prepared.add(endpoint('e1', 'one'));
      runner.stagedInTransaction.clear();
      await upsertPreparedRows(runner, 'telephony', prepared, at);
      upserts.push(queries.at(-1)!);
    }
    const [first, second] = upserts.map((sent) => ('sql' in sent ? sent : undefined));
    expect(first?.options?.prepared).toBe(true);
    expect(first?.sql.startsWith('INSERT')).toBe(true);
    expect(second?.sql).toBe(first?.sql);
  });
});

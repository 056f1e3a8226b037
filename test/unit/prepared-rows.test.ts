import type { CompiledQuery, QueryResult } from 'kysely';
import { describe, expect, it } from 'vitest';
import { copyPayloadOf } from '../../src/db/copy-payload.js';
import { preparedStatementName } from '../../src/db/prepared-query.js';
import {
  PreparedRows,
  rowKey,
  upsertPreparedRows,
  type QueryRunner,
} from '../../src/db/data-loader.js';
import { SIP_ENDPOINTS, TRUNK_CALLS, type DataTableSpec } from '../../src/db/table-specs.js';
import { trunkCallRow } from '../support/load-rows.js';
import { parseListBody } from '../../src/api/received-json.js';
import { RecordJson } from '../../src/util/record-json.js';

/** A QueryRunner that keeps the queries it is given and answers each with no rows. */
function recordingRunner(): { runner: QueryRunner; queries: CompiledQuery[] } {
  const queries: CompiledQuery[] = [];
  const runner: QueryRunner = {
    executeQuery: <R>(query: CompiledQuery) => {
      queries.push(query);
      return Promise.resolve({ rows: [] as R[], numAffectedRows: 0n } as QueryResult<R>);
    },
  };
  return { runner, queries };
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
    const fromBytes = new PreparedRows(spec, 'copy');
    const fromText = new PreparedRows(spec, 'copy');
    for (const [index, record] of records.entries()) {
      const raw = new RecordJson(record.bytes, record.text!, record.plainBytes === true);
      fromBytes.add({ ...endpoint(`e${index}`, 'a'), raw });
      fromText.add({ ...endpoint(`e${index}`, 'a'), raw: record.text });
    }
    expect(fromBytes.copyText.toString()).toBe(fromText.copyText.toString());
    const raws = fromBytes.copyText
      .toString()
      .split('\n')
      .slice(0, 3)
      .map((line) => line.split('\t').at(-1));
    expect(raws).toEqual(['{"id":"é1"}', '{\\n"id":"e2"}', '{"id":"\\\\\\\\e3\\\\t"}']);
  });

  it('holds COPY lines for the copy loader and the rows for the insert loader', () => {
    const copy = new PreparedRows(spec, 'copy');
    const insert = new PreparedRows(spec, 'insert');
    const row = endpoint('e1', 'tab\there');
    copy.add(row);
    insert.add(row);
    expect(copy.keys).toEqual(['A\u0001e1']);
    expect(copy.rows).toEqual([]);
    const fields = copy.copyText.toString().split('\n')[0]!.split('\t');
    expect(copy.copyText.toString().endsWith('\n')).toBe(true);
    expect(fields).toHaveLength(spec.columns.length);
    expect(fields[spec.columns.indexOf('alias')]).toBe('tab\\there');
    expect(fields[spec.columns.indexOf('sip_registered')]).toBe('f');
    expect(fields[spec.columns.indexOf('raw')]).toBe('{"id":"e1"}');
    expect(insert.rows).toEqual([row]);
    expect(insert.copyText.toString()).toBe('');
  });

  it('starts each COPY line of a table that is not a snapshot with a synced_at placeholder', () => {
    const calls = new PreparedRows(TRUNK_CALLS, 'copy');
    calls.add(trunkCallRow('c1'));
    const fields = calls.copyText.toString().split('\n')[0]!.split('\t');
    expect(calls.copyColumns()[0]).toBe('"synced_at"');
    expect(fields).toHaveLength(TRUNK_CALLS.columns.length + 1);
    expect(fields[0]).toBe('1970-01-01T00:00:00.000000Z');
    expect(fields[1 + TRUNK_CALLS.columns.indexOf('call_uuid')]).toBe('c1');
  });

  it('sends a batch asked to go directly as a COPY into the table, stamped, after a savepoint', async () => {
    const calls = new PreparedRows(TRUNK_CALLS, 'copy');
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
    expect(firstWords(payload.before)).toEqual(['savepoint']);
    const stamps = Buffer.concat(payload.chunks())
      .toString('utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split('\t')[0]);
    expect(stamps).toEqual(['2026-11-21T00:00:00.500000Z', '2026-11-21T00:00:00.500000Z']);
  });

  it('sends the last row of each key once, in COPY text, one line per row', async () => {
    const prepared = new PreparedRows(spec, 'copy');
    for (const row of [endpoint('e1', 'old'), endpoint('e2', 'two'), endpoint('e1', 'new')])
      prepared.add(row);
    const { runner, queries } = recordingRunner();
    const result = await upsertPreparedRows(runner, 'telephony', prepared, '2026-11-21T00:00:00Z');
    expect(result.upserted).toBe(2);
    const copies = queries.map((query) => copyPayloadOf(query)).filter((p) => p !== undefined);
    expect(copies).toHaveLength(1);
    const aliases = String(copies[0]!.data)
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
      const prepared = new PreparedRows(spec, 'copy');
      prepared.add(endpoint('e1', 'one'));
      return prepared;
    };
    const kinds = (): string[] =>
      queries.map((query) =>
        copyPayloadOf(query) !== undefined ? 'copy' : query.sql.split(' ')[0]!.toLowerCase(),
      );
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
    // Another transaction (another runner) starts with an empty staging table.
    const other = recordingRunner();
    await upsertPreparedRows(other.runner, 'telephony', batch(), '2026-11-21T00:00:00Z');
    expect(copyPayloadOf(other.queries[0]!)!.before).toEqual([]);
  });

  it('sends the upsert from the staging table as a prepared query, the same name every batch', async () => {
    const { runner, queries } = recordingRunner();
    const names: (string | undefined)[] = [];
    for (const at of ['2026-11-21T00:00:00Z', '2026-11-21T01:00:00Z']) {
      const prepared = new PreparedRows(spec, 'copy');
      prepared.add(endpoint('e1', 'one'));
      await upsertPreparedRows(runner, 'telephony', prepared, at);
      names.push(preparedStatementName(queries.at(-1)!));
    }
    expect(names[0]).toMatch(/^telesync_[0-9a-f]{24}$/);
    expect(names[1]).toBe(names[0]);
    // The copy itself is not a prepared statement.
    expect(preparedStatementName(queries[0]!)).toBeUndefined();
  });
});

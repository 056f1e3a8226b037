import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertDataRows, type LoadRow } from '../../src/db/data-loader.js';
import { SIP_ENDPOINTS, TRUNK_CALLS, type DataTableSpec } from '../../src/db/table-specs.js';
import { trunkCallRow as call } from '../support/load-rows.js';
import { bothDatabases, createTestDatabase, type TestDatabase } from '../support/test-database.js';

function endpoint(id: string, alias = 'desk'): LoadRow {
  return {
    account_id: 'A',
    endpoint_id: id,
    username: `user${id}`,
    alias,
    application: '/v1/Account/A/Application/1/',
    resource_uri: `/v1/Account/A/Endpoint/${id}/`,
    sip_uri: `sip:user${id}@phone.example.com`,
    sip_registered: false,
    sip_contact: null,
    sip_expires: null,
    sip_user_agent: null,
    sub_account: null,
    raw: { endpoint_id: id, alias },
  };
}

describe.each(bothDatabases())('upsertDataRows ($description)', (target) => {
  let handle: TestDatabase;
  beforeAll(async () => {
    handle = await createTestDatabase({ target });
  });
  afterAll(async () => {
    await handle?.close();
  });

  const load = (rows: LoadRow[], at: string, spec: DataTableSpec = TRUNK_CALLS) =>
    handle.database.root
      .transaction()
      .execute((trx) => upsertDataRows(trx, handle.database.schema, spec, rows, at));

  it('inserts, skips unchanged rows, and rewrites only changed ones', async () => {
    const { db } = handle.database;
    expect(await load([call('c1'), call('c2')], '2026-11-21T00:00:00Z')).toEqual({
      upserted: 2,
      written: 2,
    });

    // The same content with a new request id is not a change.
    expect(
      await load([call('c1', { api_id: 'req-2' }), call('c2')], '2026-11-21T01:00:00Z'),
    ).toEqual({ upserted: 2, written: 0 });

    expect(await load([call('c1', { total_amount: '0.017' })], '2026-11-21T02:00:00Z')).toEqual({
      upserted: 1,
      written: 1,
    });

    const rows = await db
      .selectFrom('trunk_calls')
      .select(['call_uuid', 'total_amount', 'synced_at', 'changed_at', 'raw', 'end_time'])
      .orderBy('call_uuid')
      .execute();
    expect(rows).toEqual([
      {
        call_uuid: 'c1',
        total_amount: '0.017',
        synced_at: '2026-11-21T02:00:00Z',
        changed_at: '2026-11-21T02:00:00Z',
        raw: {
          call_uuid: 'c1',
          api_id: 'req-1',
          total_amount: '0.017',
          note: 'tab\there "q" \\ back',
        },
        end_time: '2026-11-20T10:01:05.000001Z',
      },
      {
        call_uuid: 'c2',
        total_amount: '0.00850000000001',
        synced_at: '2026-11-21T00:00:00Z',
        changed_at: null,
        raw: {
          call_uuid: 'c2',
          api_id: 'req-1',
          total_amount: '0.00850000000001',
          note: 'tab\there "q" \\ back',
        },
        end_time: '2026-11-20T10:01:05.000001Z',
      },
    ]);
  });

  it('keeps the last of two rows with the same key in one batch', async () => {
    expect(
      await load(
        [call('d1', { total_amount: '1' }), call('d1', { total_amount: '2' })],
        '2026-11-21T00:00:00Z',
      ),
    ).toEqual({
      upserted: 1,
      written: 1,
    });
    const row = await handle.database.db
      .selectFrom('trunk_calls')
      .select('total_amount')
      .where('call_uuid', '=', 'd1')
      .executeTakeFirst();
    expect(row?.total_amount).toBe('2');
  });

  it('compares raw as JSON, less api_id, whatever its spacing and key order', async () => {
    const record = (text: string, apiId: string | null): LoadRow => ({
      ...call('j1'),
      api_id: apiId,
      raw: text,
    });
    const first = '{"call_uuid":"j1","api_id":"req-1","n":1.50,"s":"a\\"b"}';
    expect(await load([record(first, 'req-1')], '2026-11-21T00:00:00Z')).toMatchObject({
      written: 1,
    });
    for (const [text, apiId] of [
      ['{"call_uuid":"j1","api_id":"req-2","n":1.50,"s":"a\\"b"}', 'req-2'],
      ['{ "n": 1.50, "s": "a\\u0022b", "api_id": "req-3", "call_uuid": "j1" }', 'req-3'],
      ['{"call_uuid":"j1","api_id":null,"n":1.50,"s":"a\\"b"}', null],
      ['{"call_uuid":"j1","n":1.50,"s":"a\\"b"}', null],
    ] as const) {
      expect(await load([record(text, apiId)], '2026-11-21T01:00:00Z'), text).toMatchObject({
        written: 0,
      });
    }
    for (const text of [
      '{"call_uuid":"j1","api_id":"req-4","n":2,"s":"a\\"b"}',
      '{"call_uuid":"j1","api_id":"req-5","n":2,"s":"a\\"b","extra":true}',
    ]) {
      expect(await load([record(text, 'req-4')], '2026-11-21T02:00:00Z'), text).toMatchObject({
        written: 1,
      });
    }
  });

  it('keeps numbers in raw digit for digit when given the record text', async () => {
    const text = '{"call_uuid":"big","n":123456789012345678901234567890.000000000000001}';
    await load([{ ...call('big'), raw: text }], '2026-11-21T00:00:00Z');
    const result = await sql<{
      n: string;
    }>`SELECT (raw->'n')::text AS n FROM ${sql.table(`${handle.database.schema}.trunk_calls`)} WHERE call_uuid = 'big'`.execute(
      handle.database.root,
    );
    expect(result.rows[0]?.n).toBe('123456789012345678901234567890.000000000000001');
  });

  it('stamps snapshot rows seen, and restamps only changed ones', async () => {
    const { db } = handle.database;
    expect(
      await load([endpoint('1'), endpoint('2')], '2026-11-21T00:00:00Z', SIP_ENDPOINTS),
    ).toEqual({ upserted: 2, written: 2 });
    await db
      .updateTable('sip_endpoints')
      .set({ deleted_at: '2026-11-21T00:30:00Z' })
      .where('endpoint_id', '=', '2')
      .execute();
    expect(
      await load(
        [endpoint('1', 'front desk'), endpoint('2')],
        '2026-11-21T01:00:00Z',
        SIP_ENDPOINTS,
      ),
    ).toEqual({ upserted: 2, written: 1 });
    const rows = await db
      .selectFrom('sip_endpoints')
      .select([
        'endpoint_id',
        'alias',
        'first_seen_at',
        'last_seen_at',
        'synced_at',
        'changed_at',
        'deleted_at',
      ])
      .orderBy('endpoint_id')
      .execute();
    expect(rows).toEqual([
      {
        endpoint_id: '1',
        alias: 'front desk',
        first_seen_at: '2026-11-21T00:00:00Z',
        last_seen_at: '2026-11-21T01:00:00Z',
        synced_at: '2026-11-21T01:00:00Z',
        changed_at: '2026-11-21T01:00:00Z',
        deleted_at: null,
      },
      {
        endpoint_id: '2',
        alias: 'desk',
        first_seen_at: '2026-11-21T00:00:00Z',
        last_seen_at: '2026-11-21T01:00:00Z',
        synced_at: '2026-11-21T00:00:00Z',
        changed_at: null,
        deleted_at: null,
      },
    ]);
  });

  it('batches in one transaction that change the same row: each sees only its own rows', async () => {
    // Were the staging table not emptied between batches, the third upsert would meet the earlier
    // batches' rows for the same key, and PostgreSQL refuses to update one row twice in a command.
    const written = await handle.database.root.transaction().execute(async (trx) => {
      const counts: number[] = [];
      for (const amount of ['0.1', '0.2', '0.3']) {
        const result = await upsertDataRows(
          trx,
          handle.database.schema,
          TRUNK_CALLS,
          [call('f1', { total_amount: amount })],
          '2026-11-21T00:00:00Z',
        );
        counts.push(result.written);
      }
      return counts;
    });
    expect(written).toEqual([1, 1, 1]);
    const rows = await handle.database.db
      .selectFrom('trunk_calls')
      .select(['call_uuid', 'total_amount'])
      .where('call_uuid', '=', 'f1')
      .execute();
    expect(rows.map((row) => [row.call_uuid, String(row.total_amount)])).toEqual([['f1', '0.3']]);
  });

  it('loads two batches in one transaction without mixing them', async () => {
    const written = await handle.database.root.transaction().execute(async (trx) => {
      const first = await upsertDataRows(
        trx,
        handle.database.schema,
        TRUNK_CALLS,
        [call('e1')],
        '2026-11-21T00:00:00Z',
      );
      const second = await upsertDataRows(
        trx,
        handle.database.schema,
        TRUNK_CALLS,
        [call('e2')],
        '2026-11-21T00:00:00Z',
      );
      return [first.written, second.written];
    });
    expect(written).toEqual([1, 1]);
    const rows = await handle.database.db
      .selectFrom('trunk_calls')
      .select(['call_uuid', 'raw'])
      .where('call_uuid', 'in', ['e1', 'e2'])
      .orderBy('call_uuid')
      .execute();
    expect(
      rows.map((row) => [row.call_uuid, (row.raw as { call_uuid: string }).call_uuid]),
    ).toEqual([
      ['e1', 'e1'],
      ['e2', 'e2'],
    ]);
  });

  it.runIf(target.kind === 'postgres')(
    'keeps one staging table and one prepared upsert per session, across transactions and a rollback',
    async () => {
      const { schema } = handle.database;
      const prepared = await handle.database.root.connection().execute(async (session) => {
        // The session's first staging table and prepared upsert, in a transaction rolled back:
        // the table goes with it, the prepared statement stays and finds the next table.
        await expect(
          session.transaction().execute(async (trx) => {
            await upsertDataRows(trx, schema, TRUNK_CALLS, [call('s8')], '2026-11-22T00:00:00Z');
            throw new Error('given up after the upsert');
          }),
        ).rejects.toThrow('given up');
        for (const [index, at] of ['2026-11-22T00:00:00Z', '2026-11-22T01:00:00Z'].entries()) {
          const result = await session
            .transaction()
            .execute((trx) =>
              upsertDataRows(trx, schema, TRUNK_CALLS, [call(`s${index}`), call('s9')], at),
            );
          expect(result).toEqual({ upserted: 2, written: index === 0 ? 2 : 1 });
        }
        return (
          await sql<{ statement: string }>`
            SELECT statement FROM pg_prepared_statements
            WHERE statement LIKE ${`INSERT INTO "${schema}"."trunk_calls"%`}`.execute(session)
        ).rows;
      });
      expect(prepared).toHaveLength(1);
      expect(prepared[0]!.statement).toContain('ON CONFLICT');
      const rows = await handle.database.db
        .selectFrom('trunk_calls')
        .select('call_uuid')
        .where('call_uuid', 'in', ['s0', 's1', 's9'])
        .orderBy('call_uuid')
        .execute();
      expect(rows.map((row) => row.call_uuid)).toEqual(['s0', 's1', 's9']);
    },
  );
});

describe.each(bothDatabases())(
  'upsertDataRows directly into the table ($description)',
  (target) => {
    let handle: TestDatabase;
    beforeAll(async () => {
      handle = await createTestDatabase({ target });
    });
    afterAll(async () => {
      await handle?.close();
    });

    const load = (rows: LoadRow[], at: string) =>
      handle.database.root.transaction().execute((trx) =>
        upsertDataRows(trx, handle.database.schema, TRUNK_CALLS, rows, at, {
          direct: true,
        }),
      );
    const stored = () =>
      handle.database.db
        .selectFrom('trunk_calls')
        .select(['call_uuid', 'total_amount', 'synced_at', 'changed_at', 'raw'])
        .orderBy('call_uuid')
        .execute();

    it('copies rows the table lacks, and falls back to the upsert on a conflict', async () => {
      expect(await load([call('d1'), call('d2')], '2026-11-21T00:00:00Z')).toEqual({
        upserted: 2,
        written: 2,
        direct: 'written',
      });
      const first = await stored();
      expect(first.map((row) => [row.call_uuid, row.synced_at, row.changed_at])).toEqual([
        ['d1', '2026-11-21T00:00:00Z', null],
        ['d2', '2026-11-21T00:00:00Z', null],
      ]);
      expect(first[0]!.raw).toEqual(JSON.parse(String(call('d1').raw)));

      // The same rows again: the COPY conflicts, the upsert finds nothing changed.
      expect(await load([call('d1'), call('d2')], '2026-11-21T01:00:00.5Z')).toEqual({
        upserted: 2,
        written: 0,
        direct: 'conflict',
      });
      expect(await stored()).toEqual(first);

      // One row changed, one new: both written by the upsert, in the same transaction.
      expect(
        await load(
          [call('d1', { total_amount: '0.017' }), call('d3')],
          '2026-11-21T02:00:00.123456Z',
        ),
      ).toEqual({ upserted: 2, written: 2, direct: 'conflict' });
      const last = await stored();
      expect(
        last.map((row) => [row.call_uuid, row.total_amount, row.synced_at, row.changed_at]),
      ).toEqual([
        ['d1', '0.017', '2026-11-21T02:00:00.123456Z', '2026-11-21T02:00:00.123456Z'],
        ['d2', first[1]!.total_amount, '2026-11-21T00:00:00Z', null],
        ['d3', call('d3').total_amount, '2026-11-21T02:00:00.123456Z', null],
      ]);
    });

    it('upserts a batch that holds a key twice, the last row winning', async () => {
      const result = await load(
        [call('e1', { total_amount: '1.5' }), call('e1', { total_amount: '2.5' })],
        '2026-11-21T03:00:00Z',
      );
      expect(result).toEqual({ upserted: 1, written: 1 });
      const row = (await stored()).find((r) => r.call_uuid === 'e1');
      expect(row?.total_amount).toBe('2.5');
    });
  },
);

import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { CopyPayload, encodeCopyValue } from '../../src/db/copy-payload.js';
import { qualifiedName, quoteIdent } from '../../src/db/identifiers.js';
import { parseRecordBody } from '../../src/api/received-json.js';
import { upsertDataRows } from '../../src/db/data-loader.js';
import { loadConnectionOf } from '../../src/db/load-connection.js';
import { quarantineRecords } from '../../src/db/repositories/rejected-records-repository.js';
import { MESSAGES, POWERPACKS, TRUNK_CALLS } from '../../src/db/table-specs.js';
import { normalizeMessage } from '../../src/normalize/normalize-message.js';
import { normalizePowerpack } from '../../src/normalize/normalize-powerpack.js';
import { payloadDigest } from '../../src/util/payload-digest.js';
import { RecordJson } from '../../src/util/record-json.js';
import { trunkCallRow } from '../support/load-rows.js';
import { bothDatabases, createTestDatabase } from '../support/test-database.js';

const received = (value: object) =>
  parseRecordBody(new TextEncoder().encode(JSON.stringify(value)));

const PACK = {
  uuid: '5ec4c8c9-cd74-42b5-9e41-0d7670d6bb46',
  name: 'My Powerpack',
  local_connect: false,
  application_type: 'XML',
  application_id: 123912833468,
  number_pool: '/v1/Account/A/NumberPool/p/',
  created_on: '2024-02-09T03:52:22.880097813Z',
};

const MESSAGE = {
  message_uuid: '5b40a428-bfc7-4daf-9d06-726c558bf3b8',
  resource_uri: '/v1/Account/A/Message/5b40a428-bfc7-4daf-9d06-726c558bf3b8/',
  message_direction: 'outbound',
  message_state: 'sent',
  message_type: 'sms',
  message_time: '2017-05-22 21:36:14+05:30',
  from_number: '911231231230',
  to_number: '911231231231',
  units: 1,
  total_rate: '0.00250',
  total_amount: '0.00250',
  error_code: null,
  dlt_entity_id: null,
  dlt_template_id: '',
};

describe.each(bothDatabases())('exact values on $description', (target) => {
  it('keeps the microseconds and offset of a timestamp and every digit of an amount', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { db } = handle.database;
      await db
        .insertInto('trunk_calls')
        .values({
          account_id: 'A',
          call_uuid: 'c-1',
          end_time: '2022-03-29 11:10:29.456727+05:30',
          total_amount: '0.00850000000001',
          total_rate: '123456789012345678901234567890.000000000000000000000000000001',
          raw: '{}',
        })
        .execute();
      const row = await db
        .selectFrom('trunk_calls')
        .select(['end_time', 'total_amount', 'total_rate'])
        .executeTakeFirstOrThrow();
      expect(row.end_time).toBe('2022-03-29T05:40:29.456727Z');
      expect(row.total_amount).toBe('0.00850000000001');
      expect(row.total_rate).toBe('123456789012345678901234567890.000000000000000000000000000001');

      // The stored instant is the one the offset names, not a rounded one.
      const same = await sql<{ same: boolean }>`
        SELECT end_time = '2022-03-29 11:10:29.456727+05:30'::timestamptz AS same
          FROM ${sql.table(`${handle.database.schema}.trunk_calls`)}
      `.execute(handle.database.root);
      expect(same.rows[0]?.same).toBe(true);
    } finally {
      await handle.close();
    }
  });

  it('stores the real service\'s shapes exactly: null apart from "", a number as its digits, nanoseconds cut to µs', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { db, schema } = handle.database;
      const pack = normalizePowerpack(received(PACK), { accountId: 'A' });
      const message = normalizeMessage(received(MESSAGE), { accountId: 'A' });
      if (!pack.ok || !message.ok) throw new Error('expected rows');
      const now = new Date().toISOString();
      await handle.database.root.transaction().execute(async (trx) => {
        await upsertDataRows(trx, schema, POWERPACKS, [pack.row], now);
        await upsertDataRows(trx, schema, MESSAGES, [message.row], now);
      });
      const storedPack = await db
        .selectFrom('powerpacks')
        .select(['application_id', 'created_on', 'number_priority', 'sticky_sender'])
        .executeTakeFirstOrThrow();
      expect(storedPack).toEqual({
        application_id: '123912833468',
        created_on: '2024-02-09T03:52:22.880097Z',
        number_priority: null,
        sticky_sender: null,
      });
      const storedMessage = await db
        .selectFrom('messages')
        .select(['error_code', 'dlt_entity_id', 'dlt_template_id', 'conversation_id'])
        .executeTakeFirstOrThrow();
      expect(storedMessage).toEqual({
        error_code: null,
        dlt_entity_id: null,
        dlt_template_id: '',
        conversation_id: null,
      });
    } finally {
      await handle.close();
    }
  });

  it('quarantines an oversize record as its digest and size, a normal one byte for byte', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { db, schema } = handle.database;
      const run = await db
        .insertInto('sync_runs')
        .values({ account_id: 'A', stream: 'messages', command: 'test' })
        .returning('id')
        .executeTakeFirstOrThrow();
      const huge = new TextEncoder().encode(`{"x":"${'y'.repeat(2_000_000)}"}`);
      const small = new TextEncoder().encode('{"x":1}');
      await db.transaction().execute((trx) =>
        quarantineRecords(
          trx,
          schema,
          [
            {
              accountId: 'A',
              stream: 'messages',
              reason: 'too big',
              recordKey: undefined,
              bytes: huge,
            },
            { accountId: 'A', stream: 'messages', reason: 'bad', recordKey: 'k', bytes: small },
          ],
          Number(run.id),
        ),
      );
      const rows = await db
        .selectFrom('rejected_records')
        .select(['reason', 'raw_payload', 'raw_bytes', 'payload_sha256'])
        .orderBy('id')
        .execute();
      expect(rows).toHaveLength(2);
      expect(rows[0]).toEqual({
        reason: `too big [payload of ${huge.byteLength} bytes not stored; sha256 ${payloadDigest(huge)}]`,
        raw_payload: null,
        raw_bytes: null,
        payload_sha256: payloadDigest(huge),
      });
      expect(rows[1]?.raw_payload).toBe('{"x":1}');
      expect(Buffer.from(rows[1]!.raw_bytes!).equals(Buffer.from(small))).toBe(true);
    } finally {
      await handle.close();
    }
  });

  it('returns 64-bit counts as numbers from both drivers', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const result = await sql<{
        n: number;
        big: number;
      }>`SELECT count(*) AS n, 9007199254740991::int8 AS big`.execute(handle.database.root);
      expect(result.rows[0]).toEqual({ n: 1, big: 9007199254740991 });
      await expect(
        sql`SELECT 9007199254740993::int8 AS too_big`.execute(handle.database.root),
      ).rejects.toThrow(/does not fit/);
    } finally {
      await handle.close();
    }
  });

  it('loads rows with COPY inside a transaction, byte for byte', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { database } = handle;
      const table = qualifiedName(database.schema, 'copy_probe');
      await sql
        .raw(
          `CREATE TABLE ${table} (id integer, label text, amount numeric, at timestamptz, doc jsonb)`,
        )
        .execute(database.root);
      const labels = [
        'plain',
        'tab\there',
        'new\nline',
        'back\\slash \\N',
        'quote " and \' ',
        'ünïcødé ☎',
        '',
        null,
      ];
      const rows = labels.map((label, index) => [
        index,
        label,
        '0.00850000000001',
        '2022-03-29 11:10:29.456727+05:30',
        { label },
      ]);
      const data = rows.map((row) => `${row.map(encodeCopyValue).join('\t')}\n`).join('');
      const payload = new CopyPayload(
        table,
        ['id', 'label', 'amount', 'at', 'doc'].map(quoteIdent),
        data,
      );

      await database.root.transaction().execute(async (trx) => {
        const copied = await (await loadConnectionOf(trx)).copyIn(payload);
        expect(copied).toBe(labels.length);
      });

      const back = await sql<{
        id: number;
        label: string | null;
        amount: string;
        at: string;
        doc: { label: string | null };
      }>`
        SELECT id, label, amount, at, doc FROM ${sql.raw(table)} ORDER BY id
      `.execute(database.root);
      expect(back.rows.map((row) => row.label)).toEqual(labels);
      expect(back.rows.map((row) => row.doc.label)).toEqual(labels);
      expect(new Set(back.rows.map((row) => row.amount))).toEqual(new Set(['0.00850000000001']));
      expect(new Set(back.rows.map((row) => row.at))).toEqual(
        new Set(['2022-03-29T05:40:29.456727Z']),
      );
    } finally {
      await handle.close();
    }
  });

  it("stores trunk calls sent as COPY binary exactly as the server reads the same values' text", async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { database } = handle;
      const amounts = [
        '0',
        '-0',
        '-0.00',
        '0.00850',
        '-0.00850',
        '0.0001',
        '1.0000',
        '9999.9999',
        '10000',
        '-1',
        '00012.3400',
        '100000000.00000001',
        '123456789012345678901234567890.000000000000000000000000000001',
        `${'9'.repeat(49)}.${'0'.repeat(49)}1`,
      ];
      const times = [
        '1900-01-01T00:00:00Z',
        '1999-12-31T23:59:59.999999Z',
        '2000-01-01T00:00:00Z',
        '2024-02-29T12:00:00.123Z',
        '2026-08-31T23:59:16.5Z',
        '2199-12-31T23:59:59.000001Z',
        '2022-03-29 11:10:29.456727+05:30',
      ];
      const texts = ['', 'a\tb\\c\nd \\N', 'ünïcødé ☎ 🙂', `${'é'.repeat(40)}${'x'.repeat(40)}`];
      const integers = [-2_147_483_648, 2_147_483_647, 0];
      const rows = amounts.map((amount, index) => {
        const base = trunkCallRow(`c${index}`);
        return {
          ...base,
          total_amount: amount,
          total_rate: amounts[amounts.length - 1 - index]!,
          initiation_time: times[index % times.length]!,
          answer_time: index % 3 === 0 ? null : times[(index + 1) % times.length]!,
          end_time: times[(index + 2) % times.length]!,
          hangup_cause_name: texts[index % texts.length]!,
          parent_call_uuid: index % 2 === 0 ? null : texts[(index + 1) % texts.length]!,
          call_duration: integers[index % integers.length]!,
          billed_duration: index % 4 === 0 ? null : integers[(index + 1) % integers.length]!,
          raw: new RecordJson(
            Buffer.from(JSON.stringify({ call_uuid: `c${index}`, note: 'tab\t"q"' })),
            JSON.stringify({ call_uuid: `c${index}`, note: 'tab\t"q"' }),
            false,
          ),
        };
      });
      // The same rows through COPY binary (direct, then staged by a conflict) and as text values
      // the server parses itself, into a twin table.
      for (const direct of [true, false]) {
        await database.root.transaction().execute((trx) =>
          upsertDataRows(trx, database.schema, TRUNK_CALLS, rows, '2026-11-21T00:00:00.25Z', {
            direct,
          }),
        );
      }
      const twin = qualifiedName(database.schema, 'trunk_calls_twin');
      await sql
        .raw(`CREATE TABLE ${twin} (LIKE ${qualifiedName(database.schema, 'trunk_calls')})`)
        .execute(database.root);
      for (const row of rows) {
        const values = TRUNK_CALLS.columns.map((column) => {
          const value = (row as Record<string, unknown>)[column];
          if (value === null || value instanceof RecordJson) return value?.text ?? null;
          return typeof value === 'number' ? String(value) : (value as string);
        });
        await sql`INSERT INTO ${sql.raw(twin)} (${sql.raw(TRUNK_CALLS.columns.map(quoteIdent).join(', '))}, synced_at)
          VALUES (${sql.join(values)}, '2026-11-21T00:00:00.25Z')`.execute(database.root);
      }
      const asText = (table: string) =>
        sql<{ line: string }>`
          SELECT concat_ws('|', ${sql.raw(TRUNK_CALLS.columns.map((column) => `coalesce(${quoteIdent(column)}::text, '<null>')`).join(', '))}, synced_at::text) AS line
            FROM ${sql.raw(table)} ORDER BY call_uuid`
          .execute(database.root)
          .then((result) => result.rows.map((row) => row.line));
      const loaded = await asText(qualifiedName(database.schema, 'trunk_calls'));
      expect(loaded).toHaveLength(rows.length);
      expect(loaded).toEqual(await asText(twin));
      expect(loaded.join('\n')).toContain('|0.00850|');
    } finally {
      await handle.close();
    }
  });

  it('rolls a COPY back with the transaction it ran in', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { database } = handle;
      const table = qualifiedName(database.schema, 'copy_rollback');
      await sql.raw(`CREATE TABLE ${table} (id integer)`).execute(database.root);
      await expect(
        database.root.transaction().execute(async (trx) => {
          await (await loadConnectionOf(trx)).copyIn(new CopyPayload(table, ['"id"'], '1\n2\n'));
          throw new Error('abandon');
        }),
      ).rejects.toThrow('abandon');
      const count = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.raw(table)}`.execute(
        database.root,
      );
      expect(count.rows[0]?.n).toBe(0);
    } finally {
      await handle.close();
    }
  });
});

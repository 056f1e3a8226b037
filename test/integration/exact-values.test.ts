import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { compileCopy, CopyPayload, encodeCopyValue } from '../../src/db/copy-payload.js';
import { qualifiedName, quoteIdent } from '../../src/db/identifiers.js';
import { bothDatabases, createTestDatabase } from '../support/test-database.js';

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
        const result = await trx.executeQuery(compileCopy(payload));
        expect(result.numAffectedRows).toBe(BigInt(labels.length));
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

  it('rolls a COPY back with the transaction it ran in', async () => {
    const handle = await createTestDatabase({ target });
    try {
      const { database } = handle;
      const table = qualifiedName(database.schema, 'copy_rollback');
      await sql.raw(`CREATE TABLE ${table} (id integer)`).execute(database.root);
      await expect(
        database.root.transaction().execute(async (trx) => {
          await trx.executeQuery(compileCopy(new CopyPayload(table, ['"id"'], '1\n2\n')));
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

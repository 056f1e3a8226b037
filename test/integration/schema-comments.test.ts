import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * BI tools (Metabase, DataGrip, dbt docs) show the COMMENT of each table, view and column. This
 * keeps every one of them commented, so a migration that adds a column without a comment fails
 * here, and checks that the comments of times and amounts say their form.
 */

interface RelationComment {
  relation: string;
  comment: string | null;
}

interface ColumnComment {
  relation: string;
  column: string;
  type: string;
  comment: string | null;
}

/** Tables (plain, partitioned, foreign), views and materialized views. */
const RELATION_KINDS = sql.raw(`('r', 'p', 'f', 'v', 'm')`);

async function relationComments(root: Kysely<unknown>, schema: string) {
  const result = await sql<RelationComment>`
    SELECT c.relname AS relation, obj_description(c.oid, 'pg_class') AS comment
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${schema} AND c.relkind IN ${RELATION_KINDS}
     ORDER BY c.relname
  `.execute(root);
  return result.rows;
}

async function columnComments(root: Kysely<unknown>, schema: string) {
  const result = await sql<ColumnComment>`
    SELECT c.relname AS relation, a.attname AS column,
           format_type(a.atttypid, a.atttypmod) AS type,
           col_description(c.oid, a.attnum) AS comment
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE n.nspname = ${schema} AND c.relkind IN ${RELATION_KINDS}
     ORDER BY c.relname, a.attnum
  `.execute(root);
  return result.rows;
}

const isBlank = (text: string | null): boolean => text === null || text.trim() === '';

/** `table.column` of every column without a comment. */
async function uncommentedColumns(root: Kysely<unknown>, schema: string): Promise<string[]> {
  return (await columnComments(root, schema))
    .filter((column) => isBlank(column.comment))
    .map((column) => `${column.relation}.${column.column}`);
}

// On the harness database: CI runs this file on PostgreSQL and again on PGlite.
describe('comments of the migrated schema', () => {
  let handle: TestDatabase;

  beforeAll(async () => {
    handle = await createTestDatabase();
  });

  afterAll(async () => {
    await handle?.close();
  });

  it('has a comment on every table and view', async () => {
    const relations = await relationComments(handle.database.root, handle.database.schema);
    // The 13 data and bookkeeping tables, 4 views and the 2 migration tables at the time of writing.
    expect(relations.length).toBeGreaterThanOrEqual(19);
    expect(relations.map((r) => r.relation)).toEqual(
      expect.arrayContaining(['trunk_calls', 'billing_daily', 'powerpack_number_priorities']),
    );
    expect(relations.filter((r) => isBlank(r.comment)).map((r) => r.relation)).toEqual([]);
  });

  it('has a comment on every column of every table and view', async () => {
    const columns = await columnComments(handle.database.root, handle.database.schema);
    // 244 at the time of writing.
    expect(columns.length).toBeGreaterThanOrEqual(240);
    expect(await uncommentedColumns(handle.database.root, handle.database.schema)).toEqual([]);
  });

  it('says the form of times and amounts: UTC, and exact or rounded', async () => {
    const columns = await columnComments(handle.database.root, handle.database.schema);
    const problems = columns.flatMap(({ relation, column, type, comment }) => {
      const text = comment ?? '';
      if (type === 'timestamp with time zone' && !/UTC/.test(text))
        return [`${relation}.${column} (timestamptz) does not say UTC`];
      if (type === 'numeric' && !/exact|rounded/.test(text))
        return [`${relation}.${column} (numeric) says neither exact nor rounded`];
      if (/(duration|_seconds)$/.test(column) && !/seconds/.test(text))
        return [`${relation}.${column} does not give its unit (seconds)`];
      return [];
    });
    expect(problems).toEqual([]);
  });

  it("says when the window ledger's status, attempts and rows_stored change, as docs/schema.md does", async () => {
    const columns = await columnComments(handle.database.root, handle.database.schema);
    const ledger = (column: string): string =>
      columns.find((c) => c.relation === 'sync_windows' && c.column === column)?.comment ?? '';
    expect(ledger('status')).toMatch(
      /^planned .*running \(being read: set with the read's first write/,
    );
    expect(ledger('status')).toContain('so a short window may go straight to complete');
    expect(ledger('attempts')).toBe(
      "Full reads started for this slot, counted with each read's first write (count).",
    );
    expect(ledger('rows_stored')).toContain(
      'when the window last completed or was verified, in the same transaction',
    );
  });

  it('gives amounts their meaning, currency and form', async () => {
    const columns = await columnComments(handle.database.root, handle.database.schema);
    const totalAmount = columns.find(
      (c) => c.relation === 'trunk_calls' && c.column === 'total_amount',
    );
    expect(totalAmount?.comment).toBe(
      "Amount billed for the call, in the account's billing currency (the service does not name it in the record); exact decimal as sent, never rounded.",
    );
  });
});

it('would catch a column added later without a comment', async () => {
  const scratch = await createTestDatabase();
  try {
    const { root, schema } = scratch.database;
    await sql`ALTER TABLE ${sql.id(schema, 'trunk_calls')} ADD COLUMN carrier_name text`.execute(
      root,
    );
    await sql`CREATE VIEW ${sql.id(schema, 'calls_per_account')} AS
      SELECT account_id, count(*) AS calls FROM ${sql.id(schema, 'trunk_calls')} GROUP BY 1`.execute(
      root,
    );
    expect(await uncommentedColumns(root, schema)).toEqual([
      'calls_per_account.account_id',
      'calls_per_account.calls',
      'trunk_calls.carrier_name',
    ]);
    const relations = await relationComments(root, schema);
    expect(relations.filter((r) => isBlank(r.comment)).map((r) => r.relation)).toEqual([
      'calls_per_account',
    ]);
  } finally {
    await scratch.close();
  }
});

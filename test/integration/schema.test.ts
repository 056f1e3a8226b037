import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_TABLES, type DataTableSpec } from '../../src/db/table-specs.js';
import { SPEC_RESOURCES, columnOf } from '../support/spec-fields.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

interface ColumnInfo {
  table_name: string;
  column_name: string;
  data_type: string;
  numeric_scale: number | null;
  is_nullable: 'YES' | 'NO';
}

let handle: TestDatabase;
let columns: Map<string, ColumnInfo>;

beforeAll(async () => {
  handle = await createTestDatabase();
  const result = await sql<ColumnInfo>`
    SELECT table_name, column_name, data_type, numeric_scale, is_nullable
      FROM information_schema.columns
     WHERE table_schema = ${handle.database.schema}
  `.execute(handle.database.root);
  columns = new Map(result.rows.map((row) => [`${row.table_name}.${row.column_name}`, row]));
});

afterAll(async () => {
  await handle?.close();
});

function column(table: string, name: string): ColumnInfo | undefined {
  return columns.get(`${table}.${name}`);
}

describe('data tables hold every field of the spec, with the right type', () => {
  for (const resource of SPEC_RESOURCES) {
    describe(resource.table, () => {
      for (const [field, type] of Object.entries(resource.fields)) {
        it(`${field} is stored in ${columnOf(field)} as ${type}`, () => {
          const info = column(resource.table, columnOf(field));
          expect(info, `missing column ${resource.table}.${columnOf(field)}`).toBeDefined();
          expect(info?.data_type).toBe(type);
          // numeric without a scale: nothing is rounded on the way in.
          if (type === 'numeric') expect(info?.numeric_scale).toBeNull();
        });
      }

      // trunk_calls keeps raw as json, its text as received (migration 0011); the others jsonb.
      const rawType = DATA_TABLES.find((spec) => spec.table === resource.table)?.rawType ?? 'jsonb';
      it(`has account_id, raw ${rawType}, synced_at and changed_at`, () => {
        expect(column(resource.table, 'account_id')).toMatchObject({
          data_type: 'text',
          is_nullable: 'NO',
        });
        expect(column(resource.table, 'raw')).toMatchObject({
          data_type: rawType,
          is_nullable: 'NO',
        });
        expect(column(resource.table, 'synced_at')?.data_type).toBe('timestamp with time zone');
        expect(column(resource.table, 'changed_at')?.data_type).toBe('timestamp with time zone');
      });

      it(`is keyed by (${resource.primaryKey.join(', ')})`, async () => {
        const keys = await sql<{ column_name: string }>`
          SELECT kcu.column_name
            FROM information_schema.table_constraints tc
            JOIN information_schema.key_column_usage kcu
              ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
           WHERE tc.table_schema = ${handle.database.schema}
             AND tc.table_name = ${resource.table}
             AND tc.constraint_type = 'PRIMARY KEY'
           ORDER BY kcu.ordinal_position
        `.execute(handle.database.root);
        expect(keys.rows.map((row) => row.column_name)).toEqual(resource.primaryKey);
      });

      if (resource.snapshot) {
        it('tracks first_seen_at, last_seen_at and deleted_at', () => {
          for (const name of ['first_seen_at', 'last_seen_at', 'deleted_at']) {
            expect(column(resource.table, name)?.data_type).toBe('timestamp with time zone');
          }
        });
      }
    });
  }

  it('has no column beyond the spec fields and the documented bookkeeping columns', () => {
    const bookkeeping = new Set([
      'account_id',
      'raw',
      'synced_at',
      'changed_at',
      'first_seen_at',
      'last_seen_at',
      'deleted_at',
    ]);
    // call_streams also keeps the status its status callbacks gave it (migration 0005).
    const fromCallbacks: Record<string, readonly string[]> = {
      call_streams: ['status', 'status_at'],
    };
    for (const resource of SPEC_RESOURCES) {
      const expected = new Set(Object.keys(resource.fields).map(columnOf));
      // The pack response carries api_id beside the 2.4 fields (section 4.4).
      if (resource.table === 'powerpacks') expected.add('api_id');
      const extra = [...columns.values()]
        .filter((info) => info.table_name === resource.table)
        .map((info) => info.column_name)
        .filter((name) => !expected.has(name) && !bookkeeping.has(name))
        .filter((name) => !(fromCallbacks[resource.table] ?? []).includes(name));
      expect(extra, resource.table).toEqual([]);
    }
  });
});

describe('the table specs (src/db/table-specs.ts) and the migrated tables', () => {
  /** Columns the loader sets, or the stream callbacks (call_streams' status), never a normaliser. */
  const notLoaded = (spec: DataTableSpec): string[] => [
    'synced_at',
    'changed_at',
    ...(spec.snapshot ? ['first_seen_at', 'last_seen_at', 'deleted_at'] : []),
    ...(spec.table === 'call_streams' ? ['status', 'status_at'] : []),
  ];

  for (const spec of DATA_TABLES) {
    it(`${spec.table}: every migrated column is one the spec loads or one the loader sets, and back`, () => {
      const migrated = [...columns.values()]
        .filter((info) => info.table_name === spec.table)
        .map((info) => info.column_name)
        .sort();
      expect(migrated, `${spec.table} has no columns: is it migrated?`).not.toEqual([]);
      expect(migrated).toEqual([...spec.columns, ...notLoaded(spec)].sort());
    });

    it(`${spec.table}: the spec's key is the table's primary key`, async () => {
      const keys = await sql<{ column_name: string }>`
        SELECT kcu.column_name
          FROM information_schema.table_constraints tc
          JOIN information_schema.key_column_usage kcu
            ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
         WHERE tc.table_schema = ${handle.database.schema}
           AND tc.table_name = ${spec.table}
           AND tc.constraint_type = 'PRIMARY KEY'
         ORDER BY kcu.ordinal_position
      `.execute(handle.database.root);
      expect(keys.rows.map((row) => row.column_name)).toEqual(spec.key);
    });

    if (spec.copyTypes !== undefined) {
      const copyTypes = spec.copyTypes;
      it(`${spec.table}: each column's COPY binary type is the migrated column's type`, () => {
        const sqlType: Record<string, string> = {
          text: 'text',
          integer: 'integer',
          numeric: 'numeric',
          timestamptz: 'timestamp with time zone',
          json: 'json',
        };
        const migrated = spec.columns.map((name) => [name, column(spec.table, name)?.data_type]);
        const declared = spec.columns.map((name) => [name, sqlType[copyTypes[name] ?? '']]);
        expect(declared).toEqual(migrated);
      });
    }
  }
});

describe('bookkeeping tables', () => {
  const expectations: Record<string, Record<string, string>> = {
    sync_state: {
      account_id: 'text',
      stream: 'text',
      watermark: 'timestamp with time zone',
      cursor: 'jsonb',
      updated_at: 'timestamp with time zone',
    },
    sync_windows: {
      account_id: 'text',
      time_range: 'tstzrange',
      status: 'text',
      total_count: 'integer',
      rows_stored: 'integer',
      attempts: 'integer',
      last_error: 'text',
      updated_at: 'timestamp with time zone',
    },
    sync_runs: {
      stream: 'text',
      account_id: 'text',
      window_start: 'timestamp with time zone',
      window_end: 'timestamp with time zone',
      started_at: 'timestamp with time zone',
      finished_at: 'timestamp with time zone',
      status: 'text',
      requests: 'integer',
      retries: 'integer',
      records_fetched: 'integer',
      records_upserted: 'integer',
      records_rejected: 'integer',
      error: 'text',
    },
    rejected_records: {
      stream: 'text',
      account_id: 'text',
      reason: 'text',
      raw_payload: 'text',
      raw_bytes: 'bytea',
      first_seen_at: 'timestamp with time zone',
      run_id: 'bigint',
    },
    message_refs: {
      account_id: 'text',
      message_uuid: 'text',
      requested_at: 'timestamp with time zone',
      status: 'text',
      attempts: 'integer',
      last_error: 'text',
      fetched_at: 'timestamp with time zone',
    },
    call_stream_refs: {
      account_id: 'text',
      call_uuid: 'text',
      requested_at: 'timestamp with time zone',
      status: 'text',
      attempts: 'integer',
      last_error: 'text',
      fetched_at: 'timestamp with time zone',
    },
  };
  for (const [table, expected] of Object.entries(expectations)) {
    it(`${table} has its columns`, () => {
      for (const [name, type] of Object.entries(expected)) {
        const info = column(table, name);
        expect(info, `${table}.${name}`).toBeDefined();
        expect(
          info?.data_type === 'USER-DEFINED' ? 'tstzrange' : info?.data_type,
          `${table}.${name}`,
        ).toBe(type);
      }
    });
  }

  it('sync_windows accepts only half-open [start, end) ranges and known statuses', async () => {
    const { db } = handle.database;
    await db
      .insertInto('sync_windows')
      .values({ account_id: 'A', slot_start: '2026-01-01', time_range: '[2026-01-01,2026-01-02)' })
      .execute();
    await expect(
      db
        .insertInto('sync_windows')
        .values({
          account_id: 'A',
          slot_start: '2026-01-02',
          time_range: '[2026-01-02,2026-01-03]',
        })
        .execute(),
    ).rejects.toThrow(/check/i);
    await expect(
      db
        .insertInto('sync_windows')
        .values({
          account_id: 'A',
          slot_start: '2026-01-03',
          time_range: '[2026-01-03,2026-01-04)',
          status: 'done' as never,
        })
        .execute(),
    ).rejects.toThrow(/check/i);
    const rows = await db
      .selectFrom('sync_windows')
      .select(['time_range', 'status', 'attempts'])
      .execute();
    expect(rows).toEqual([
      {
        time_range: '["2026-01-01 00:00:00+00","2026-01-02 00:00:00+00")',
        status: 'planned',
        attempts: 0,
      },
    ]);
  });

  it('message_refs queue entries start pending with no attempts', async () => {
    const { db } = handle.database;
    await db
      .insertInto('message_refs')
      .values({ account_id: 'A', message_uuid: 'm-1', requested_by: 'test' })
      .execute();
    const row = await db.selectFrom('message_refs').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 0,
      fetched_at: null,
      last_error: null,
    });
  });
});

describe('powerpack_number_priorities', () => {
  it('has one row per pack, country and service type with the three priorities as columns', async () => {
    const { db } = handle.database;
    await db
      .insertInto('powerpacks')
      .values({
        account_id: 'A',
        uuid: 'pp-1',
        name: 'Pack',
        number_priority: JSON.stringify([
          {
            country_iso: 'US',
            service_type: 'SMS',
            priority: { priority1: 'shortcode', priority2: 'tollfree', priority3: 'longcode' },
          },
          {
            country_iso: 'CA',
            service_type: 'MMS',
            priority: { priority1: 'longcode', priority2: 'shortcode', priority3: 'tollfree' },
          },
        ]),
        raw: '{}',
      })
      .execute();
    const rows = await db
      .selectFrom('powerpack_number_priorities')
      .selectAll()
      .orderBy('position')
      .execute();
    expect(rows).toEqual([
      {
        account_id: 'A',
        powerpack_uuid: 'pp-1',
        powerpack_name: 'Pack',
        position: 1,
        country_iso: 'US',
        service_type: 'SMS',
        priority1: 'shortcode',
        priority2: 'tollfree',
        priority3: 'longcode',
      },
      {
        account_id: 'A',
        powerpack_uuid: 'pp-1',
        powerpack_name: 'Pack',
        position: 2,
        country_iso: 'CA',
        service_type: 'MMS',
        priority1: 'longcode',
        priority2: 'shortcode',
        priority3: 'tollfree',
      },
    ]);
  });
});

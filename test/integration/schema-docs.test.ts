import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { clearOfUtcMidnight } from '../support/utc-days.js';

/**
 * docs/schema.md is the schema guide for BI and finance. This keeps it complete (every table, view
 * and column of the migrated schema documented in its own section, with its type) and its example
 * queries correct (each one runs against the schema, in several session time zones, and the main
 * ones return the rows that the seeded data calls for).
 */

const DOC = readFileSync(new URL('../../docs/schema.md', import.meta.url), 'utf8');
const DOC_SCHEMA = 'telephony';
const MIGRATION_TABLES = ['schema_migrations', 'schema_migrations_lock'];

/** Short names of the column types, as the guide writes them. */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  text: 'text',
  int4: 'integer',
  int8: 'bigint',
  numeric: 'numeric',
  bool: 'boolean',
  jsonb: 'jsonb',
  timestamptz: 'timestamptz',
  date: 'date',
  tstzrange: 'tstzrange',
  bytea: 'bytea',
};

interface CatalogColumn {
  table_name: string;
  column_name: string;
  udt_name: string;
}

interface DocumentedColumn {
  name: string;
  type: string;
}

/** Sections headed "### `name`", each with the column rows of its tables. */
function relationSections(markdown: string): Map<string, DocumentedColumn[]> {
  const sections = new Map<string, DocumentedColumn[]>();
  let current: DocumentedColumn[] | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^(#{1,6}) /.exec(line);
    if (heading !== null) {
      const named = /^### `([a-z0-9_]+)`\s*$/.exec(line);
      current = named === null ? undefined : [];
      if (named !== null) {
        if (sections.has(named[1]!))
          throw new Error(`docs/schema.md: two sections for ${named[1]}`);
        sections.set(named[1]!, current!);
      }
      continue;
    }
    // A column row: "| `name` | `type` | …", padded by Prettier's table alignment.
    const row = /^\|\s*`([a-z0-9_]+)`\s*\|\s*([^|]*?)\s*\|/.exec(line);
    if (current !== undefined && row !== null) {
      current.push({ name: row[1]!, type: row[2]!.replaceAll('`', '').trim() });
    }
  }
  return sections;
}

interface SqlExample {
  /** The heading the block is under, e.g. "6.1 Daily totals …". */
  heading: string;
  text: string;
}

/** Every fenced ```sql block, with the heading it is under. */
function sqlExamples(markdown: string): SqlExample[] {
  const examples: SqlExample[] = [];
  let heading = '';
  let block: string[] | undefined;
  for (const line of markdown.split('\n')) {
    if (block !== undefined) {
      if (line.trim() === '```') {
        examples.push({ heading, text: block.join('\n') });
        block = undefined;
      } else {
        block.push(line);
      }
      continue;
    }
    if (line.trim() === '```sql') {
      block = [];
      continue;
    }
    const title = /^#{1,6} (.*)$/.exec(line);
    if (title !== null) heading = title[1]!.trim();
  }
  if (block !== undefined) throw new Error('docs/schema.md: an unclosed ```sql block');
  return examples;
}

let handle: TestDatabase;
let catalog: CatalogColumn[];

beforeAll(async () => {
  handle = await createTestDatabase();
  const result = await sql<CatalogColumn>`
    SELECT c.table_name, c.column_name, c.udt_name
      FROM information_schema.columns c
      JOIN information_schema.tables t
        ON t.table_schema = c.table_schema AND t.table_name = c.table_name
     WHERE c.table_schema = ${handle.database.schema}
       AND t.table_type IN ('BASE TABLE', 'VIEW')
       AND NOT (c.table_name = ANY(${MIGRATION_TABLES}::text[]))
     ORDER BY c.table_name, c.ordinal_position
  `.execute(handle.database.root);
  catalog = result.rows;
});

afterAll(async () => {
  await handle?.close();
});

function relations(): string[] {
  return [...new Set(catalog.map((column) => column.table_name))].sort();
}

describe('docs/schema.md documents the whole schema', () => {
  const sections = relationSections(DOC);

  it('finds the tables and views of the migrated schema', async () => {
    const listed = await sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables
       WHERE table_schema = ${handle.database.schema}
         AND NOT (table_name = ANY(${MIGRATION_TABLES}::text[]))
    `.execute(handle.database.root);
    expect(relations()).toEqual(listed.rows.map((row) => row.table_name).sort());
    // The data tables, the views and the bookkeeping tables: 17 at the time of writing.
    expect(relations().length).toBeGreaterThanOrEqual(17);
    expect(relations()).toEqual(
      expect.arrayContaining(['trunk_calls', 'billing_daily', 'sync_windows', 'rejected_records']),
    );
  });

  it('has a section for every table and view', () => {
    const missing = relations().filter((name) => !sections.has(name));
    expect(missing, 'tables or views without a "### `name`" section').toEqual([]);
  });

  it('has no section for a table or view that does not exist', () => {
    const unknown = [...sections.keys()].filter((name) => !relations().includes(name));
    expect(unknown).toEqual([]);
  });

  it('lists every column in the section of its table, with its type', () => {
    const problems: string[] = [];
    for (const name of relations()) {
      const documented = sections.get(name) ?? [];
      const byName = new Map(documented.map((column) => [column.name, column]));
      for (const column of catalog.filter((c) => c.table_name === name)) {
        const entry = byName.get(column.column_name);
        const type = TYPE_NAMES[column.udt_name] ?? column.udt_name;
        if (entry === undefined) problems.push(`${name}.${column.column_name} is not documented`);
        else if (entry.type !== type)
          problems.push(`${name}.${column.column_name} is ${type}, documented as ${entry.type}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('documents no column twice and none that does not exist', () => {
    const problems: string[] = [];
    for (const [name, documented] of sections) {
      const actual = new Set(
        catalog.filter((c) => c.table_name === name).map((c) => c.column_name),
      );
      const seen = new Set<string>();
      for (const column of documented) {
        if (seen.has(column.name)) problems.push(`${name}.${column.name} is documented twice`);
        seen.add(column.name);
        if (!actual.has(column.name)) problems.push(`${name}.${column.name} does not exist`);
      }
    }
    expect(problems).toEqual([]);
  });
});

type Row = Record<string, unknown>;

describe('the example queries of docs/schema.md', () => {
  const examples = sqlExamples(DOC);
  let days: { yesterday: string; before: string; today: string };

  beforeAll(async () => {
    // The examples ask PostgreSQL for "yesterday" long after these days are taken.
    await clearOfUtcMidnight(60_000);
    const { db, root } = handle.database;
    const result = await sql<typeof days>`
      SELECT ((now() AT TIME ZONE 'UTC')::date - 1)::text AS yesterday,
             ((now() AT TIME ZONE 'UTC')::date - 2)::text AS before,
             ((now() AT TIME ZONE 'UTC')::date)::text     AS today
    `.execute(root);
    days = result.rows[0]!;
    const { yesterday: y, before: b, today: t } = days;

    const call = (
      account: string,
      uuid: string,
      endTime: string,
      direction: string,
      billed: number,
      amount: string,
      changedAt: string | null = null,
    ) => ({
      account_id: account,
      call_uuid: uuid,
      end_time: endTime,
      call_direction: direction,
      billed_duration: billed,
      total_amount: amount,
      total_rate: '0.0085',
      raw: JSON.stringify({ call_uuid: uuid, end_time: endTime }),
      ...(changedAt === null ? {} : { synced_at: changedAt, changed_at: changedAt }),
    });
    await db
      .insertInto('trunk_calls')
      .values([
        // Yesterday (UTC), from its very first microsecond to its last minutes.
        call('ACC1', 'c1', `${y} 23:30:00.123456+00:00`, 'outbound', 60, '0.00850000000001'),
        call('ACC1', 'c2', `${y} 00:00:00+00:00`, 'outbound', 90, '0.01275'),
        // 08:00 at +05:30 is 02:30 UTC, still yesterday.
        call('ACC1', 'c3', `${y} 08:00:00+05:30`, 'inbound', 30, '0.1'),
        call('ACC2', 'c9', `${y} 12:00:00+00:00`, 'outbound', 120, '1.5'),
        // The day before, re-rated yesterday; and today's first call, not yesterday's.
        call('ACC1', 'c4', `${b} 10:00:00+00:00`, 'outbound', 45, '0.2', `${y} 03:00:00+00:00`),
        call('ACC1', 'c5', `${t} 00:00:00+00:00`, 'outbound', 10, '0.01'),
      ])
      .execute();

    const runs = await db
      .insertInto('sync_runs')
      .values([
        {
          account_id: 'ACC1',
          stream: 'trunk_calls',
          command: 'schedule',
          status: 'failed',
          started_at: `${b} 00:10:00+00:00`,
          finished_at: `${b} 00:11:00+00:00`,
          gap_start: sql<string>`now() - interval '120 days'`,
          gap_end: sql<string>`now() - interval '90 days'`,
          error: 'the service failed',
        },
        {
          account_id: 'ACC1',
          stream: 'trunk_calls',
          command: 'schedule',
          status: 'succeeded',
          started_at: `${t} 00:10:00+00:00`,
          finished_at: `${t} 00:11:00+00:00`,
          records_fetched: 5,
          records_upserted: 4,
          records_changed: 4,
          records_rejected: 1,
        },
        {
          account_id: 'ACC1',
          stream: 'endpoints',
          command: 'schedule',
          status: 'succeeded',
          started_at: `${t} 00:00:00+00:00`,
          finished_at: `${t} 00:00:01+00:00`,
        },
      ])
      .returning('id')
      .execute();
    const runId = runs[1]!.id;

    await db
      .insertInto('sync_state')
      .values([
        { account_id: 'ACC1', stream: 'trunk_calls', watermark: `${t} 00:05:00+00:00` },
        { account_id: 'ACC1', stream: 'endpoints', watermark: `${t} 00:00:01+00:00` },
      ])
      .execute();

    const window = (
      start: string,
      end: string,
      status: 'running' | 'complete' | 'failed',
      total: number | null,
      stored: number | null,
    ) => ({
      account_id: 'ACC1',
      slot_start: start,
      time_range: `[${start},${end})`,
      status,
      total_count: total,
      rows_stored: stored,
      attempts: 1,
      last_run_id: runId,
      read_at: status === 'complete' ? `${t} 00:10:30+00:00` : null,
      last_error: status === 'failed' ? 'HTTP 503 from the service' : null,
    });
    await db
      .insertInto('sync_windows')
      .values([
        window(`${b} 00:00:00+00`, `${y} 00:00:00+00`, 'complete', 1, 1),
        // Yesterday: the service counted 4 calls, 3 were stored (one was quarantined).
        window(`${y} 00:00:00+00`, `${t} 00:00:00+00`, 'complete', 4, 3),
        window(`${t} 00:00:00+00`, `${t} 00:05:00+00`, 'running', null, null),
      ])
      .execute();
    await sql`
      INSERT INTO ${sql.id(handle.database.schema, 'sync_windows')}
        (account_id, slot_start, time_range, status, attempts, last_error)
      VALUES ('ACC1', date_trunc('day', now()) - interval '100 days',
              tstzrange(date_trunc('day', now()) - interval '100 days',
                                date_trunc('day', now()) - interval '99 days', '[)'),
              'failed', 3, 'HTTP 503 from the service')
    `.execute(root);

    const rejected = (key: string, firstSeen: string) => {
      const bytes = Buffer.from(`{"call_uuid":"${key}","total_amount":12}`);
      return {
        account_id: 'ACC1',
        stream: 'trunk_calls',
        reason: 'total_amount must be decimal text such as "0.00850", not a JSON number',
        record_key: key,
        raw_payload: bytes.toString('utf8'),
        raw_bytes: bytes,
        payload_sha256: createHash('sha256').update(bytes).digest('hex'),
        run_id: runId,
        first_seen_at: firstSeen,
        last_seen_at: firstSeen,
      };
    };
    await db
      .insertInto('rejected_records')
      .values([
        rejected('c-bad', `${y} 00:11:00+00:00`),
        rejected('c-older', `${b} 00:11:00+00:00`),
      ])
      .execute();

    await db
      .insertInto('sip_endpoints')
      .values([
        {
          account_id: 'ACC1',
          endpoint_id: '1001',
          username: 'alice',
          sip_registered: true,
          raw: '{}',
        },
        {
          account_id: 'ACC1',
          endpoint_id: '1002',
          username: 'bob',
          sip_registered: false,
          first_seen_at: `${b} 00:00:00+00:00`,
          last_seen_at: `${b} 00:00:00+00:00`,
          deleted_at: `${y} 00:00:00+00:00`,
          raw: '{}',
        },
      ])
      .execute();
    await db
      .insertInto('verified_caller_ids')
      .values({ account_id: 'ACC1', phone_number: '+14155550100', country: 'US', raw: '{}' })
      .execute();

    await db
      .insertInto('powerpacks')
      .values({
        account_id: 'ACC1',
        uuid: 'pp-1',
        name: 'Main pack',
        number_priority: JSON.stringify([
          {
            country_iso: 'US',
            service_type: 'SMS',
            priority: { priority1: 'shortcode', priority2: 'tollfree', priority3: 'longcode' },
          },
        ]),
        raw: '{}',
      })
      .execute();
    const message = (uuid: string, time: string, pack: string, units: number, amount: string) => ({
      account_id: 'ACC1',
      message_uuid: uuid,
      message_time: time,
      message_direction: 'outbound',
      message_type: 'sms',
      powerpack_id: pack,
      units,
      total_amount: amount,
      carrier_fees: '0.0015',
      raw: '{}',
    });
    await db
      .insertInto('messages')
      .values([
        // 23:10 at +05:30 is 17:40 UTC: yesterday.
        message('m1', `${y} 23:10:00.5+05:30`, 'pp-1', 2, '0.0050'),
        message('m2', `${y} 12:00:00+00:00`, 'pp-1', 1, '0.0025'),
        message('m3', `${y} 13:00:00+00:00`, '', 1, '0.0100'),
      ])
      .execute();

    await db
      .insertInto('call_streams')
      .values([
        {
          account_id: 'ACC1',
          stream_id: 's1',
          call_uuid: 'c1',
          start_time: `${y} 10:00:00+00:00`,
          end_time: `${y} 10:00:21+00:00`,
          bill_duration: 21,
          rounded_bill_duration: 60,
          billed_amount: '0.0030',
          raw: '{}',
        },
        {
          account_id: 'ACC1',
          stream_id: 's2',
          call_uuid: 'c1',
          start_time: `${y} 23:00:00+00:00`,
          end_time: null,
          bill_duration: 0,
          rounded_bill_duration: 0,
          billed_amount: '0',
          raw: '{}',
        },
      ])
      .execute();

    await db
      .insertInto('message_refs')
      .values([
        { account_id: 'ACC1', message_uuid: 'm1', status: 'fetched', attempts: 1 },
        {
          account_id: 'ACC1',
          message_uuid: 'm-missing',
          status: 'not_found',
          attempts: 1,
          last_error: 'the service has no message m-missing',
        },
      ])
      .execute();
    await db
      .insertInto('call_stream_refs')
      .values({ account_id: 'ACC1', call_uuid: 'c1', status: 'pending', requested_by: 'cli' })
      .execute();
    await db
      .insertInto('powerpack_refs')
      .values({ account_id: 'ACC1', powerpack_uuid: 'pp-1', status: 'fetched', attempts: 1 })
      .execute();
  });

  it('has the examples the guide promises', () => {
    const reconciliation = examples.filter((example) => /^6\.\d+ /.test(example.heading));
    expect(reconciliation.length).toBeGreaterThanOrEqual(15);
    for (const example of reconciliation) expect(example.text).toContain(`${DOC_SCHEMA}.`);
  });

  /** Runs every example with the test schema in place of `telephony.`, in a session time zone. */
  async function runExamples(timeZone: string): Promise<Map<string, Row[][]>> {
    const results = new Map<string, Row[][]>();
    for (const example of examples) {
      const text = example.text.replaceAll(`${DOC_SCHEMA}.`, `${handle.database.schema}.`);
      const rows = await handle.database.root
        .transaction()
        .execute(async (trx) => {
          await sql`SELECT set_config('TimeZone', ${timeZone}, true)`.execute(trx);
          return (await sql.raw<Row>(text).execute(trx)).rows;
        })
        .catch((error: unknown) => {
          throw new Error(
            `the example under "${example.heading}" failed (TimeZone ${timeZone}): ${String(error)}\n${text}`,
          );
        });
      results.set(example.heading, [...(results.get(example.heading) ?? []), rows]);
    }
    return results;
  }

  function resultsUnder(results: Map<string, Row[][]>, number: string): Row[][] {
    const entry = [...results].find(([heading]) => heading.startsWith(`${number} `));
    expect(entry, `no example under a heading "${number} …"`).toBeDefined();
    return entry![1];
  }

  // UTC, and the two ends of the world: "yesterday" must be the UTC day before today in each.
  for (const timeZone of ['UTC', 'Pacific/Kiritimati', 'Pacific/Pago_Pago']) {
    it(`run and return the expected rows with the session in ${timeZone}`, async () => {
      const results = await runExamples(timeZone);
      const { yesterday, before } = days;

      const [fromView, fromTable] = resultsUnder(results, '6.1');
      expect(fromView).toEqual([
        {
          day: yesterday,
          account_id: 'ACC1',
          direction: 'inbound',
          calls: 1,
          billed_seconds: 30,
          billed_minutes: '0.5000',
          total_amount: '0.1',
        },
        {
          day: yesterday,
          account_id: 'ACC1',
          direction: 'outbound',
          calls: 2,
          billed_seconds: 150,
          billed_minutes: '2.5000',
          total_amount: '0.02125000000001',
        },
        {
          day: yesterday,
          account_id: 'ACC2',
          direction: 'outbound',
          calls: 1,
          billed_seconds: 120,
          billed_minutes: '2.0000',
          total_amount: '1.5',
        },
      ]);
      expect(fromTable).toEqual(
        fromView!.map(({ account_id, direction, calls, billed_seconds, total_amount }) => ({
          account_id,
          direction,
          calls,
          billed_seconds,
          total_amount,
        })),
      );

      expect(resultsUnder(results, '6.2')[0]).toEqual([
        expect.objectContaining({
          account_id: 'ACC1',
          yesterday_fully_read: true,
          service_count: 4,
          rows_stored: 3,
          windows_not_complete: 0,
        }),
      ]);

      const windows = resultsUnder(results, '6.3')[0]!;
      expect(windows).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            status: 'complete',
            service_count: 4,
            rows_stored: 3,
            rows_now: 3,
            reconciles: false,
          }),
          expect.objectContaining({
            status: 'complete',
            service_count: 1,
            rows_stored: 1,
            rows_now: 1,
            reconciles: true,
          }),
        ]),
      );

      const notComplete = resultsUnder(results, '6.4')[0]!;
      expect(notComplete.map((row) => [row.status, row.past_horizon])).toEqual([
        ['failed', true],
        ['running', false],
      ]);

      expect(resultsUnder(results, '6.5')[0]).toEqual([
        expect.objectContaining({
          account_id: 'ACC1',
          billing_day: before,
          call_uuid: 'c4',
          total_amount: '0.2',
        }),
      ]);

      expect(resultsUnder(results, '6.6')[0]).toEqual([
        expect.objectContaining({
          account_id: 'ACC1',
          stream: 'trunk_calls',
          record_key: 'c-bad',
          raw_payload: '{"call_uuid":"c-bad","total_amount":12}',
          occurrences: 1,
        }),
      ]);

      const gaps = resultsUnder(results, '6.7')[0]!;
      expect(gaps.map((row) => row.why)).toEqual([
        'watermark fell behind the 90-day horizon',
        'window never completed: failed',
      ]);

      const [endpoints, deleted] = resultsUnder(results, '6.8');
      expect(endpoints).toEqual([
        expect.objectContaining({
          account_id: 'ACC1',
          current_endpoints: 1,
          registered: 1,
          deleted_endpoints: 1,
        }),
      ]);
      expect(deleted).toEqual([expect.objectContaining({ endpoint_id: '1002', username: 'bob' })]);

      const [perPack, messagesDaily] = resultsUnder(results, '6.9');
      expect(perPack).toEqual([
        {
          account_id: 'ACC1',
          powerpack_id: '',
          powerpack_name: null,
          messages: 1,
          units: 1,
          total_amount: '0.0100',
          carrier_fees: '0.0015',
        },
        {
          account_id: 'ACC1',
          powerpack_id: 'pp-1',
          powerpack_name: 'Main pack',
          messages: 2,
          units: 3,
          total_amount: '0.0075',
          carrier_fees: '0.0030',
        },
      ]);
      expect(messagesDaily).toEqual([
        {
          day: yesterday,
          account_id: 'ACC1',
          direction: 'outbound',
          message_type: 'sms',
          messages: 3,
          units: 4,
          total_amount: '0.0175',
          carrier_fees: '0.0045',
        },
      ]);

      expect(resultsUnder(results, '6.10')[0]).toEqual([
        {
          day: yesterday,
          account_id: 'ACC1',
          streams: 2,
          bill_seconds: 21,
          rounded_bill_seconds: 60,
          rounded_bill_minutes: '1.0000',
          billed_amount: '0.0030',
          still_running: 1,
        },
      ]);

      const freshness = resultsUnder(results, '6.11')[0]!;
      expect(freshness.map((row) => [row.account_id, row.stream, row.last_run_status])).toEqual([
        ['ACC1', 'endpoints', 'succeeded'],
        ['ACC1', 'trunk_calls', 'succeeded'],
      ]);
      expect(freshness.every((row) => row.watermark !== null && row.last_success_at !== null)).toBe(
        true,
      );

      const lookups = resultsUnder(results, '6.12')[0]!;
      expect(lookups.map((row) => [row.queue, row.key, row.status])).toEqual([
        ['call_stream_refs', 'c1', 'pending'],
        ['message_refs', 'm-missing', 'not_found'],
      ]);
    });
  }
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceivedList, ReceivedRecord } from '../../src/api/received-json.js';
import { TelephonyClient } from '../../src/api/telephony-client.js';
import { HttpTransport } from '../../src/api/transport.js';
import { createSyncDependencies } from '../../src/app/app-services.js';
import { loadConfig } from '../../src/config/load-config.js';
import { findSyncState } from '../../src/db/repositories/sync-state-repository.js';
import { advanceWatermark } from '../../src/db/repositories/sync-state-repository.js';
import { findStreamStatus } from '../../src/db/repositories/status-repository.js';
import type { DataTableName } from '../../src/db/table-specs.js';
import type { StreamName } from '../../src/domain/streams.js';
import { ONE_TRANSACTION_PER_UNIT } from '../../src/load/batch-loader.js';
import { planSchedule } from '../../src/scheduler/schedule-plan.js';
import { receiveRecords } from '../../src/sync/receive-records.js';
import { runStream, type SyncDependencies } from '../../src/sync/run-stream.js';
import { summedPreview } from '../../src/sync/run-preview.js';
import { oneRound, type StreamDefinition } from '../../src/sync/stream-definition.js';
import { findStream, STREAMS } from '../../src/sync/stream-registry.js';
import { findStreamState, resetStreamState, statusSource } from '../../src/sync/stream-state.js';
import { createLogger } from '../../src/util/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * A stream the product does not have, declared in one object as a new stream's file would declare
 * it: it gets the lock, its sync_runs row, the quarantine, its watermark, status, state show and
 * reset, the dry run and a schedule entry from the registry and the runner alone. If any of those
 * still kept a map of the streams, this stream would be missing from it and the test would fail.
 */

const ACCOUNT = 'MA_SEVENTH';
// The test's own stream and table are not among the product's names; only the casts say so.
const WIDGETS = 'widgets' as StreamName;

function widgetRecord(value: Record<string, unknown>): ReceivedRecord {
  const text = JSON.stringify(value);
  return { bytes: new TextEncoder().encode(text), value, text };
}

/** The fake service's widgets: the second has no name, so it is quarantined. */
const SERVICE_WIDGETS = [
  { widget_id: 'w-1', name: 'first' },
  { widget_id: 'w-2', name: 42 },
  { widget_id: 'w-3', name: 'third' },
];

/** Pages of two, as a client's page generator yields them; waits for `gate` before the first. */
async function* widgetPages(gate: Promise<void>): AsyncGenerator<ReceivedList> {
  await gate;
  for (let offset = 0; offset < SERVICE_WIDGETS.length; offset += 2) {
    yield {
      apiId: undefined,
      meta: {
        limit: 2,
        offset,
        total_count: SERVICE_WIDGETS.length,
        next: null,
        previous: null,
      },
      records: SERVICE_WIDGETS.slice(offset, offset + 2).map(widgetRecord),
    };
  }
}

let releasePages: () => void = () => undefined;
let pagesGate = Promise.resolve();

/** The seventh stream: everything it is, in one object. */
const WIDGETS_STREAM: StreamDefinition<'all widgets'> = {
  name: WIDGETS,
  description: 'widgets of the fake service (full list)',
  table: {
    table: 'widgets' as DataTableName,
    key: ['account_id', 'widget_id'],
    columns: ['account_id', 'widget_id', 'name', 'raw'],
    snapshot: false,
  },
  defaultSchedule: '*/7 * * * *',
  state: { kind: 'snapshot' },
  normalize: (record, context) => {
    const value = record.value as { widget_id: string; name: unknown };
    if (typeof value.name !== 'string') {
      return {
        ok: false,
        rejection: { stream: WIDGETS, field: 'name', reason: 'name is not text' },
      };
    }
    return {
      ok: true,
      key: value.widget_id,
      row: {
        account_id: context.accountId,
        widget_id: value.widget_id,
        name: value.name,
        raw: record.text,
      },
    };
  },
  batching: () => ONE_TRANSACTION_PER_UNIT,
  plan: () => Promise.resolve({ rounds: oneRound(['all widgets' as const]) }),
  async readUnit(run, _unit, loader) {
    for await (const page of widgetPages(pagesGate))
      await receiveRecords(run, page.records, this.normalize, loader);
    await loader.commit((trx, syncedAt) => advanceWatermark(trx, run.accountId, WIDGETS, syncedAt));
    run.stats.windowsCompleted++;
  },
  preview: (_database, accountId) =>
    Promise.resolve(
      summedPreview(
        {
          accountId,
          stream: WIDGETS,
          mode: 'sync',
          range: undefined,
          windows: [],
          lookupsDue: null,
        },
        1,
      ),
    ),
};

describe('a seventh stream declared in one object', () => {
  let handle: TestDatabase;
  let deps: SyncDependencies;
  let transport: HttpTransport;
  let client: TelephonyClient;

  beforeAll(async () => {
    handle = await createTestDatabase();
    const { database } = handle;
    await sql`
      CREATE TABLE ${sql.id(database.schema, 'widgets')} (
        account_id text NOT NULL,
        widget_id text NOT NULL,
        name text NOT NULL,
        raw jsonb NOT NULL,
        synced_at timestamptz NOT NULL DEFAULT now(),
        changed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, widget_id)
      )`.execute(database.db);
    const config = loadConfig({ TELESYNC_AUTH_ID: ACCOUNT, TELESYNC_AUTH_TOKEN: 'token' });
    const log = createLogger({ level: 'silent', secrets: [], pretty: false });
    // The composition root's dependencies, given the registry with the seventh stream added.
    deps = {
      ...createSyncDependencies(config, database, log, 1),
      streams: [...STREAMS, WIDGETS_STREAM],
    };
    // Never asked: the widgets come from the stream's own page generator.
    transport = new HttpTransport({
      baseUrl: 'http://127.0.0.1:9',
      authId: ACCOUNT,
      authToken: 'token',
      maxRps: 1,
      concurrency: 1,
      timeoutMs: 1_000,
      maxRetries: 0,
    });
    client = new TelephonyClient(transport, ACCOUNT);
  });
  afterAll(async () => {
    await transport?.close();
    await handle?.close();
  });

  it('runs under its lock, records its run, stores its rows, quarantines its rejects and moves its watermark', async () => {
    const { db, schema } = handle.database;
    pagesGate = new Promise((resolve) => (releasePages = resolve));
    const first = runStream(deps, client, { stream: WIDGETS, command: 'test', lockWaitMs: 0 });
    // The first run holds the stream's lock while its pages wait: a second run skips.
    await expect
      .poll(
        async () =>
          (
            await db
              .selectFrom('sync_runs')
              .select('status')
              .where('stream', '=', WIDGETS)
              .where('status', '=', 'running')
              .execute()
          ).length,
      )
      .toBe(1);
    const second = await runStream(deps, client, {
      stream: WIDGETS,
      command: 'test',
      lockWaitMs: 0,
    });
    expect(second.status).toBe('skipped');
    expect(second.error).toContain('another telesync run of widgets');
    releasePages();
    const result = await first;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe('succeeded');

    const run = await db
      .selectFrom('sync_runs')
      .selectAll()
      .where('id', '=', result.runId!)
      .executeTakeFirstOrThrow();
    expect({
      stream: run.stream,
      status: run.status,
      fetched: run.records_fetched,
      upserted: run.records_upserted,
      rejected: run.records_rejected,
      planned: run.windows_planned,
      completed: run.windows_completed,
    }).toEqual({
      stream: 'widgets',
      status: 'succeeded',
      fetched: 3,
      upserted: 2,
      rejected: 1,
      planned: 1,
      completed: 1,
    });
    const rows = await sql<{ widget_id: string; name: string }>`
      SELECT widget_id, name FROM ${sql.id(schema, 'widgets')} ORDER BY widget_id`.execute(db);
    expect(rows.rows).toEqual([
      { widget_id: 'w-1', name: 'first' },
      { widget_id: 'w-3', name: 'third' },
    ]);
    const rejected = await db
      .selectFrom('rejected_records')
      .select(['stream', 'reason'])
      .where('account_id', '=', ACCOUNT)
      .execute();
    expect(rejected).toEqual([{ stream: 'widgets', reason: 'name is not text' }]);
    const state = await findSyncState(db, ACCOUNT, WIDGETS);
    expect(state.watermark).toBeDefined();
  });

  it('stops on request before its unit, as every stream does', async () => {
    const stop = new AbortController();
    stop.abort();
    const result = await runStream(deps, client, {
      stream: WIDGETS,
      command: 'test',
      lockWaitMs: 0,
      signal: stop.signal,
    });
    expect(result.status).toBe('stopped');
    expect(result.stats.recordsFetched).toBe(0);
  });

  it('has a status, a state to show and reset, a dry run and a schedule entry', async () => {
    const { database } = handle;
    const status = await findStreamStatus(
      database.db,
      database.schema,
      ACCOUNT,
      statusSource(WIDGETS_STREAM),
    );
    expect({
      stream: status.stream,
      rows: status.rows,
      rejected: status.rejected,
      lastRun: status.lastRun?.status,
      hasWatermark: status.watermark !== null,
    }).toEqual({
      stream: 'widgets',
      rows: 2,
      rejected: 1,
      lastRun: 'stopped',
      hasWatermark: true,
    });

    const shown = await findStreamState(database, ACCOUNT, WIDGETS_STREAM);
    expect(shown.watermark).toBe(status.watermark);
    const reset = await resetStreamState(database, {
      accountId: ACCOUNT,
      stream: WIDGETS_STREAM,
      from: undefined,
    });
    expect({ before: reset.watermarkBefore, after: reset.watermarkAfter }).toEqual({
      before: status.watermark,
      after: null,
    });
    expect((await findStreamState(database, ACCOUNT, WIDGETS_STREAM)).watermark).toBeNull();

    // `sync --dry-run` asks the definition the registry holds under the name.
    const preview = await findStream(deps.streams ?? [], 'widgets')!.preview(
      database,
      ACCOUNT,
      deps.settings,
      0,
      { kind: 'sync' },
    );
    expect({ stream: preview.stream, unknownParts: preview.unknownParts }).toEqual({
      stream: 'widgets',
      unknownParts: 1,
    });

    const plan = planSchedule({}, deps.streams);
    expect(plan.scheduled).toContainEqual({ stream: 'widgets', cron: '*/7 * * * *' });
  });
});

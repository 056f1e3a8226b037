import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceivedList, ReceivedRecord } from '../../src/api/received-json.js';
import { TelephonyClient } from '../../src/api/telephony-client.js';
import { HttpTransport } from '../../src/api/transport.js';
import { createSyncDependencies } from '../../src/app/app-services.js';
import { loadConfig } from '../../src/config/load-config.js';
import { findSyncState } from '../../src/db/repositories/sync-state-repository.js';
import { findLedgerEntries } from '../../src/db/repositories/sync-windows-repository.js';
import { findStreamStatus } from '../../src/db/repositories/status-repository.js';
import type { DataTableName } from '../../src/db/table-specs.js';
import type { LedgerStatus, SlotWindow } from '../../src/domain/ledger-entry.js';
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
import { MICROS_PER_DAY } from '../../src/util/micros.js';
import { StoppedError } from '../../src/util/stopped-error.js';
import { PgBoss } from 'pg-boss';
import type { CliIo } from '../../src/cli/cli-io.js';
import { runCli } from '../../src/cli/main.js';
import { parseAccountJob } from '../../src/jobs/parse-account-job.js';
import { jobSchemaName } from '../../src/jobs/job-settings.js';
import { installJobSchema, openPgBossQueue } from '../../src/jobs/pg-boss-queue.js';
import {
  createCliDatabase,
  createTestDatabase,
  harnessTarget,
  type TestDatabase,
} from '../support/test-database.js';

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
  // Its watermark: the time of its last complete list (the runner writes it).
  plan: () =>
    Promise.resolve({
      rounds: oneRound(['all widgets' as const]),
      watermark: { kind: 'commit-time' },
    }),
  async readUnit(run, _unit, loader, commit) {
    for await (const page of widgetPages(pagesGate))
      await receiveRecords(run, page.records, this.normalize, loader);
    await commit.commit();
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

const GADGETS = 'gadgets' as StreamName;
const FIRST_DAY = Date.UTC(2026, 0, 1) * 1_000;
/** What reading each day's unit does, first day first: the test sets it before each run. */
let gadgetDays: readonly ('complete' | 'fail' | 'stop')[] = [];

class GadgetDayError extends Error {
  override name = 'GadgetDayError';
}

interface GadgetDay {
  readonly window: SlotWindow;
  readonly status: LedgerStatus | undefined;
  readonly does: (typeof gadgetDays)[number];
}

/**
 * A stream with a window ledger, one slot a day, declared in one object: it says what its units
 * are and which slot each reads; the runner writes its planned, running, complete, failed and
 * restored rows and counts its completed days.
 */
const GADGETS_STREAM: StreamDefinition<GadgetDay> = {
  name: GADGETS,
  description: 'gadgets of the fake service, by day',
  table: WIDGETS_STREAM.table,
  defaultSchedule: '*/9 * * * *',
  state: { kind: 'windows' },
  normalize: WIDGETS_STREAM.normalize,
  batching: () => ONE_TRANSACTION_PER_UNIT,
  async plan(run) {
    const key = { accountId: run.accountId, stream: GADGETS };
    const end = FIRST_DAY + gadgetDays.length * MICROS_PER_DAY;
    const ledger = await findLedgerEntries(run.database.db, key, FIRST_DAY, end);
    const days = gadgetDays.map((does, day) => {
      const start = FIRST_DAY + day * MICROS_PER_DAY;
      const window = { slotStart: start, start, end: start + MICROS_PER_DAY };
      return { window, status: ledger.get(start)?.status, does };
    });
    return { rounds: oneRound(days) };
  },
  readUnit(run, { window, does }, _loader, commit) {
    commit.queueWindowChange({ kind: 'running', window, runId: run.runId });
    if (does === 'fail') throw new GadgetDayError('the gadgets of this day did not add up');
    if (does === 'stop') throw new StoppedError();
    const completion = { ...window, totalCount: 0, runId: run.runId };
    commit.queueWindowChange({ kind: 'complete', completion });
    return Promise.resolve();
  },
  failsAlone: (error) => error instanceof GadgetDayError,
  ledgerSlot: ({ window, status }) => ({ window, status }),
  preview: (database, accountId, settings, now, mode) =>
    WIDGETS_STREAM.preview(database, accountId, settings, now, mode),
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
      streams: [...STREAMS, WIDGETS_STREAM, GADGETS_STREAM],
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

  it('a stream with ledger slots gets its planned, failed and restored rows and its counts from the runner', async () => {
    const { db } = handle.database;
    const runOf = async (days: typeof gadgetDays) => {
      gadgetDays = days;
      const result = await runStream(deps, client, {
        stream: GADGETS,
        command: 'test',
        lockWaitMs: 0,
      });
      const row = await db
        .selectFrom('sync_runs')
        .select(['status', 'windows_planned', 'windows_completed'])
        .where('id', '=', result.runId!)
        .executeTakeFirstOrThrow();
      return { status: row.status, planned: row.windows_planned, completed: row.windows_completed };
    };
    const ledger = () =>
      db
        .selectFrom('sync_windows')
        .select(['status', 'attempts', 'last_error'])
        .where('account_id', '=', ACCOUNT)
        .where('stream', '=', GADGETS)
        .orderBy('slot_start')
        .execute();

    // The second day fails alone: the first stays complete, and the run fails at its end.
    expect(await runOf(['complete', 'fail'])).toEqual({
      status: 'failed',
      planned: 2,
      completed: 1,
    });
    expect(await ledger()).toEqual([
      { status: 'complete', attempts: 1, last_error: null },
      { status: 'failed', attempts: 1, last_error: 'the gadgets of this day did not add up' },
    ]);

    // A stop while re-reading the first day puts back its complete row; the days after it are
    // left as they were, a new one as planned.
    expect(await runOf(['stop', 'complete', 'complete'])).toEqual({
      status: 'stopped',
      planned: 3,
      completed: 0,
    });
    expect(await ledger()).toEqual([
      { status: 'complete', attempts: 2, last_error: null },
      { status: 'failed', attempts: 1, last_error: 'the gadgets of this day did not add up' },
      { status: 'planned', attempts: 0, last_error: null },
    ]);
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

describe('a seventh stream handed to the composition roots', () => {
  const streams = [...STREAMS, WIDGETS_STREAM];

  it('has its TELESYNC_SCHEDULE_<NAME> variable, in the environment and the config file', () => {
    const config = loadConfig({ TELESYNC_SCHEDULE_WIDGETS: '*/3 * * * *' }, undefined, streams);
    expect(config.schedule.crons['widgets']).toBe('*/3 * * * *');
    expect(planSchedule(config.schedule.crons, streams).scheduled).toContainEqual({
      stream: 'widgets',
      cron: '*/3 * * * *',
    });
    const fromFile = loadConfig(
      {},
      { path: 'telesync.json', text: '{"schedule": {"widgets": "off"}}' },
      streams,
    );
    expect(planSchedule(fromFile.schedule.crons, streams).off).toContain('widgets');
    expect(() => loadConfig({ TELESYNC_SCHEDULE_WIDGETS: 'often' }, undefined, streams)).toThrow(
      /TELESYNC_SCHEDULE_WIDGETS/,
    );
    // Without it, the variable is no setting of telesync's: the default registry has no widgets.
    expect(loadConfig({ TELESYNC_SCHEDULE_WIDGETS: 'often' }).schedule.crons).not.toHaveProperty(
      'widgets',
    );
  });

  it('its sync jobs are jobs the worker takes', () => {
    const names = streams.map((stream) => stream.name);
    expect(parseAccountJob({ kind: 'sync', accountId: ACCOUNT, stream: 'widgets' }, names)).toEqual(
      { kind: 'sync', accountId: ACCOUNT, stream: 'widgets' },
    );
    expect(
      parseAccountJob(
        { kind: 'sync', accountId: ACCOUNT, stream: 'widgets' },
        STREAMS.map((stream) => stream.name),
      ),
    ).toEqual({ malformed: `sync job of ${ACCOUNT} names an unknown stream: "widgets"` });
  });

  it.skipIf(harnessTarget().kind !== 'postgres')(
    'the worker keeps its schedule tick, and the tick queues a sync job of it for every account',
    async () => {
      const handle = await createTestDatabase();
      const target = harnessTarget();
      if (target.kind !== 'postgres') return;
      const jobSchema = jobSchemaName(handle.database.schema);
      const names = streams.map((stream) => stream.name);
      await installJobSchema({
        connectionString: target.url,
        schema: jobSchema,
        database: handle.database,
        onError: () => undefined,
        streams: names,
      });
      const queue = await openPgBossQueue({
        connectionString: target.url,
        schema: jobSchema,
        database: handle.database,
        leaseSeconds: 30,
        retryLimit: 0,
        retryDelaySeconds: 1,
        maxConnections: 2,
        supervise: true,
        onError: () => undefined,
        streams: names,
      });
      try {
        await queue.keepSchedules([{ stream: WIDGETS, cron: '*/7 * * * *' }], 'UTC', [ACCOUNT]);
        const schedules = await sql<{ key: string; cron: string }>`
          SELECT key, cron FROM ${sql.id(jobSchema, 'schedule')}`.execute(handle.database.root);
        expect(schedules.rows).toEqual([{ key: 'widgets', cron: '*/7 * * * *' }]);
        // A tick as pg-boss's clock sends it.
        const boss = new PgBoss({ connectionString: target.url, schema: jobSchema });
        await boss.start();
        try {
          await boss.send('telesync-ticks', { stream: 'widgets' });
        } finally {
          await boss.stop({ graceful: false });
        }
        let taken: Awaited<ReturnType<typeof queue.take>> | undefined;
        await expect
          .poll(async () => (taken ??= await queue.take())?.job, { timeout: 30_000 })
          .toEqual({ kind: 'sync', accountId: ACCOUNT, stream: 'widgets' });
      } finally {
        await queue.stop();
        await sql`DROP SCHEMA IF EXISTS ${sql.id(jobSchema)} CASCADE`.execute(handle.database.root);
        await handle.close();
      }
    },
    60_000,
  );

  it('is accepted by `telesync sync <name>`, its dry run, `state show <name>` and `status`', async () => {
    const cli = createCliDatabase();
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = {
      env: {
        ...cli.env,
        TELESYNC_AUTH_ID: 'MA_SEVENTH_CLI',
        TELESYNC_AUTH_TOKEN: 'token',
        TELESYNC_BASE_URL: 'http://127.0.0.1:9',
        TELESYNC_LOG_LEVEL: 'silent',
      },
      cwd: process.cwd(),
      isTty: false,
      out: (text) => out.push(text),
      err: (text) => err.push(text),
    };
    try {
      expect(await runCli(['migrate'], io, streams)).toBe(0);
      await cli.inspect((database) =>
        sql`
          CREATE TABLE ${sql.id(database.schema, 'widgets')} (
            account_id text NOT NULL,
            widget_id text NOT NULL,
            name text NOT NULL,
            raw jsonb NOT NULL,
            synced_at timestamptz NOT NULL DEFAULT now(),
            changed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (account_id, widget_id)
          )`.execute(database.db),
      );
      out.length = 0;
      expect(await runCli(['sync', 'widgets', '--dry-run', '--json'], io, streams)).toBe(0);
      expect(JSON.parse(out.join('')) as unknown).toMatchObject({ stream: 'widgets' });
      out.length = 0;
      expect(await runCli(['sync', 'widgets', '--json'], io, streams)).toBe(0);
      expect(JSON.parse(out.join('')) as unknown).toMatchObject({
        stream: 'widgets',
        status: 'succeeded',
      });
      out.length = 0;
      expect(await runCli(['state', 'show', 'widgets', '--json'], io, streams)).toBe(0);
      const shown = JSON.parse(out.join('')) as {
        streams: { stream: string; watermark: string | null }[];
      };
      expect(shown.streams.map((state) => state.stream)).toEqual(['widgets']);
      expect(shown.streams[0]!.watermark).not.toBeNull();
      out.length = 0;
      expect(await runCli(['status', '--json'], io, streams)).toBe(0);
      const status = JSON.parse(out.join('')) as { streams: { stream: string }[] };
      expect(status.streams.map((entry) => entry.stream)).toContain('widgets');
      // The product's registry alone does not know it.
      err.length = 0;
      expect(await runCli(['sync', 'widgets'], io)).toBe(2);
      expect(err.join('')).toContain('unknown stream "widgets"');
    } finally {
      await cli.cleanup();
    }
  }, 60_000);
});

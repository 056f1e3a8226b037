import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { recordFaultFigures } from '../support/fault-report.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import {
  startHostileService,
  trunkCallJson,
  type HostileService,
} from '../support/hostile-service.js';
import { canonicalDecimal, oracleCalls, sumDecimals } from '../support/simulator-oracle.js';
import { createCliDatabase, harnessTarget, type CliDatabase } from '../support/test-database.js';
import { runTelesync, startTelesync, type CommandResult } from '../support/run-telesync.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const ACCOUNT = { authId: 'MA_E2E_FAULTS', authToken: 'tok_fault_harness_7e3a91' };

/** Yesterday as a whole UTC day: [start, end) dates for --from/--to. */
function yesterday(): { from: string; to: string; serviceTime: string } {
  const end = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS);
  const start = new Date(end.getTime() - DAY_MS);
  const day = start.toISOString().slice(0, 10);
  return { from: day, to: end.toISOString().slice(0, 10), serviceTime: `${day} 12:00:00+00:00` };
}

function lastJson(result: CommandResult): Record<string, unknown> {
  const lines = result.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

function envFor(
  url: string,
  database: CliDatabase,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...database.env,
    TELESYNC_BASE_URL: url,
    TELESYNC_AUTH_ID: ACCOUNT.authId,
    TELESYNC_AUTH_TOKEN: ACCOUNT.authToken,
    TELESYNC_MAX_RPS: '2000',
    TELESYNC_LOG_LEVEL: 'warn',
    ...extra,
  };
}

describe('bad records and hostile input', () => {
  let service: HostileService;
  let database: CliDatabase;
  const day = yesterday();
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const call = (n: number, overrides: Record<string, unknown> = {}) =>
    trunkCallJson(
      `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      day.serviceTime,
      overrides,
    );
  const withoutKey = (value: Record<string, unknown>, key: string) => {
    const { [key]: _dropped, ...rest } = value;
    return rest;
  };
  const fiveMegabytes = 'x'.repeat(5 * 1024 * 1024);

  /** Each record with what must become of it. */
  const cases: { name: string; bytes: Buffer; lands: boolean; reason?: RegExp }[] = [
    { name: 'a plain record', bytes: json(call(1)), lands: true },
    {
      name: 'quotes, backslashes and non-ASCII text',
      bytes: json(call(2, { hangup_cause_name: 'He said "hi" \\ back\\slash, ünï ☎' })),
      lands: true,
    },
    {
      name: 'the same key twice with the same value',
      bytes: Buffer.from(`{"total_amount":"0.00850",${JSON.stringify(call(3)).slice(1)}`),
      lands: true,
    },
    {
      name: 'an impossible timestamp',
      bytes: json(call(4, { end_time: '2026-13-45 99:00:00+00:00' })),
      lands: false,
      reason: /end_time/,
    },
    {
      name: 'an amount "abc"',
      bytes: json(call(5, { total_amount: 'abc' })),
      lands: false,
      reason: /total_amount/,
    },
    {
      name: 'an amount "1e309"',
      bytes: json(call(6, { total_amount: '1e309' })),
      lands: false,
      reason: /total_amount/,
    },
    {
      name: 'a missing key',
      bytes: json(withoutKey(call(7), 'hangup_cause_name')),
      lands: false,
      reason: /hangup_cause_name is missing/,
    },
    {
      name: 'a wrong type',
      bytes: json(call(8, { call_duration: '60' })),
      lands: false,
      reason: /call_duration/,
    },
    {
      name: 'a NUL in a text',
      bytes: json(call(9, { from_number: '1415\u0000555' })),
      lands: false,
      reason: /from_number/,
    },
    {
      name: 'invalid UTF-8',
      bytes: Buffer.concat([
        Buffer.from(JSON.stringify(call(10)).slice(0, -1)),
        Buffer.from(',"note":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]),
      lands: false,
      reason: /not valid UTF-8/,
    },
    {
      name: 'a 5 MB field',
      bytes: json(call(11, { hangup_cause_name: fiveMegabytes })),
      lands: false,
      reason: /bytes long|at most/,
    },
    {
      name: 'the same key twice with different values',
      bytes: Buffer.from(`{"total_amount":"9.99",${JSON.stringify(call(12)).slice(1)}`),
      lands: false,
      reason: /appears 2 times/,
    },
    {
      name: 'no call_uuid at all',
      bytes: json(withoutKey(call(13), 'call_uuid')),
      lands: false,
      reason: /call_uuid/,
    },
  ];

  beforeAll(async () => {
    service = await startHostileService(
      cases.map((c) => c.bytes),
      ACCOUNT.authId,
    );
    database = createCliDatabase();
    expect((await runTelesync(['migrate'], envFor(service.url, database))).code).toBe(0);
  });
  afterAll(async () => {
    await service?.close();
    await database?.cleanup();
  });

  it('quarantines each bad record with its reason and exact bytes, stores the rest, and loses nothing', async () => {
    const result = await runTelesync(
      ['backfill', '--from', day.from, '--to', day.to, '--json'],
      envFor(service.url, database),
    );
    expect(result.code, result.stderr).toBe(0);
    const run = lastJson(result);
    const landing = cases.filter((c) => c.lands);
    const rejected = cases.filter((c) => !c.lands);
    expect(run).toMatchObject({
      status: 'succeeded',
      records_fetched: cases.length,
      records_upserted: landing.length,
      records_rejected: rejected.length,
      windows_completed: 1,
    });

    const { stored, quarantine } = await database.inspect(async ({ db }) => ({
      stored: await db
        .selectFrom('trunk_calls')
        .select(['call_uuid', 'hangup_cause_name', 'total_amount'])
        .orderBy('call_uuid')
        .execute(),
      quarantine: await db
        .selectFrom('rejected_records')
        .select(['reason', 'raw_bytes', 'raw_payload', 'record_key'])
        .execute(),
    }));
    expect(stored.map((row) => row.hangup_cause_name)).toEqual([
      'Normal Hangup',
      'He said "hi" \\ back\\slash, ünï ☎',
      'Normal Hangup',
    ]);
    expect(quarantine).toHaveLength(rejected.length);
    for (const bad of rejected) {
      const row = quarantine.find((candidate) =>
        Buffer.from(candidate.raw_bytes).equals(bad.bytes),
      );
      expect(row, `${bad.name} is quarantined byte for byte`).toBeDefined();
      expect(row?.reason, bad.name).toMatch(bad.reason!);
      const text = bad.bytes.toString('utf8');
      expect(row?.raw_payload, bad.name).toBe(bad.name === 'invalid UTF-8' ? null : text);
    }

    // A second read of the same window quarantines the same records once, counting them again.
    const again = await runTelesync(
      ['backfill', '--from', day.from, '--to', day.to, '--json'],
      envFor(service.url, database),
    );
    expect(again.code, again.stderr).toBe(0);
    const occurrences = await database.inspect(({ db }) =>
      db.selectFrom('rejected_records').select('occurrences').execute(),
    );
    expect(occurrences.map((row) => row.occurrences)).toEqual(rejected.map(() => 2));
    recordFaultFigures('hostile_records', {
      records: cases.length,
      stored: stored.length,
      quarantined: quarantine.length,
      losses: cases.length - stored.length - quarantine.length,
      kinds: rejected.map((c) => c.name),
    });
  });
});

describe('a faulty service', () => {
  let sim: RunningSimulator;
  let database: CliDatabase;
  const from = new Date(Date.now() - 5 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 2 * DAY_MS).toISOString().slice(0, 10);

  beforeAll(async () => {
    sim = await startSimulator({ seed: 'fault-mix', calls: 30_000, accounts: [ACCOUNT] });
    database = createCliDatabase();
    expect((await runTelesync(['migrate'], envFor(sim.url, database))).code).toBe(0);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.cleanup();
  });

  it('429s with Retry-After, 5xx, dropped connections, truncated bodies and latency spikes: the data is exact and the retries are counted', async () => {
    sim.setFaults({
      tooManyRequests: 0.1,
      retryAfterSeconds: 1,
      serverErrors: 0.05,
      resets: 0.02,
      truncations: 0.02,
      spikes: 0.05,
      spikeMs: 400,
    });
    const result = await runTelesync(
      ['backfill', '--from', from, '--to', to, '--json'],
      envFor(sim.url, database, { TELESYNC_HTTP_TIMEOUT_MS: '5000' }),
    );
    const injected = sim.stats().faults;
    sim.setFaults({});
    expect(result.code, result.stderr).toBe(0);
    const run = lastJson(result);
    expect(run.status).toBe('succeeded');

    const expected = oracleCalls(sim, Date.parse(from), Date.parse(to));
    const stored = await database.inspect(({ db }) =>
      db
        .selectFrom('trunk_calls')
        .select(['call_uuid', 'total_amount'])
        .where('end_time', '>=', from)
        .where('end_time', '<', to)
        .orderBy('call_uuid')
        .execute(),
    );
    expect(stored.map((row) => row.call_uuid)).toEqual(
      expected.map((call) => call.call_uuid).sort(),
    );
    expect(canonicalDecimal(sumDecimals(stored.map((row) => row.total_amount ?? '0')))).toBe(
      canonicalDecimal(sumDecimals(expected.map((call) => call.total_amount))),
    );

    const row = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select([
          'requests',
          'retries',
          'wait_ms',
          'records_fetched',
          'records_upserted',
          'records_rejected',
        ])
        .where('id', '=', Number(run.run_id))
        .executeTakeFirstOrThrow(),
    );
    const faults = Object.values(injected).reduce((sum, n) => sum + n, 0);
    expect(faults).toBeGreaterThan(0);
    expect(row.retries).toBeGreaterThan(0);
    expect(row.wait_ms).toBeGreaterThan(0);
    expect(row.requests).toBe(Number(run.requests));
    expect(row.records_fetched).toBe(row.records_upserted + row.records_rejected);
    recordFaultFigures('faulty_service', {
      faults_injected: injected,
      retries: row.retries,
      wait_ms: row.wait_ms,
      calls: expected.length,
      losses: expected.length - stored.length,
    });
  });
});

const target = harnessTarget();

describe.skipIf(target.kind !== 'postgres')(
  'a faulty database (PostgreSQL through a proxy that cuts connections)',
  () => {
    let sim: RunningSimulator;
    let database: CliDatabase;
    const from = new Date(Date.now() - 30 * DAY_MS).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 2 * DAY_MS).toISOString().slice(0, 10);

    beforeAll(async () => {
      sim = await startSimulator({ seed: 'fault-db', calls: 40_000, accounts: [ACCOUNT] });
      database = createCliDatabase();
      expect((await runTelesync(['migrate'], envFor(sim.url, database))).code).toBe(0);
    });
    afterAll(async () => {
      await sim?.close();
      await database?.cleanup();
    });

    it('fails the run cleanly when the connection is cut mid-run, shows nothing half-written as complete, and the next run completes', async () => {
      const url = new URL(database.env.DATABASE_URL!);
      const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      const env = envFor(sim.url, database, {
        DATABASE_URL: proxied.toString(),
        TELESYNC_MAX_RPS: '150',
      });

      // SIGKILLed if it has not ended a minute after the cut: a hung run fails the test.
      const child = startTelesync(['backfill', '--from', from, '--to', to, '--json'], env, {
        timeoutMs: 62_500,
      });
      // Let it store a few windows, then cut the database away from under it.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      // Stops accepting and cuts every connection: the database is gone for the rest of the run.
      const cut = proxy.stop();
      const { code, stdout, stderr } = await child.exited;
      await cut;
      expect(code, `stdout: ${stdout}\nstderr: ${stderr}`).toBe(1);
      expect(stdout + stderr).toMatch(/terminat|connection|ECONNRESET|Connection/i);
      expect(stdout + stderr).not.toContain(ACCOUNT.authToken);

      // Straight to PostgreSQL now: every window marked complete holds exactly its rows.
      const windows = await database.inspect(async ({ db, schema, root }) => {
        const rows = await db
          .selectFrom('sync_windows')
          .select([
            'status',
            'total_count',
            'rows_stored',
            sql<string>`lower(time_range)`.as('start'),
            sql<string>`upper(time_range)`.as('end'),
          ])
          .execute();
        const checked = [];
        for (const row of rows) {
          const counted = await sql<{ n: number }>`
          SELECT count(*) AS n FROM ${sql.table(`${schema}.trunk_calls`)} WHERE end_time >= ${row.start}::timestamptz AND end_time < ${row.end}::timestamptz
        `.execute(root);
          checked.push({ ...row, actual: counted.rows[0]?.n });
        }
        return checked;
      });
      const complete = windows.filter((window) => window.status === 'complete');
      expect(complete.length).toBeGreaterThan(0);
      // MAX_RPS 150 keeps the run longer than the 2.5 s before the cut: some windows never finish.
      expect(complete.length).toBeLessThan(windows.length);
      for (const window of complete) {
        expect(window.actual, window.start).toBe(window.rows_stored);
        expect(window.actual, window.start).toBe(
          oracleCalls(sim, Date.parse(window.start), Date.parse(window.end)).length,
        );
      }

      const next = await runTelesync(
        ['backfill', '--from', from, '--to', to, '--json'],
        envFor(sim.url, database),
      );
      expect(next.code, next.stderr).toBe(0);
      const expected = oracleCalls(sim, Date.parse(from), Date.parse(to));
      const stored = await database.inspect(({ db }) =>
        db
          .selectFrom('trunk_calls')
          .select('call_uuid')
          .where('end_time', '>=', from)
          .where('end_time', '<', to)
          .orderBy('call_uuid')
          .execute(),
      );
      expect(stored.map((row) => row.call_uuid)).toEqual(
        expected.map((call) => call.call_uuid).sort(),
      );
      const running = await database.inspect(({ db }) =>
        db.selectFrom('sync_runs').select('id').where('status', '=', 'running').execute(),
      );
      expect(running).toEqual([]);
      recordFaultFigures('faulty_database', {
        windows_complete_at_cut: complete.length,
        calls: expected.length,
        losses: expected.length - stored.length,
      });
    });
  },
);

describe('two processes on the same account and stream', () => {
  let sim: RunningSimulator;
  let database: CliDatabase;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 'fault-two',
      calls: 20_000,
      accounts: [ACCOUNT],
      faults: { latencyMs: 150 },
    });
    database = createCliDatabase();
    expect((await runTelesync(['migrate'], envFor(sim.url, database))).code).toBe(0);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.cleanup();
  });

  it('one runs and the other skips (or, on the embedded database, is refused at the door), saying so; the data is exact', async () => {
    const env = envFor(sim.url, database, { TELESYNC_CONCURRENCY: '4' });
    const results = await Promise.all([
      runTelesync(['sync', 'trunk_calls', '--json'], env),
      runTelesync(['sync', 'trunk_calls', '--json'], env),
    ]);
    if (target.kind === 'postgres') {
      const outcomes = results.map(lastJson);
      expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['skipped', 'succeeded']);
      expect(String(outcomes.find((outcome) => outcome.status === 'skipped')?.error)).toMatch(
        /another telesync run of trunk_calls for account MA_E2E_FAULTS is in progress/,
      );
      expect(results.map((result) => result.code)).toEqual([0, 0]);
    } else {
      // One process at a time may open the embedded database: the second one is told so, at once.
      const refused = results.find((result) => result.code === 1);
      const ran = results.find((result) => result.code === 0);
      expect(refused?.stderr).toMatch(
        /The embedded database in .* is in use by telesync process \d+/,
      );
      expect(lastJson(ran!).status).toBe('succeeded');
    }

    sim.setFaults({});
    const window = await database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(['window_start', 'window_end'])
        .where('status', '=', 'succeeded')
        .executeTakeFirstOrThrow(),
    );
    const expected = oracleCalls(
      sim,
      Date.parse(window.window_start!),
      Date.parse(window.window_end!),
    );
    const stored = await database.inspect(({ db }) =>
      db.selectFrom('trunk_calls').select('call_uuid').orderBy('call_uuid').execute(),
    );
    expect(stored.map((row) => row.call_uuid)).toEqual(
      expected.map((call) => call.call_uuid).sort(),
    );
  });
});

describe('wrong credentials', () => {
  let sim: RunningSimulator;
  let database: CliDatabase;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 'fault-auth', calls: 1_000, accounts: [ACCOUNT] });
    database = createCliDatabase();
    expect((await runTelesync(['migrate'], envFor(sim.url, database))).code).toBe(0);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.cleanup();
  });

  it('give one clear failure per stream, no retry storm, and the token appears in no log, error or table', async () => {
    const wrong = 'tok_wrong_but_secret_55aa';
    sim.resetStats();
    const result = await runTelesync(
      ['sync', '--json'],
      envFor(sim.url, database, { TELESYNC_AUTH_TOKEN: wrong, TELESYNC_LOG_LEVEL: 'debug' }),
    );
    expect(result.code).toBe(1);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // trunk_calls and the snapshots each try once; the lookup queues are empty and send nothing.
    expect(lines.filter((line) => line.status === 'failed').map((line) => line.stream)).toEqual([
      'trunk_calls',
      'endpoints',
      'caller_ids',
    ]);
    expect(sim.stats().requests.total).toBe(3);
    expect(result.stdout + result.stderr).not.toContain(wrong);
    const stored = await database.inspect(async ({ db }) =>
      JSON.stringify(await db.selectFrom('sync_runs').selectAll().execute()),
    );
    expect(stored).toContain('401 authentication failed');
    expect(stored).not.toContain(wrong);
  });
});

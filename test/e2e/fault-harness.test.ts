import { sql } from 'kysely';
import { advisoryLockKey } from '../../src/db/advisory-lock.js';
import { describe, expect, it } from 'vitest';
import { QUARANTINE_PAYLOAD_MAX_BYTES } from '../../src/db/repositories/rejected-records-repository.js';
import { payloadDigest } from '../../src/util/payload-digest.js';
import {
  startSimulator,
  type StartSimulatorOptions,
} from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines, lastJson } from '../support/command-output.js';
import { recordFaultFigures } from '../support/fault-report.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/telesync-process.js';
import { startHostileService, trunkCallJson } from '../support/hostile-service.js';
import {
  canonicalDecimal,
  oracleCalls,
  sortedCallUuids,
  sumDecimals,
} from '../support/simulator-oracle.js';
import { findStoredCalls } from '../support/stored-calls.js';
import { harnessTarget } from '../support/test-database.js';
import { runTelesync, startTelesync } from '../support/run-telesync.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const ACCOUNT = { authId: 'MA_E2E_FAULTS', authToken: 'tok_fault_harness_7e3a91' };

/** Yesterday as a whole UTC day: [start, end) dates for --from/--to. */
function yesterday(): { from: string; to: string; serviceTime: string } {
  const end = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS);
  const start = new Date(end.getTime() - DAY_MS);
  const day = start.toISOString().slice(0, 10);
  return { from: day, to: end.toISOString().slice(0, 10), serviceTime: `${day} 12:00:00+00:00` };
}

/**
 * Every command of this file: ACCOUNT, at a rate the simulator answers at once, and no settle lag,
 * so yesterday's window ends at midnight even in the first minutes after it (with the default lag
 * it would end at 23:55 and the messages that name the window would name that end).
 */
const FAULT_ENV = { TELESYNC_MAX_RPS: '2000', TELESYNC_SETTLE_LAG_MINUTES: '0' };

/** The simulator with ACCOUNT, and a migrated database of the suite's own. */
function useSimulatorFixture(options: Omit<StartSimulatorOptions, 'accounts'>) {
  return useCliFixture({
    service: () => startSimulator({ ...options, accounts: [ACCOUNT] }),
    account: ACCOUNT,
    env: FAULT_ENV,
  });
}

describe('bad records and hostile input', () => {
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
      // JSON.parse keeps the second "n"; PostgreSQL reads the escape of the first all the same.
      name: 'a NUL in a nested key given twice',
      bytes: Buffer.from(
        `${JSON.stringify(call(14)).slice(0, -1)},"extra":{"n":"\\u0000","n":"ok"}}`,
      ),
      lands: false,
      reason: /a key given twice/,
    },
    {
      name: 'no call_uuid at all',
      bytes: json(withoutKey(call(13), 'call_uuid')),
      lands: false,
      reason: /call_uuid/,
    },
  ];

  const cli = useCliFixture({
    service: () =>
      startHostileService(
        cases.map((c) => c.bytes),
        ACCOUNT.authId,
      ),
    account: ACCOUNT,
    env: FAULT_ENV,
  });

  it('quarantines each bad record with its reason and exact bytes, stores the rest, and loses nothing', async () => {
    const result = await runTelesync(
      ['backfill', '--from', day.from, '--to', day.to, '--json'],
      cli.env,
    );
    expect(result.code, result.stderr).toBe(0);
    const run = lastJson(result.stdout);
    const landing = cases.filter((c) => c.lands);
    const rejected = cases.filter((c) => !c.lands);
    expect(run).toMatchObject({
      status: 'succeeded',
      records_fetched: cases.length,
      records_upserted: landing.length,
      records_rejected: rejected.length,
      windows_completed: 1,
    });

    const { stored, quarantine } = await cli.database.inspect(async ({ db }) => ({
      stored: await db
        .selectFrom('trunk_calls')
        .select(['call_uuid', 'hangup_cause_name', 'total_amount'])
        .orderBy('call_uuid')
        .execute(),
      quarantine: await db
        .selectFrom('rejected_records')
        .select(['reason', 'raw_bytes', 'raw_payload', 'record_key', 'payload_sha256'])
        .execute(),
    }));
    expect(stored.map((row) => row.hangup_cause_name)).toEqual([
      'Normal Hangup',
      'He said "hi" \\ back\\slash, ünï ☎',
      'Normal Hangup',
    ]);
    expect(quarantine).toHaveLength(rejected.length);
    for (const bad of rejected) {
      if (bad.bytes.length > QUARANTINE_PAYLOAD_MAX_BYTES) {
        // Too large to keep: its digest and size, never its bytes (one huge record is not two rows).
        const row = quarantine.find(
          (candidate) => candidate.payload_sha256 === payloadDigest(bad.bytes),
        );
        expect(row, `${bad.name} is quarantined as its digest`).toBeDefined();
        expect(row?.reason, bad.name).toMatch(bad.reason!);
        expect(row?.reason, bad.name).toContain(`payload of ${bad.bytes.length} bytes not stored`);
        expect(row?.raw_bytes, bad.name).toBeNull();
        expect(row?.raw_payload, bad.name).toBeNull();
        continue;
      }
      const row = quarantine.find((candidate) =>
        Buffer.from(candidate.raw_bytes ?? []).equals(bad.bytes),
      );
      expect(row, `${bad.name} is quarantined byte for byte`).toBeDefined();
      expect(row?.reason, bad.name).toMatch(bad.reason!);
      const text = bad.bytes.toString('utf8');
      expect(row?.raw_payload, bad.name).toBe(bad.name === 'invalid UTF-8' ? null : text);
    }

    // A second read of the same window quarantines the same records once, counting them again.
    const again = await runTelesync(
      ['backfill', '--from', day.from, '--to', day.to, '--json'],
      cli.env,
    );
    expect(again.code, again.stderr).toBe(0);
    const occurrences = await cli.database.inspect(({ db }) =>
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

describe('a hostile service, each case a real process', () => {
  const day = yesterday();
  const dayBefore = new Date(Date.parse(`${day.from}T00:00:00Z`) - DAY_MS)
    .toISOString()
    .slice(0, 10);
  const call = (n: number, endTime: string, overrides: Record<string, unknown> = {}) =>
    Buffer.from(
      JSON.stringify(
        trunkCallJson(`00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, endTime, overrides),
      ),
    );
  // A full first page (20 good calls), then a call of the day before and a deep one on the second.
  const inWindow = Array.from({ length: 20 }, (_, k) => call(k + 1, day.serviceTime));
  const outsideWindow = call(21, `${dayBefore} 12:00:00+00:00`);
  const deep = Buffer.concat([
    call(22, day.serviceTime).subarray(0, -1),
    Buffer.from(`,"extra":${'['.repeat(20_000)}${']'.repeat(20_000)}}`),
  ]);
  const pastLimit = call(23, day.serviceTime);

  const cli = useCliFixture({
    service: () => startHostileService([...inWindow, outsideWindow, deep], ACCOUNT.authId),
    account: ACCOUNT,
    env: { ...FAULT_ENV, TELESYNC_MAX_RETRIES: '1' },
  });
  const backfill = (env: Record<string, string> = {}) =>
    runTelesync(['backfill', '--from', day.from, '--to', day.to, '--json'], cli.envWith(env));
  const storedCalls = () =>
    cli.database.inspect(({ db }) =>
      db.selectFrom('trunk_calls').select('call_uuid').orderBy('call_uuid').execute(),
    );
  const quarantine = () =>
    cli.database.inspect(({ db }) =>
      db
        .selectFrom('rejected_records')
        .select(['record_key', 'reason'])
        .orderBy('reason')
        .execute(),
    );
  const runningRuns = () =>
    cli.database.inspect(({ db }) =>
      db.selectFrom('sync_runs').select('id').where('status', '=', 'running').execute(),
    );
  const requestsDuring = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
    const before = cli.service.requests();
    const result = await work();
    return [result, cli.service.requests() - before];
  };

  it('records outside the window, past the limit or 20,000 levels deep: quarantined with their reasons, the rest lands', async () => {
    cli.service.setBehaviour({ pastLimit: [pastLimit] });
    const result = await backfill();
    expect(result.code, result.stderr).toBe(0);
    expect(lastJson(result.stdout)).toMatchObject({
      status: 'succeeded',
      records_fetched: 23,
      records_upserted: 20,
      records_rejected: 3,
      windows_completed: 1,
    });
    expect((await storedCalls()).map((row) => row.call_uuid)).toEqual(
      Array.from(
        { length: 20 },
        (_, k) => `00000000-0000-4000-8000-${String(k + 1).padStart(12, '0')}`,
      ),
    );
    const rejected = await quarantine();
    const reasonOf = (n: number) =>
      rejected.find(
        (row) => row.record_key === `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      )?.reason ?? rejected.find((row) => row.record_key === null)?.reason;
    expect(reasonOf(21)).toMatch(
      new RegExp(
        `end_time is outside the requested window \\[${day.from}T00:00:00Z, ${day.to}T00:00:00Z\\): ${dayBefore}T12:00:00Z`,
      ),
    );
    expect(reasonOf(23)).toMatch(/more records than the limit of 20 asked for/);
    expect(rejected.map((row) => row.reason).join('\n')).toMatch(/deep|nest/i);
    expect(result.stderr).toMatch(/1 calls whose end_time is outside the requested window/);
    expect(result.stderr).toMatch(/a page held 21 records for a limit of 20/);
    recordFaultFigures('hostile_window_and_limit', { fetched: 23, stored: 20, quarantined: 3 });
  });

  it('a total_count of 2^53−1: the window fails with the numbers after one request, memory stays small', async () => {
    cli.service.setBehaviour({ totalCount: Number.MAX_SAFE_INTEGER });
    const started = performance.now();
    const [result, requests] = await requestsDuring(() => backfill());
    const seconds = (performance.now() - started) / 1000;
    expect(result.code).toBe(1);
    const run = lastJson(result.stdout);
    expect(run.status).toBe('failed');
    expect(String(run.error)).toContain(
      `total_count ${Number.MAX_SAFE_INTEGER} would take 450359962737050 pages of 20, more than the 50000 allowed for one window`,
    );
    expect(requests).toBe(1);
    expect(await runningRuns()).toEqual([]);
    recordFaultFigures('hostile_total_count', { requests, seconds: Math.round(seconds) });
  });

  it('a meta.next that always advances: followed only up to total_count, the snapshot fails and marks nothing', async () => {
    cli.service.setBehaviour({ endpoints: 'endless' });
    const [result, requests] = await requestsDuring(() =>
      runTelesync(['sync', 'endpoints', '--json'], cli.env),
    );
    expect(result.code).toBe(1);
    expect(String(lastJson(result.stdout).error)).toContain(
      'meta.next still names a page after 40 records of the total_count of 40',
    );
    expect(requests).toBe(2);
    const endpoints = await cli.database.inspect(({ db }) =>
      db.selectFrom('sip_endpoints').select('endpoint_id').execute(),
    );
    expect(endpoints).toEqual([]);
  });

  it("a meta.next naming another account's list: not followed, nothing stored", async () => {
    cli.service.setBehaviour({ endpoints: 'foreign' });
    const [result, requests] = await requestsDuring(() =>
      runTelesync(['sync', 'endpoints', '--json'], cli.env),
    );
    expect(result.code).toBe(1);
    expect(String(lastJson(result.stdout).error)).toMatch(
      /MA_SOMEONE_ELSE.*is not a page of \/v1\/Account\/MA_E2E_FAULTS\/Endpoint\/; not followed/,
    );
    expect(requests).toBe(1);
  });

  it('a Retry-After of an hour, then SIGTERM: the backfill stops within seconds, status stopped, exit 1', async () => {
    cli.service.setBehaviour({ retryAfterSeconds: 3600 });
    const before = cli.service.requests();
    const child = startTelesync(
      ['backfill', '--from', day.from, '--to', day.to, '--json'],
      cli.envWith({ TELESYNC_RETRY_AFTER_MAX_SECONDS: '3600', TELESYNC_MAX_RETRIES: '8' }),
    );
    await waitFor(() => cli.service.requests() > before, {
      what: 'the first request',
      timeoutMs: 30_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const stopAt = performance.now();
    child.kill('SIGTERM');
    const result = await child.exited;
    const stopSeconds = (performance.now() - stopAt) / 1000;
    expect(stopSeconds).toBeLessThan(10);
    expect(result.code).toBe(1);
    expect(lastJson(result.stdout).status).toBe('stopped');
    expect(cli.service.requests() - before).toBe(1);
    expect(await runningRuns()).toEqual([]);
    recordFaultFigures('hostile_retry_after_sigterm', {
      stop_seconds: Math.round(stopSeconds * 10) / 10,
    });
  });

  it('a 40 MB body past a 1 MiB cap: reading stops, the request fails once, nothing stored twice', async () => {
    cli.service.setBehaviour({ bodyBytes: 40 * 1024 * 1024 });
    const quarantinedBefore = (await quarantine()).length;
    const [result, requests] = await requestsDuring(() =>
      backfill({ TELESYNC_MAX_BODY_BYTES: String(1024 * 1024) }),
    );
    expect(result.code).toBe(1);
    expect(String(lastJson(result.stdout).error)).toContain('larger than 1048576 bytes');
    expect(requests).toBe(1);
    expect((await quarantine()).length).toBe(quarantinedBefore);
  });

  it('a redirect: reported as one, never followed, the credentials stay home', async () => {
    cli.service.setBehaviour({ redirectTo: 'http://collector.example/steal' });
    const [result, requests] = await requestsDuring(() => backfill());
    expect(result.code).toBe(1);
    expect(String(lastJson(result.stdout).error)).toContain(
      'a redirect to collector.example, not followed',
    );
    expect(requests).toBe(1);
    expect(`${result.stdout}${result.stderr}`).not.toContain(ACCOUNT.authToken);
  });

  it('an error body that spells the Authorization header in \\u escapes: nothing of it reaches sync_runs or the output', async () => {
    cli.service.setBehaviour({ echoAuthorizationEscaped: 500 });
    const [result, requests] = await requestsDuring(() => backfill());
    expect(result.code).toBe(1);
    expect(requests).toBe(2);
    const credentials = Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64');
    const errors = await cli.database.inspect(({ db }) =>
      db.selectFrom('sync_runs').select('error').where('error', 'is not', null).execute(),
    );
    const latest = String(lastJson(result.stdout).error);
    expect(latest).toContain('you sent [redacted]');
    for (const text of [
      latest,
      result.stdout,
      result.stderr,
      ...errors.map((row) => String(row.error)),
    ]) {
      expect(text).not.toContain(credentials);
      expect(text).not.toContain(ACCOUNT.authToken);
    }
    expect(errors.map((row) => String(row.error))).toContainEqual(
      expect.stringContaining('you sent [redacted]'),
    );
  });
});

describe('a faulty service', () => {
  const cli = useSimulatorFixture({ seed: 'fault-mix', calls: 30_000 });
  const from = new Date(Date.now() - 5 * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(Date.now() - 2 * DAY_MS).toISOString().slice(0, 10);

  it('429s with Retry-After, 5xx, dropped connections, truncated bodies and latency spikes: the data is exact and the retries are counted', async () => {
    cli.service.setFaults({
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
      cli.envWith({ TELESYNC_HTTP_TIMEOUT_MS: '5000' }),
    );
    const injected = cli.service.stats().faults;
    cli.service.setFaults({});
    expect(result.code, result.stderr).toBe(0);
    const run = lastJson(result.stdout);
    expect(run.status).toBe('succeeded');

    const expected = oracleCalls(cli.service, Date.parse(from), Date.parse(to));
    const stored = await findStoredCalls(cli.database, from, to);
    expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));
    expect(canonicalDecimal(sumDecimals(stored.map((row) => row.total_amount ?? '0')))).toBe(
      canonicalDecimal(sumDecimals(expected.map((call) => call.total_amount))),
    );

    const row = await cli.database.inspect(({ db }) =>
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
    const cli = useSimulatorFixture({ seed: 'fault-db', calls: 40_000 });
    const from = new Date(Date.now() - 30 * DAY_MS).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 2 * DAY_MS).toISOString().slice(0, 10);

    it('fails the run cleanly when the connection is cut mid-run, shows nothing half-written as complete, and the next run completes', async () => {
      const url = new URL(cli.database.env.DATABASE_URL!);
      const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      const env = cli.envWith({
        DATABASE_URL: proxied.toString(),
        TELESYNC_MAX_RPS: '150',
      });

      // SIGKILLed if it has not ended a minute after the cut: a hung run fails the test.
      const child = startTelesync(['backfill', '--from', from, '--to', to, '--json'], env, {
        timeoutMs: 62_500,
      });
      // Let it store a window, then cut the database away from under it. Watched straight on
      // PostgreSQL rather than after a fixed delay: on a busy machine the process alone can take
      // seconds to start.
      await waitFor(
        async () =>
          (
            await cli.database.inspect(({ db }) =>
              db
                .selectFrom('sync_windows')
                .select('status')
                .where('status', '=', 'complete')
                .execute(),
            )
          ).length > 0,
        { what: 'a first complete window', timeoutMs: 30_000, intervalMs: 50 },
      );
      // Stops accepting and cuts every connection: the database is gone for the rest of the run.
      const cut = proxy.stop();
      const { code, stdout, stderr } = await child.exited;
      await cut;
      expect(code, `stdout: ${stdout}\nstderr: ${stderr}`).toBe(1);
      expect(stdout + stderr).toMatch(/terminat|connection|ECONNRESET|Connection/i);
      expect(stdout + stderr).not.toContain(ACCOUNT.authToken);

      // Straight to PostgreSQL now: every window marked complete holds exactly its rows.
      const windows = await cli.database.inspect(async ({ db, schema, root }) => {
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
      // MAX_RPS 150 keeps the run going long after its first complete window: some never finish.
      expect(complete.length).toBeLessThan(windows.length);
      for (const window of complete) {
        expect(window.actual, window.start).toBe(window.rows_stored);
        expect(window.actual, window.start).toBe(
          oracleCalls(cli.service, Date.parse(window.start), Date.parse(window.end)).length,
        );
      }

      const next = await runTelesync(['backfill', '--from', from, '--to', to, '--json'], cli.env);
      expect(next.code, next.stderr).toBe(0);
      const expected = oracleCalls(cli.service, Date.parse(from), Date.parse(to));
      const stored = await findStoredCalls(cli.database, from, to);
      expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));
      const running = await cli.database.inspect(({ db }) =>
        db.selectFrom('sync_runs').select('id').where('status', '=', 'running').execute(),
      );
      expect(running).toEqual([]);
      recordFaultFigures('faulty_database', {
        windows_complete_at_cut: complete.length,
        calls: expected.length,
        losses: expected.length - stored.length,
      });
    });

    it('survives pg_terminate_backend of its connections mid-run: the lost lock fails the run, nothing stays running, the next run completes exactly', async () => {
      // A database of its own: the other test of this suite expects a fresh ledger.
      const database = await cli.addDatabase();
      const child = startTelesync(
        ['backfill', '--from', from, '--to', to, '--json'],
        cli.envFor(database, { TELESYNC_MAX_RPS: '150' }),
        { timeoutMs: 62_500 },
      );
      await waitFor(
        async () =>
          (
            await database.inspect(({ db }) =>
              db
                .selectFrom('sync_windows')
                .select('status')
                .where('status', '=', 'complete')
                .execute(),
            )
          ).length > 0,
        { what: 'a first complete window', timeoutMs: 30_000, intervalMs: 50 },
      );
      // The sessions of this process only (other test files share the database): the one holding
      // its run's lock, found by the lock's key, and those that ran queries on its schema.
      const lockKey = advisoryLockKey(
        `telesync:${database.env.TELESYNC_SCHEMA}:${ACCOUNT.authId}:trunk_calls`,
      );
      const terminated = await database.inspect(async ({ root }) => {
        const result = await sql<{ pid: number }>`
          SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'telesync' AND pid <> pg_backend_pid()
            AND datname = current_database()
            AND (pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
                           AND ((classid::bigint << 32) | objid::bigint) = ${lockKey}::bigint)
                 OR query LIKE ${`%${database.env.TELESYNC_SCHEMA}%`})`.execute(root);
        return result.rows.length;
      });
      expect(terminated).toBeGreaterThan(0);
      const { code, stdout, stderr } = await child.exited;
      expect(code, `stdout: ${stdout}\nstderr: ${stderr}`).toBe(1);
      // Ended by its own hand, with its result printed, not by an unhandled 'error' event.
      expect(stderr).not.toMatch(/Unhandled 'error' event|uncaughtException/);
      const run = lastJson(stdout);
      expect(run.status).toBe('failed');
      expect(String(run.error)).toContain('lost the database connection holding the lock');
      const running = await database.inspect(({ db }) =>
        db.selectFrom('sync_runs').select('id').where('status', '=', 'running').execute(),
      );
      expect(running).toEqual([]);

      const next = await runTelesync(
        ['backfill', '--from', from, '--to', to, '--json'],
        cli.envFor(database),
      );
      expect(next.code, next.stderr).toBe(0);
      const expected = oracleCalls(cli.service, Date.parse(from), Date.parse(to));
      const stored = await findStoredCalls(database, from, to);
      expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));
      recordFaultFigures('terminated_backends', { terminated, calls: expected.length });
    });
  },
);

describe('two processes on the same account and stream', () => {
  const cli = useSimulatorFixture({
    seed: 'fault-two',
    calls: 20_000,
    faults: { latencyMs: 150 },
  });

  it('one runs and the other skips (or, on the embedded database, is refused at the door), saying so; the data is exact', async () => {
    const env = cli.envWith({ TELESYNC_CONCURRENCY: '4' });
    const results = await Promise.all([
      runTelesync(['sync', 'trunk_calls', '--json'], env),
      runTelesync(['sync', 'trunk_calls', '--json'], env),
    ]);
    if (target.kind === 'postgres') {
      const outcomes = results.map((result) => lastJson(result.stdout));
      expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['skipped', 'succeeded']);
      expect(String(outcomes.find((outcome) => outcome.status === 'skipped')?.error)).toMatch(
        /another telesync run of trunk_calls for account MA_E2E_FAULTS is in progress/,
      );
      // The skipped one read nothing: it says so and exits 1, the other exits 0.
      const skippedAt = outcomes.findIndex((outcome) => outcome.status === 'skipped');
      expect(results[skippedAt]!.code).toBe(1);
      expect(results[1 - skippedAt]!.code).toBe(0);
      expect(results[skippedAt]!.stderr).toMatch(
        /not synced: trunk_calls \(MA_E2E_FAULTS\), another run held the lock/,
      );
    } else {
      // One process at a time may open the embedded database: the second one is told so, at once.
      const refused = results.find((result) => result.code === 1);
      const ran = results.find((result) => result.code === 0);
      expect(refused?.stderr).toMatch(
        /The embedded database in .* is in use by telesync process \d+/,
      );
      expect(lastJson(ran!.stdout).status).toBe('succeeded');
    }

    cli.service.setFaults({});
    const window = await cli.database.inspect(({ db }) =>
      db
        .selectFrom('sync_runs')
        .select(['window_start', 'window_end'])
        .where('status', '=', 'succeeded')
        .executeTakeFirstOrThrow(),
    );
    const expected = oracleCalls(
      cli.service,
      Date.parse(window.window_start!),
      Date.parse(window.window_end!),
    );
    const stored = await cli.database.inspect(({ db }) =>
      db.selectFrom('trunk_calls').select('call_uuid').orderBy('call_uuid').execute(),
    );
    expect(stored.map((row) => row.call_uuid)).toEqual(sortedCallUuids(expected));
  });
});

describe('wrong credentials', () => {
  const cli = useSimulatorFixture({ seed: 'fault-auth', calls: 1_000 });

  it('give one clear failure, skip the other streams of the account, no retry storm, and the token appears in no log, error or table', async () => {
    const wrong = 'tok_wrong_but_secret_55aa';
    cli.service.resetStats();
    const result = await runTelesync(
      ['sync', '--json'],
      cli.envWith({ TELESYNC_AUTH_TOKEN: wrong, TELESYNC_LOG_LEVEL: 'debug' }),
    );
    expect(result.code).toBe(1);
    const lines = jsonLines(result.stdout);
    // trunk_calls tries once; the account's other streams are not tried after that refusal.
    expect(lines.map((line) => [line.stream, line.status])).toEqual([
      ['trunk_calls', 'failed'],
      ['endpoints', 'skipped'],
      ['caller_ids', 'skipped'],
      ['messages', 'skipped'],
      ['powerpacks', 'skipped'],
      ['call_streams', 'skipped'],
    ]);
    expect(cli.service.stats().requests.total).toBe(1);
    expect(result.stdout + result.stderr).not.toContain(wrong);
    const stored = await cli.database.inspect(async ({ db }) =>
      JSON.stringify(await db.selectFrom('sync_runs').selectAll().execute()),
    );
    expect(stored).toContain('401 authentication failed');
    expect(stored).not.toContain(wrong);
  });
});

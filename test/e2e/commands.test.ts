import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STREAMS } from '../../src/sync/stream-registry.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { startCliFixture, useCliFixture } from '../support/cli-fixture.js';
import { jsonLines } from '../support/command-output.js';
import { harnessTarget } from '../support/test-database.js';
import { canFakeClock, fakedClockEnv } from '../support/faked-clock.js';
import { runTelesync } from '../support/run-telesync.js';
import { horizonStartAt, utcDaysTouched } from '../support/utc-days.js';

/** The UTC date after a YYYY-MM-DD one: a midnight may pass between the test's clock and the run's. */
const nextDay = (date: string) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);

const ACCOUNT = { authId: 'MA_E2E_CLI', authToken: 'tok_e2e_cli_0123456789' };

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-cli', calls: 3_000, accounts: [ACCOUNT] }),
  account: ACCOUNT,
  env: { TELESYNC_MAX_RPS: '2000' },
});

describe('every subcommand explains itself', () => {
  it.each([
    ['migrate'],
    ['sync'],
    ['backfill'],
    ['status'],
    ['lookup', 'messages'],
    ['lookup', 'streams'],
    ['stream', 'start'],
    ['simulate'],
    ['demo'],
  ])('telesync %s --help shows usage and an example, and exits 0', async (...command) => {
    const result = await runTelesync([...command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: telesync /m);
    expect(result.stdout).toMatch(/Examples?:\n\s+\$ telesync /);
  });
});

describe('sync', () => {
  it('runs the named streams and reports each', async () => {
    const result = await runTelesync(['sync', 'trunk_calls', 'endpoints'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^trunk_calls +MA_E2E_CLI {2}succeeded: [\d,]+ fetched/m);
    expect(result.stdout).toMatch(/^endpoints +MA_E2E_CLI {2}succeeded: 45 fetched, 45 stored/m);
  });

  it('refuses an unknown stream, listing the known ones (exit 2)', async () => {
    const result = await runTelesync(['sync', 'calls'], cli.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'unknown stream "calls"; the streams are: trunk_calls, endpoints, caller_ids, messages, powerpacks, call_streams',
    );
  });

  it('names the missing variable when no token is configured (exit 2)', async () => {
    const { TELESYNC_AUTH_TOKEN: _token, ...withoutToken } = cli.env;
    const result = await runTelesync(['sync'], withoutToken);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('TELESYNC_AUTH_TOKEN: is not set, but TELESYNC_AUTH_ID is');
  });

  it('fails with one clear error on wrong credentials, no retry storm, and never prints the token (exit 1)', async () => {
    cli.service.resetStats();
    const result = await runTelesync(['sync', 'trunk_calls', '--json'], {
      ...cli.env,
      TELESYNC_AUTH_TOKEN: 'wrong-token-0123',
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      '401 authentication failed: unknown auth_id or wrong auth_token; check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN',
    );
    expect(cli.service.stats().requests.total).toBe(1);
    expect(result.stdout + result.stderr).not.toContain('wrong-token-0123');
    // Said once on stderr too: the run's line, not the window's as well.
    const errors = jsonLines(result.stderr).filter((line) => line.level === 'error');
    expect(errors.map((line) => String(line.msg).slice(0, 11))).toEqual(['run failed:']);
    expect(errors[0]!.err).toMatchObject({ type: 'ApiError', status: 401 });
    expect(errors[0]!.err).not.toHaveProperty('stack');
    expect(errors[0]!.err).not.toHaveProperty('name');
  });

  it('tries no other stream of an account whose credentials the service refused (exit 1)', async () => {
    cli.service.resetStats();
    const result = await runTelesync(['sync', '--json'], {
      ...cli.env,
      TELESYNC_AUTH_TOKEN: 'wrong-token-4567',
    });
    expect(result.code).toBe(1);
    const runs = jsonLines(result.stdout);
    expect(runs.map((run) => [run.stream, run.status])).toEqual([
      ['trunk_calls', 'failed'],
      ...STREAMS.map((s) => s.name)
        .filter((stream) => stream !== 'trunk_calls')
        .map((stream) => [stream, 'skipped']),
    ]);
    for (const run of runs.slice(1)) {
      expect(run.error).toBe(
        `skipped: the service refused the credentials of account ${ACCOUNT.authId} (401) in trunk_calls`,
      );
    }
    expect(cli.service.stats().requests.total).toBe(1);
    // One error on stderr, and no word of a lock another run held.
    const logged = jsonLines(result.stderr);
    expect(logged.filter((line) => line.level === 'error')).toHaveLength(1);
    expect(result.stderr).not.toContain('held the lock');
    expect(result.stdout + result.stderr).not.toContain('wrong-token-4567');
  });

  it('syncs every account of a config file', async () => {
    const second = { authId: 'MA_E2E_CLI_2', authToken: 'tok_second_account_99' };
    const twoAccounts = await startCliFixture({
      service: () =>
        startSimulator({ seed: 'e2e-cli-two', calls: 500, accounts: [ACCOUNT, second] }),
      account: ACCOUNT,
      env: { TELESYNC_MAX_RPS: '2000' },
    });
    const dir = mkdtempSync(join(tmpdir(), 'telesync-config-'));
    const file = join(dir, 'telesync.json');
    writeFileSync(
      file,
      JSON.stringify({ accounts: [{ auth_id: second.authId, auth_token_env: 'SECOND_TOKEN' }] }),
    );
    try {
      const result = await runTelesync(
        ['sync', 'endpoints'],
        twoAccounts.envWith({ TELESYNC_CONFIG: file, SECOND_TOKEN: second.authToken }),
      );
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^endpoints +MA_E2E_CLI {2}succeeded/m);
      expect(result.stdout).toMatch(/^endpoints +MA_E2E_CLI_2 {2}succeeded/m);
      const perAccount = await twoAccounts.database.inspect(({ db }) =>
        db
          .selectFrom('sip_endpoints')
          .select(['account_id', db.fn.countAll<number>().as('n')])
          .groupBy('account_id')
          .orderBy('account_id')
          .execute(),
      );
      expect(perAccount).toEqual([
        { account_id: 'MA_E2E_CLI', n: 45 },
        { account_id: 'MA_E2E_CLI_2', n: 45 },
      ]);
    } finally {
      await twoAccounts.close();
    }
  });
});

describe('backfill', () => {
  it('re-reads the range asked for and says what it covered', async () => {
    const startedAt = Date.now();
    const result = await runTelesync(['backfill', '--days', '3'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^trunk_calls +MA_E2E_CLI {2}succeeded/m);
    // Three days back from today's UTC date, up to the settle lag: a window per UTC day touched,
    // four in the day and three in the first minutes after midnight (the lag ends yesterday).
    const covered = /covered (\S+) to (\S+) \((\d+) windows\)/.exec(result.stdout);
    expect(covered, result.stdout).not.toBeNull();
    const threeDaysBack = new Date(startedAt - 3 * 86_400_000).toISOString().slice(0, 10);
    expect([threeDaysBack, nextDay(threeDaysBack)]).toContain(covered![1]!.slice(0, 10));
    expect(covered![1]).toMatch(/T00:00:00Z$/);
    expect(Number(covered![3])).toBe(utcDaysTouched(covered![1]!, covered![2]!).length);
    expect([3, 4]).toContain(Number(covered![3]));
    // Not a terminal here: progress goes to stderr as plain lines, if the run lasted long enough.
    expect(result.stderr).not.toContain('\u001b[');
  });

  it('says what cannot be read when the range reaches past the 90-day horizon', async () => {
    const from = new Date(Date.now() - 120 * 24 * 3600 * 1000).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 88 * 24 * 3600 * 1000).toISOString().slice(0, 10);
    // A window a UTC day from the horizon (10 minutes inside the 90 days) to --to: two, or one
    // from 23:50 UTC, when the horizon has moved into the later day.
    const windowsAt = (at: number) => utcDaysTouched(horizonStartAt(at), to).length;
    const before = Date.now();
    const result = await runTelesync(['backfill', '--from', from, '--to', to], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      new RegExp(
        `note: ${from}T00:00:00Z to .* is older than the service's 90-day horizon and cannot be read`,
      ),
    );
    const covered = /covered .* \((\d+) windows?\)/.exec(result.stdout);
    expect(covered, result.stdout).not.toBeNull();
    expect([windowsAt(before), windowsAt(Date.now())]).toContain(Number(covered![1]));
  });

  it.each([
    [['backfill', '--days', '91'], '--days "91" must be a whole number from 1 to 90'],
    [['backfill', '--days', 'ten'], '--days "ten" must be a whole number from 1 to 90'],
    [
      ['backfill', '--from', 'last tuesday'],
      '--from "last tuesday" is not a date or time; accepted forms: YYYY-MM-DD',
    ],
    [['backfill', '--from', '2026-11-10', '--to', '2026-11-01'], 'must be after --from'],
    [
      ['backfill', '--days', '3', '--from', '2026-11-01'],
      'give either --days or --from/--to, not both',
    ],
    [['backfill'], 'say what to backfill: --days N (1 to 90), or --from TIME [--to TIME]'],
  ])('refuses %j (exit 2)', async (args, message) => {
    const result = await runTelesync(args, cli.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });
});

describe('status', () => {
  it('shows watermark, lag, last run, rows and queues per stream', async () => {
    const text = await runTelesync(['status'], cli.env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`account ${ACCOUNT.authId}`);
    expect(text.stdout).toMatch(/^ {2}trunk_calls +\d{4}-\d\d-\d\dT[\d:]+Z +\d+[sm] +succeeded/m);
    expect(text.stdout).toMatch(/^ {2}endpoints .* 45 /m);

    const json = await runTelesync(['status', '--json'], cli.env);
    const report = JSON.parse(json.stdout) as { streams: Record<string, unknown>[] };
    const trunk = report.streams.find(
      (stream) => stream.stream === 'trunk_calls' && stream.account === ACCOUNT.authId,
    );
    expect(trunk).toMatchObject({ last_run: { status: 'succeeded' }, rejected: 0 });
    expect(Number(trunk?.lag_seconds)).toBeLessThan(3600);
  });

  // A server database keeps its own clock; the embedded one runs in telesync's process, on the
  // machine's clock, so there is nothing to age by but that.
  it.skipIf(!canFakeClock || harnessTarget().kind !== 'postgres')(
    "ages runs on the database's clock, on a machine whose clock is a day behind it",
    async () => {
      const behind = cli.envWith(fakedClockEnv('-1d'));
      const text = await runTelesync(['status'], behind);
      expect(text.code, text.stderr).toBe(0);
      // The last sync of the suite, minutes ago: not minus a day.
      const age = /^ {2}trunk_calls +\S+ +\S+ +succeeded (\d+)([smh]) ago/m.exec(text.stdout);
      expect(age, text.stdout).not.toBeNull();
      expect(age![2]).not.toBe('h');
      const json = await runTelesync(['status', '--json'], behind);
      const report = JSON.parse(json.stdout) as { generated_at: string };
      expect(Math.abs(Date.parse(report.generated_at) - Date.now())).toBeLessThan(60_000);
    },
  );

  it('needs no credentials', async () => {
    const { TELESYNC_AUTH_ID: _id, TELESYNC_AUTH_TOKEN: _token, ...noCredentials } = cli.env;
    const result = await runTelesync(['status'], noCredentials);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`account ${ACCOUNT.authId}`);
  });
});

describe('lookup', () => {
  it('messages: fetches known UUIDs and their packs, and marks unknown ones not found', async () => {
    const known = cli.service.dataset().accounts[0]!.exampleMessageUuids[0]!;
    const unknown = '11111111-1111-4111-8111-111111111111';
    const result = await runTelesync(['lookup', 'messages', known, unknown], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('queued 2 message UUIDs in message_refs');
    expect(result.stdout).toMatch(/^messages +MA_E2E_CLI {2}succeeded: 1 fetched/m);
    expect(result.stdout).toMatch(/^powerpacks +MA_E2E_CLI {2}succeeded: 1 fetched/m);
    expect(result.stdout).toContain(`${known}  fetched`);
    expect(result.stdout).toContain(`${unknown}  not_found: the service has no message ${unknown}`);
    const stored = await cli.database.inspect(async ({ db }) => ({
      refs: await db
        .selectFrom('message_refs')
        .select(['message_uuid', 'status'])
        .where('message_uuid', 'in', [known, unknown])
        .orderBy('status')
        .execute(),
      messages: await db
        .selectFrom('messages')
        .select(['message_uuid', 'powerpack_id'])
        .where('message_uuid', 'in', [known, unknown])
        .execute(),
      packs: await db.selectFrom('powerpacks').select('uuid').execute(),
    }));
    expect(stored.refs).toEqual([
      { message_uuid: known, status: 'fetched' },
      { message_uuid: unknown, status: 'not_found' },
    ]);
    expect(stored.messages.map((row) => row.message_uuid)).toEqual([known]);
    expect(stored.packs.map((row) => row.uuid)).toEqual([stored.messages[0]!.powerpack_id]);
  });

  it('streams: fetches the stream records of a call', async () => {
    const call = cli.service.dataset().accounts[0]!.callsWithStreams[0]!;
    const result = await runTelesync(['lookup', 'streams', call], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`${call}  fetched`);
    const streams = await cli.database.inspect(({ db }) =>
      db.selectFrom('call_streams').select(['call_uuid', 'stream_id']).execute(),
    );
    expect(streams.length).toBeGreaterThan(0);
    expect(streams.every((row) => row.call_uuid === call)).toBe(true);
  });

  it('refuses what is not a UUID (exit 2)', async () => {
    const result = await runTelesync(['lookup', 'messages', 'not-a-uuid'], cli.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('not a message UUID: "not-a-uuid"');
  });
});

describe('stream start', () => {
  const live = () => cli.service.dataset().accounts[0]!.liveCallUuids[0]!;

  it('starts a stream and prints the service answer', async () => {
    const result = await runTelesync(
      [
        'stream',
        'start',
        live(),
        '--url',
        'wss://media.example.com/one',
        '--timeout',
        '120',
        '--json',
      ],
      cli.env,
    );
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout) as Record<string, string>;
    expect(answer.message).toBe('audio streaming started');
    expect(answer.stream_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports the service refusing a second stream at the same URL (exit 1)', async () => {
    const result = await runTelesync(
      ['stream', 'start', live(), '--url', 'wss://media.example.com/one'],
      cli.env,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /could not start the stream: 400 the service rejected the request/,
    );
  });

  it('refuses invalid combinations before sending anything (exit 2)', async () => {
    cli.service.resetStats();
    const result = await runTelesync(
      [
        'stream',
        'start',
        live(),
        '--url',
        'ws://insecure.example.com/x',
        '--bidirectional',
        '--audio-track',
        'both',
        '--callback-method',
        'PUT',
        '--extra-headers',
        'a-b=1',
      ],
      cli.env,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'service_url must be a secure WebSocket URL of the form wss://host/path',
    );
    expect(result.stderr).toContain(
      'a bidirectional stream must use audio_track inbound, not "both"',
    );
    expect(result.stderr).toContain('status_callback_method must be GET or POST');
    expect(result.stderr).toContain(
      'extra_headers keys and values may use only the characters A-Z, a-z and 0-9',
    );
    expect(cli.service.stats().requests.total).toBe(0);
  });
});

describe('demo', () => {
  it('runs the whole job on the embedded database with no credentials and prints a billing summary', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'telesync-demo-'));
    const result = await runTelesync(['demo', '--calls', '2000'], { TELESYNC_DATA_DIR: dataDir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`1. database: embedded PostgreSQL (PGlite) in ${dataDir}`);
    expect(result.stdout).toMatch(
      /2\. backfill the last 90 days[\s\S]*trunk_calls +MA_DEMO {2}succeeded: [\d,]+ fetched/,
    );
    expect(result.stdout).toMatch(/messages +MA_DEMO {2}succeeded: [1-9]\d* fetched/);
    expect(result.stdout).toMatch(/^ {3}day +direction +calls +billed minutes +total amount$/m);
    expect(result.stdout).toMatch(
      /all 90 days: [\d,]+ calls, \d{1,3}(,\d{3})+(\.\d+)? billed minutes, total amount \d{1,3}(,\d{3})*\.\d+/,
    );
    // Today's rows (if any call of today has settled) say the day is not over.
    const today = new Date().toISOString().slice(0, 10);
    const todays = result.stdout.split('\n').filter((line) => line.startsWith(`   ${today}`));
    for (const line of todays) expect(line).toContain(`${today} (today, partial)`);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect(result.stdout).toContain(`   ${yesterday} `);
    expect(result.stdout).not.toContain(`${yesterday} (today`);
  });
});

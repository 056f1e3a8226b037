import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines } from '../support/command-output.js';
import {
  runTelesync,
  startTelesync,
  TELESYNC_BIN,
  type CommandResult,
  type TelesyncProcess,
} from '../support/run-telesync.js';

const ACCOUNT = { authId: 'MA_E2E_FIRST', authToken: 'tok_e2e_first_use_secret' };

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-first-use', calls: 300, accounts: [ACCOUNT] }),
  account: ACCOUNT,
});

/**
 * Runs `telesync` with the reading end of its stdout closed before it writes anything, as
 * `telesync status | head -1` leaves it once head has its line: every write meets EPIPE.
 */
function runWithClosedStdout(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<CommandResult> {
  const child = spawn(process.execPath, [TELESYNC_BIN, ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'telesync-cwd-')),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout: '', stderr }));
  });
}

describe('a closed pipe on stdout', () => {
  it.each([[['status']], [['state', 'show']], [['--help']]])(
    '%j ends quietly with exit 0',
    async (args) => {
      const result = await runWithClosedStdout(args, cli.env);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    },
  );
});

describe('bad usage exits 2 with the fix', () => {
  it('stream start refuses what is not a call UUID before anything is sent', async () => {
    cli.service.resetStats();
    const result = await runTelesync(
      ['stream', 'start', 'not-a-uuid', '--url', 'wss://media.example.com/x'],
      cli.env,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('not a call UUID: "not-a-uuid"');
    expect(result.stderr).not.toContain('telesync failed');
    expect(cli.service.stats().requests.total).toBe(0);
  });

  it('a six-field cron (seconds first), as schedule --help offers, is taken', async () => {
    const help = await runTelesync(['schedule', '--help']);
    expect(help.stdout).toContain('5 fields or 6 with seconds first');
    const result = await runTelesync(['schedule', '--once'], {
      ...cli.env,
      TELESYNC_SCHEDULE_TRUNK_CALLS: 'off',
      TELESYNC_SCHEDULE_ENDPOINTS: '30 */5 * * * *',
      TELESYNC_SCHEDULE_CALLER_IDS: 'off',
      TELESYNC_SCHEDULE_MESSAGES: 'off',
      TELESYNC_SCHEDULE_POWERPACKS: 'off',
      TELESYNC_SCHEDULE_CALL_STREAMS: 'off',
      TELESYNC_HTTP_PORT: '0',
    });
    expect(result.stderr).not.toContain('TELESYNC_SCHEDULE_ENDPOINTS');
    expect(result.code, result.stderr).toBe(0);
  });
});

describe('migrate, the first command a user runs', () => {
  it('says what to check when nothing listens at DATABASE_URL (exit 1)', async () => {
    const result = await runTelesync(
      ['migrate'],
      cli.envWith({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /cannot use the database at postgres:\/\/postgres@127\.0\.0\.1:1\/nowhere: .*ECONNREFUSED.*check DATABASE_URL and that PostgreSQL is running/,
    );
    expect(result.stderr).not.toContain('telesync failed');
  });

  it.runIf(cli.target.kind === 'postgres')(
    'says to create the database when the server has none of that name (exit 1)',
    async () => {
      const url = new URL(cli.target.kind === 'postgres' ? cli.target.url : '');
      url.pathname = '/telesync_no_such_database';
      const result = await runTelesync(['migrate'], cli.envWith({ DATABASE_URL: url.href }));
      expect(result.code).toBe(1);
      const messages = jsonLines(result.stderr).map((line) => String(line.msg));
      expect(messages).toHaveLength(1);
      expect(messages[0]).toContain('database "telesync_no_such_database" does not exist');
      expect(messages[0]).toContain('create it (createdb, or CREATE DATABASE)');
      expect(result.stderr).not.toContain('telesync failed');
    },
  );
});

describe.runIf(cli.target.kind === 'postgres')('several workers on one host', () => {
  const SERVING = /Serving the status page at (http:\/\/\S+)\/,/;

  it('each serves HTTP on a port of its own, says where, and drains on SIGTERM in JSON lines', async () => {
    // No TELESYNC_HTTP_PORT: both start on the default port, the second moves to a free one.
    const { TELESYNC_HTTP_PORT: _unset, ...env } = cli.env;
    const workers: TelesyncProcess[] = [];
    try {
      for (let index = 0; index < 2; index++) {
        const worker = startTelesync(['worker'], env, { timeoutMs: 60_000 });
        workers.push(worker);
        await worker.waitForStdout(SERVING, 30_000);
      }
      const urls = workers.map((worker) => SERVING.exec(worker.stdout())![1]!);
      expect(new Set(urls).size).toBe(2);
      for (const url of urls) {
        const health = (await (await fetch(`${url}/healthz`)).json()) as Record<string, unknown>;
        expect(health.checked_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
        expect(health.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
        expect((await fetch(`${url}/metrics`)).status).toBe(200);
      }
      for (const worker of workers) worker.kill('SIGTERM');
      for (const worker of workers) {
        const ended = await worker.exited;
        expect(ended.code, ended.stderr).toBe(0);
        // Off a terminal every stderr line is a JSON log line, the draining notice included.
        const lines = jsonLines(ended.stderr);
        expect(lines.map((line) => String(line.msg))).toContain(
          'draining: the runs in hand finish their batch, no new job is taken (again to force)',
        );
      }
    } finally {
      for (const worker of workers) worker.kill('SIGKILL');
    }
  }, 90_000);

  it('backfill --queue --wait ends with the totals of the jobs, timed from the first start', async () => {
    const database = await cli.addDatabase();
    const env = cli.envFor(database, { TELESYNC_HTTP_PORT: '0' });
    const worker = startTelesync(['worker'], env, { timeoutMs: 90_000 });
    try {
      const done = await runTelesync(['backfill', '--days', '3', '--queue', '--wait'], env, {
        timeoutMs: 80_000,
      });
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout).toMatch(
        // One account's three adjacent days are one job.
        /^done: 1 job; [\d,]+ calls fetched, [\d,]+ stored, 0 rejected, \d+ requests?; [\d.]+s from the first job's start \([\d,]+ calls\/s\)$/m,
      );
      const fetched = Number(/([\d,]+) calls fetched/.exec(done.stdout)![1]!.replace(/,/g, ''));
      const stored = await database.inspect(async ({ db }) =>
        Number(
          (
            await db
              .selectFrom('trunk_calls')
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        ),
      );
      expect(fetched).toBeGreaterThanOrEqual(stored);
      expect(stored).toBeGreaterThan(0);
      // Off a terminal, its progress lines are JSON like every other line on stderr.
      expect(jsonLines(done.stderr).length).toBeGreaterThan(0);
    } finally {
      worker.kill('SIGTERM');
      await worker.exited;
    }
  }, 100_000);
});

describe('backfill and dry-run messages say what is true', () => {
  const DAY_MS = 24 * 60 * 60 * 1000;
  const dayOffset = (days: number) =>
    new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 10);

  it('a --from in the future, without --to, is refused as such (exit 2)', async () => {
    const result = await runTelesync(['backfill', '--from', dayOffset(30)], cli.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--from \(\S+\) is in the future: give a time before now/);
    expect(result.stderr).not.toContain('--to');
  });

  it('a dry run that trims a range older than the horizon prints the note the real run prints', async () => {
    const args = ['backfill', '--from', dayOffset(-100), '--to', dayOffset(-85)];
    const startedAt = Date.now();
    const dryRun = await runTelesync([...args, '--dry-run'], cli.env);
    expect(dryRun.code, dryRun.stderr).toBe(0);
    const note = (stderr: string) =>
      jsonLines(stderr)
        .map((line) => String(line.msg))
        .filter((msg) => msg.startsWith('note: '));
    const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;
    const said = note(dryRun.stderr);
    expect(said).toEqual([
      expect.stringMatching(/is older than the service's 90-day horizon and cannot be read/),
    ]);
    const real = await runTelesync(args, cli.env);
    expect(real.code, real.stderr).toBe(0);
    const elapsedMs = Date.now() - startedAt;
    const told = note(real.stderr);
    // The same note; only the horizon moves with the clock, by no more than the time between runs.
    expect(told.map((text) => text.replace(ISO, '<time>'))).toEqual(
      said.map((text) => text.replace(ISO, '<time>')),
    );
    const [dryFrom, dryHorizon] = (said[0]!.match(ISO) ?? []).map((time) => Date.parse(time));
    const [realFrom, realHorizon] = (told[0]!.match(ISO) ?? []).map((time) => Date.parse(time));
    expect(realFrom).toBe(dryFrom);
    expect(realHorizon! - dryHorizon!).toBeGreaterThanOrEqual(0);
    expect(realHorizon! - dryHorizon!).toBeLessThanOrEqual(elapsedMs);
  });

  it('a snapshot dry run says what a request buys, not "at least 0"', async () => {
    const result = await runTelesync(['sync', 'endpoints', 'caller_ids', '--dry-run'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('at least 0');
    expect(result.stdout).not.toContain('part(s)');
    expect(result.stdout.match(/^ {2}requests: .*$/gm)).toEqual([
      '  requests: 1 per page of 20 records; how many pages is known only once read',
      '  requests: 1 per page of 20 records; how many pages is known only once read',
    ]);
  });
});

describe('a failed run', () => {
  it('says its cause first and once: the request only as a detail of the log, the advice once per account', async () => {
    const result = await runTelesync(['sync'], {
      ...cli.env,
      TELESYNC_AUTH_TOKEN: 'wrong-token-first',
    });
    expect(result.code).toBe(1);
    const output = result.stdout + result.stderr;
    // The request, with its URL-encoded query, is said once: the `path` of the logged error.
    expect(output.split('end_time__gte=').length - 1).toBe(1);
    const errors = jsonLines(result.stderr).filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(String(errors[0]!.msg)).toMatch(/^run failed: 401 authentication failed/);
    expect(errors[0]!.err).toMatchObject({ type: 'ApiError', status: 401 });
    expect(String((errors[0]!.err as { path: string }).path)).toContain('end_time__gte=');
    expect(errors[0]!.err).not.toHaveProperty('message');
    expect(output.split('check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN').length - 1).toBe(2);
    expect(result.stdout.split('check TELESYNC_AUTH_ID').length - 1).toBe(1);
    expect(result.stdout.match(/skipped: /g)).toHaveLength(5);
  });

  it('reads as one: no "(0 new or changed)", and its one request in the singular', async () => {
    const result = await runTelesync(['sync', 'trunk_calls'], {
      ...cli.env,
      TELESYNC_AUTH_TOKEN: 'wrong-token-first-use',
    });
    expect(result.code).toBe(1);
    const line = result.stdout.split('\n').find((text) => text.startsWith('trunk_calls'));
    expect(line).toMatch(
      /^trunk_calls +MA_E2E_FIRST {2}failed: 0 fetched, 0 stored, 0 rejected, 1 request, /,
    );
    expect(result.stdout).not.toContain('new or changed');
  });
});

describe('state forget', () => {
  it('removes a mistyped account from status and state show, asking for --yes, and its data only with --data', async () => {
    const database = await cli.addDatabase();
    const typo = { ...cli.envFor(database), TELESYNC_AUTH_ID: 'MA_E2E_FRIST' };
    const failed = await runTelesync(['sync', 'trunk_calls'], typo);
    expect(failed.code).toBe(1);
    const synced = await runTelesync(['sync', 'trunk_calls'], cli.envFor(database));
    expect(synced.code, synced.stderr).toBe(0);
    const accountsShown = async () => {
      const shown = await runTelesync(['state', 'show', '--json'], cli.envFor(database));
      const streams = (JSON.parse(shown.stdout) as { streams: { account: string }[] }).streams;
      return [...new Set(streams.map((stream) => stream.account))].sort();
    };
    expect(await accountsShown()).toEqual(['MA_E2E_FIRST', 'MA_E2E_FRIST']);

    const unconfirmed = await runTelesync(
      ['state', 'forget', '--account', 'MA_E2E_FRIST'],
      cli.envFor(database),
    );
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toMatch(
      /state forget would remove (\d+ rows? of sync_windows, )?1 row of sync_runs of account MA_E2E_FRIST; its data rows are kept .*add --yes to confirm/,
    );

    const forgotten = await runTelesync(
      ['state', 'forget', '--account', 'MA_E2E_FRIST', '--yes'],
      cli.envFor(database),
    );
    expect(forgotten.code, forgotten.stderr).toBe(0);
    expect(forgotten.stdout).toMatch(
      /^account MA_E2E_FRIST forgotten: \d+ rows? removed; data rows kept/m,
    );
    expect(await accountsShown()).toEqual(['MA_E2E_FIRST']);

    // The real account: bookkeeping only, then its data too.
    const storedCalls = () =>
      database.inspect(async ({ db }) =>
        Number(
          (
            await db
              .selectFrom('trunk_calls')
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .where('account_id', '=', 'MA_E2E_FIRST')
              .executeTakeFirstOrThrow()
          ).n,
        ),
      );
    const calls = await storedCalls();
    expect(calls).toBeGreaterThan(0);
    const kept = await runTelesync(
      ['state', 'forget', '--account', 'MA_E2E_FIRST', '--yes'],
      cli.envFor(database),
    );
    expect(kept.code, kept.stderr).toBe(0);
    expect(await storedCalls()).toBe(calls);
    const all = await runTelesync(
      ['state', 'forget', '--account', 'MA_E2E_FIRST', '--data', '--yes'],
      cli.envFor(database),
    );
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain(
      `account MA_E2E_FIRST forgotten: ${calls.toLocaleString('en-US')} rows removed, data included`,
    );
    expect(await storedCalls()).toBe(0);
  });
});

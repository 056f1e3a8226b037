import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { runTelesync } from '../support/run-telesync.js';
import { utcDaysTouched } from '../support/utc-days.js';

const ACCOUNT = { authId: 'MA_E2E_EDGES', authToken: 'tok_e2e_edges_secret' };
const DAY_MS = 24 * 60 * 60 * 1000;

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-edges', calls: 2_000, accounts: [ACCOUNT] }),
  account: ACCOUNT,
});

/** stderr as lines; off a terminal every one of them must be a JSON log line. */
function stderrEntries(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('with the database down', () => {
  it.each([
    [['sync']],
    [['backfill', '--days', '1']],
    [['lookup', 'messages', '11111111-1111-4111-8111-111111111111']],
  ])('%j says so once, in one line, and stops (exit 1)', async (args) => {
    const result = await runTelesync(
      args,
      cli.envWith({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }),
    );
    expect(result.code).toBe(1);
    const entries = stderrEntries(result.stderr);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ level: 'error' });
    expect(String(entries[0]!.msg)).toMatch(
      /^cannot use the database at postgres:\/\/postgres@127\.0\.0\.1:1\/nowhere: .*ECONNREFUSED.*check DATABASE_URL/,
    );
    expect(result.stderr.length).toBeLessThan(400);
    expect(result.stdout).toBe('');
  });
});

describe('backfill ranges and what they leave out', () => {
  it('refuses a range entirely older than the horizon (exit 2) instead of "succeeding" with 0 rows', async () => {
    const from = new Date(Date.now() - 120 * DAY_MS).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 100 * DAY_MS).toISOString().slice(0, 10);
    const result = await runTelesync(['backfill', '--from', from, '--to', to], cli.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("is entirely older than the service's 90-day horizon");
    expect(result.stderr).toContain('can no longer be read');
    expect(result.stdout).toBe('');
  });

  it('a 90-day backfill warns about nothing, says once what it left out and why, and status explains the missing watermark', async () => {
    const result = await runTelesync(['backfill', '--days', '90'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain('older than');
    // A window per UTC day the range touches: 91, or 90 when run in the last minutes of a day.
    const covered = /covered (\S+) to (\S+) \((\d+) windows\)/.exec(result.stdout);
    expect(covered, result.stdout).not.toBeNull();
    expect(Number(covered![3])).toBe(utcDaysTouched(covered![1]!, covered![2]!).length);
    expect(Number(covered![3])).toBeGreaterThanOrEqual(90);
    const notRead = result.stdout.split('\n').filter((line) => line.includes('not read:'));
    expect(notRead).toEqual([
      '  not read: the oldest 10 minutes (a margin inside the 90-day horizon, so no request is refused as too old); ' +
        'calls that ended in the last 5 minutes (settle lag: the next sync reads them)',
    ]);
    // Off a terminal, stderr holds only JSON lines (progress included).
    stderrEntries(result.stderr);

    const status = await runTelesync(['status'], cli.env);
    expect(status.stdout).toContain(
      'i trunk_calls: no incremental sync yet, so no watermark: the rows come from a backfill',
    );
    const json = await runTelesync(['status', '--json'], cli.env);
    const trunk = (JSON.parse(json.stdout) as { streams: Record<string, unknown>[] }).streams.find(
      (stream) => stream.stream === 'trunk_calls',
    )!;
    expect(trunk.last_run).toMatchObject({ command: 'backfill', status: 'succeeded' });
    const lastRun = trunk.last_run as Record<string, unknown>;
    expect(Object.keys(lastRun).every((key) => /^[a-z_]+$/.test(key))).toBe(true);
    expect(lastRun.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // The run's wait for the database, whole milliseconds, within the run's own time.
    const runMs = Date.parse(String(lastRun.finished_at)) - Date.parse(String(lastRun.started_at));
    expect(Number.isInteger(lastRun.load_wait_ms)).toBe(true);
    expect(lastRun.load_wait_ms as number).toBeGreaterThanOrEqual(0);
    expect(lastRun.load_wait_ms as number).toBeLessThanOrEqual(runMs);
  });
});

describe('cron expressions', () => {
  it('refuses a six-field expression whose seconds are out of range, with the fix (exit 2)', async () => {
    const result = await runTelesync(
      ['schedule', '--once'],
      cli.envWith({ TELESYNC_SCHEDULE_TRUNK_CALLS: '61 */5 * * * *' }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('second "61" is out of range: use 0 to 59');
  });
});

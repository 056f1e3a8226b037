import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines, lastJson } from '../support/command-output.js';
import { runTelesync, startTelesync, TELESYNC_BIN } from '../support/run-telesync.js';
import { waitFor } from '../support/telesync-process.js';

const ACCOUNT = { authId: 'MA_E2E_RANGES', authToken: 'tok_e2e_ranges_secret' };

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-ranges', calls: 400, accounts: [ACCOUNT] }),
  account: ACCOUNT,
  env: { TELESYNC_LOG_LEVEL: 'info' },
});

/** The windows a `backfill --dry-run --json` would skip as read by the backfill it resumes. */
async function windowsSkippedByDryRun(args: readonly string[]): Promise<number> {
  const dryRun = await runTelesync([...args, '--dry-run', '--json'], cli.env);
  expect(dryRun.code, dryRun.stderr).toBe(0);
  const windows = lastJson(dryRun.stdout).windows as { action: string }[];
  return windows.filter((window) => window.action === 'skip').length;
}

describe('backfills of different ranges', () => {
  it('a backfill of another range neither claims to resume nor wipes the unfinished one; the same range resumes; a finished one run again says it re-reads', async () => {
    // Slow answers, so the 90-day backfill can be stopped part way.
    cli.service.setFaults({ latencyMs: 40 });
    const before = cli.service.stats().requests.total;
    const long = startTelesync(['backfill', '--days', '90', '--json'], cli.env);
    await waitFor(() => cli.service.stats().requests.total - before >= 12, {
      what: 'a dozen requests of the 90-day backfill',
    });
    long.kill('SIGINT');
    const stopped = await long.exited;
    const stoppedRun = lastJson(stopped.stdout);
    expect(stoppedRun.status).toBe('stopped');
    const readBefore = Number(stoppedRun.windows_completed);
    expect(readBefore).toBeGreaterThan(0);
    cli.service.setFaults({});

    const short = await runTelesync(['backfill', '--days', '2', '--json'], cli.env);
    expect(short.code, short.stderr).toBe(0);
    expect(lastJson(short.stdout).status).toBe('succeeded');
    expect(jsonLines(short.stderr).map((line) => String(line.msg))).not.toContainEqual(
      expect.stringContaining('resuming'),
    );

    // The 90-day backfill still resumes: the windows read since it started are skipped (its own,
    // and the last days the short one read after it), and only those.
    const skipped = await windowsSkippedByDryRun(['backfill', '--days', '90']);
    expect(skipped).toBeGreaterThanOrEqual(readBefore);
    expect(skipped).toBeLessThanOrEqual(readBefore + 3);

    const resumed = await runTelesync(['backfill', '--days', '90'], cli.env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(
      `  resumed: ${skipped} windows read before by this unfinished backfill were skipped`,
    );

    // Finished: the same command again re-reads, and says so plainly.
    const again = await runTelesync(['backfill', '--days', '90'], cli.env);
    expect(again.code, again.stderr).toBe(0);
    // Every window but the last, whose end has moved on (or all, within the same second). The
    // backfill covers 91 windows, or 90 in the ten minutes before midnight UTC, when the oldest
    // day falls wholly inside the horizon's margin.
    const covered = Number(/\((\d+) windows\)/.exec(again.stdout)?.[1]);
    expect([90, 91]).toContain(covered);
    const readAgain = Number(
      / {2}read again: (\d+) windows the ledger already held complete/.exec(again.stdout)?.[1],
    );
    expect([covered - 1, covered]).toContain(readAgain);
    expect(again.stdout).not.toContain('resumed:');
  }, 120_000);
});

describe('a stop asked for', () => {
  it('is said as a stop, not as an error', async () => {
    const database = await cli.addDatabase();
    cli.service.setFaults({ latencyMs: 40 });
    const before = cli.service.stats().requests.total;
    const run = startTelesync(['backfill', '--days', '30'], cli.envFor(database));
    await waitFor(() => cli.service.stats().requests.total - before >= 8, {
      what: 'a few requests of the backfill',
    });
    run.kill('SIGINT');
    const stopped = await run.exited;
    cli.service.setFaults({});
    expect(stopped.stdout).toMatch(/^trunk_calls +MA_E2E_RANGES {2}stopped: /m);
    expect(stopped.stdout).toContain('\n  stopped on request (shutdown) after the batch in hand');
    expect(stopped.stdout).not.toContain('error:');
    expect(stopped.stdout).toMatch(/ {2}stopped after \d+ of \d+ windows/);
  }, 60_000);
});

/** `script` (util-linux) gives the command a terminal, as a person running it has. */
const hasScript = spawnSync('script', ['--version']).status === 0;

describe.runIf(process.platform === 'linux' && hasScript)('on a terminal', () => {
  it('Ctrl-C during the progress bar: the message starts a line of its own', async () => {
    const database = await cli.addDatabase();
    cli.service.setFaults({ latencyMs: 250 });
    const before = cli.service.stats().requests.total;
    const env = { ...cli.envFor(database), TELESYNC_LOG_LEVEL: 'warn' };
    const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
    const child = spawn(
      'script',
      [
        '-qfec',
        `${quoted(process.execPath)} ${quoted(TELESYNC_BIN)} backfill --days 60`,
        '/dev/null',
      ],
      {
        cwd: mkdtempSync(join(tmpdir(), 'telesync-cwd-')),
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TERM: 'xterm', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    try {
      await waitFor(
        () => cli.service.stats().requests.total - before >= 4 && output.includes('calls/s'),
        { what: 'the progress bar of the backfill' },
      );
      child.stdin.write('\x03');
      await exited;
    } finally {
      child.kill('SIGKILL');
      cli.service.setFaults({});
    }
    const at = output.indexOf('stopping after the batch in hand');
    expect(at, output).toBeGreaterThan(0);
    // What comes just before the message ends a line or clears it: never the bar's own text.
    const lead = output.slice(0, at);
    expect(
      lead.endsWith('\n') || lead.endsWith('\r\u001b[2K'),
      JSON.stringify(lead.slice(-80)),
    ).toBe(true);
  }, 60_000);
});

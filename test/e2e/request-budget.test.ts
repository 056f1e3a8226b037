import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { runTelesync, startTelesync } from '../support/run-telesync.js';
import { freePort } from '../support/telesync-process.js';

const ACCOUNT = { authId: 'MA_E2E_BUDGET', authToken: 'tok_e2e_budget_0123456789' };

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-budget', calls: 2_000, accounts: [ACCOUNT] }),
  account: ACCOUNT,
});

/** The fixture's environment at info level, without the older rate variable it sets by default. */
function envWith(extra: Record<string, string>): Record<string, string> {
  const env = cli.envWith({ TELESYNC_LOG_LEVEL: 'info' });
  delete env.TELESYNC_MAX_RPS;
  return { ...env, ...extra };
}

/** How many times `text` occurs in `output`. */
function occurrences(output: string, text: string): number {
  return output.split(text).length - 1;
}

const DEFAULT_LINE = "at most 240 requests per 5 s per account: 80% of the service's 300";
const NOTE_START = 'TELESYNC_MAX_RPS still works; what replaces it: TELESYNC_REQUEST_BUDGET';

describe('the request budget each process says it will use', () => {
  it('sync says once, at start, what it takes of the service’s budget by default', async () => {
    const result = await runTelesync(['sync', 'endpoints'], envWith({}));
    expect(result.code, result.stderr).toBe(0);
    expect(occurrences(result.stderr, DEFAULT_LINE)).toBe(1);
    expect(result.stderr).not.toContain('TELESYNC_MAX_RPS');
  });

  it('backfill says the share it was given, over the budget it was given', async () => {
    const result = await runTelesync(
      ['backfill', '--days', '1'],
      envWith({ TELESYNC_REQUEST_BUDGET: '1000/10s', TELESYNC_REQUEST_SHARE: '100%' }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(
      occurrences(
        result.stderr,
        "at most 1,000 requests per 10 s per account: 100% of the service's 1,000",
      ),
    ).toBe(1);
  });

  it('schedule says it once at start', async () => {
    const scheduler = startTelesync(
      ['schedule'],
      envWith({ TELESYNC_HTTP_PORT: String(await freePort()), TELESYNC_REQUEST_SHARE: '50%' }),
      { timeoutMs: 60_000 },
    );
    try {
      await scheduler.waitForStdout(/^Metrics: /m, 30_000);
    } finally {
      scheduler.kill('SIGTERM');
    }
    const result = await scheduler.exited;
    expect(
      occurrences(
        result.stderr,
        "at most 150 requests per 5 s per account: 50% of the service's 300",
      ),
      result.stderr,
    ).toBe(1);
  });

  it.runIf(cli.target.kind === 'postgres')('worker says it once at start', async () => {
    const worker = startTelesync(['worker'], envWith({ TELESYNC_HTTP_PORT: '0' }), {
      timeoutMs: 60_000,
    });
    try {
      await worker.waitForStdout(/HTTP server off/, 30_000);
    } finally {
      worker.kill('SIGTERM');
    }
    const result = await worker.exited;
    expect(occurrences(result.stderr, DEFAULT_LINE), result.stderr).toBe(1);
  });
});

describe('the older rate variables', () => {
  it('still set the rate, with a note naming the settings that replace them', async () => {
    const result = await runTelesync(
      ['sync', 'trunk_calls'],
      envWith({ TELESYNC_MAX_RPS: '2000' }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^trunk_calls +MA_E2E_BUDGET {2}succeeded: [\d,]+ fetched/m);
    expect(
      occurrences(
        result.stderr,
        "at most 2,000 requests per 1 s per account: 3,333.3% of the service's 300 per 5 s",
      ),
    ).toBe(1);
    expect(occurrences(result.stderr, NOTE_START)).toBe(1);
    expect(result.stderr).toContain('TELESYNC_REQUEST_SHARE (the share of it telesync uses');
  });

  it('may not be mixed with the new ones: exit 2 with the fix', async () => {
    const result = await runTelesync(
      ['sync', 'endpoints'],
      envWith({ TELESYNC_MAX_RPS: '60', TELESYNC_REQUEST_SHARE: '100%' }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'TELESYNC_MAX_RPS: is set with TELESYNC_REQUEST_SHARE, which replaces it: unset TELESYNC_MAX_RPS',
    );
  });
});

describe('a budget telesync cannot read', () => {
  it('exits 2 saying the form it takes', async () => {
    const result = await runTelesync(
      ['sync', 'endpoints'],
      envWith({ TELESYNC_REQUEST_BUDGET: '300 per 5 seconds', TELESYNC_REQUEST_SHARE: '80' }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'TELESYNC_REQUEST_BUDGET: "300 per 5 seconds" is not a budget such as "300/5s"',
    );
    expect(result.stderr).toContain('TELESYNC_REQUEST_SHARE: "80" is not a share above 0%');
  });
});

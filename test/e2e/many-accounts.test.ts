import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { jsonLines } from '../support/command-output.js';
import {
  expectAccountsExact,
  expectWithinBudget,
  SERVICE_BUDGET,
  testAccounts,
  writeAccountsConfig,
} from '../support/many-accounts.js';
import { runTelesync } from '../support/run-telesync.js';

const ACCOUNTS = testAccounts('MA_MANY', 10);

describe('ten accounts side by side, each held to 300 requests per 5 s', () => {
  const cli = useCliFixture({
    service: () =>
      startSimulator({
        seed: 'e2e-many-accounts',
        // About 330 pages of 20 calls per account in 10 days: more than one budget window each.
        calls: 60_000,
        accounts: ACCOUNTS,
        rateLimit: `${SERVICE_BUDGET.requests}/5s`,
      }),
    env: {
      // 55 per second stays under the service's 60; every account has its own limiter.
      TELESYNC_MAX_RPS: '55',
      TELESYNC_CONCURRENCY: '8',
      // Ten accounts at most seven at once go in two even waves of five, not seven and three.
      TELESYNC_ACCOUNT_CONCURRENCY: '7',
    },
  });

  it('a backfill reads accounts side by side in even waves, exactly, and none goes over its budget', async () => {
    const config = writeAccountsConfig(ACCOUNTS);
    const started = performance.now();
    const result = await runTelesync(
      ['backfill', '--days', '10', '--json'],
      cli.envWith({ TELESYNC_CONFIG: config }),
    );
    const elapsedMs = performance.now() - started;
    expect(result.code, result.stderr).toBe(0);
    const outcomes = jsonLines(result.stdout);
    expect(outcomes.map((outcome) => outcome.account)).toEqual(
      ACCOUNTS.map((account) => account.authId),
    );
    expect(outcomes.every((outcome) => outcome.status === 'succeeded')).toBe(true);
    const requests = outcomes.map((outcome) => Number(outcome.requests));
    expect(Math.min(...requests)).toBeGreaterThan(SERVICE_BUDGET.requests);

    // Side by side: the runs' own durations add up to several times the command's wall time
    // (one after the other, they could not add up to more than it).
    const runTimeMs = outcomes.reduce((sum, outcome) => sum + Number(outcome.duration_ms), 0);
    expect(runTimeMs).toBeGreaterThan(3 * elapsedMs);
    // Five at once, never seven: the most runs under way at any run's start, from sync_runs.
    const runs = await cli.database.inspect(({ db }) =>
      db.selectFrom('sync_runs').select(['started_at', 'finished_at']).execute(),
    );
    expect(runs).toHaveLength(ACCOUNTS.length);
    // (Timestamps as text: compared as instants; a run's end is written before the next starts.)
    const spans = runs.map((run) => ({
      from: Date.parse(String(run.started_at)),
      to: run.finished_at === null ? Infinity : Date.parse(String(run.finished_at)),
    }));
    const underWayAt = (at: number) =>
      spans.filter((span) => span.from <= at && at < span.to).length;
    expect(Math.max(...spans.map((span) => underWayAt(span.from)))).toBe(5);
    const first = outcomes[0]!;
    await expectAccountsExact(
      cli.service,
      cli.database,
      String(first.covered_from),
      String(first.covered_to),
    );
    expectWithinBudget(cli.service);
    const loads = Object.values(cli.service.stats().accounts);
    expect(loads).toHaveLength(ACCOUNTS.length);
    // Each account's transport keeps its own connections: never more than TELESYNC_CONCURRENCY.
    expect(Math.max(...loads.map((load) => load.maxInFlight))).toBeLessThanOrEqual(8);
  });
});

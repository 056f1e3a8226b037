import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/simulator-server.js';
import { oracleCalls, sortedCallUuids } from './simulator-oracle.js';
import type { CliAccount } from './cli-fixture.js';
import type { CliDatabase } from './test-database.js';

/** The service's published budget, per account: what the simulator is held to in these tests. */
export const SERVICE_BUDGET = { requests: 300, windowMs: 5_000 } as const;

/** `count` simulated accounts, with tokens made up for the test. */
export function testAccounts(prefix: string, count: number): CliAccount[] {
  return Array.from({ length: count }, (_, index) => ({
    authId: `${prefix}_${String(index + 1).padStart(2, '0')}`,
    authToken: `tok_${prefix.toLowerCase()}_${index + 1}_secret`,
  }));
}

/**
 * A config file (TELESYNC_CONFIG) that lists `accounts` with their tokens in it: the tokens are
 * made up for the test and the file is in a temporary directory of its own.
 */
export function writeAccountsConfig(accounts: readonly CliAccount[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'telesync-accounts-')), 'telesync.json');
  writeFileSync(
    file,
    JSON.stringify({
      accounts: accounts.map((account) => ({
        auth_id: account.authId,
        auth_token: account.authToken,
      })),
    }),
  );
  return file;
}

/**
 * Asserts that every account's trunk calls in [from, to) are exactly the simulator's: the same
 * call UUIDs, once each, with the same amounts.
 */
export async function expectAccountsExact(
  sim: RunningSimulator,
  database: CliDatabase,
  from: string,
  to: string,
  /** Only these accounts (default: every account of the simulator). */
  only?: readonly string[],
): Promise<void> {
  const stored = await database.inspect(({ db }) =>
    db
      .selectFrom('trunk_calls')
      .select(['account_id', 'call_uuid', 'total_amount'])
      .where('end_time', '>=', from)
      .where('end_time', '<', to)
      .orderBy('account_id')
      .orderBy('call_uuid')
      .execute(),
  );
  for (const [index, account] of sim.accounts.entries()) {
    if (only !== undefined && !only.includes(account.authId)) continue;
    const expected = oracleCalls(sim, Date.parse(from), Date.parse(to), index);
    expect(expected.length, `${account.authId} has calls to read`).toBeGreaterThan(0);
    const mine = stored.filter((row) => row.account_id === account.authId);
    expect(
      mine.map((row) => row.call_uuid),
      `${account.authId}: the stored calls are the service's`,
    ).toEqual(sortedCallUuids(expected));
    const amounts = new Map(expected.map((call) => [call.call_uuid, call.total_amount]));
    expect(mine.filter((row) => row.total_amount !== amounts.get(row.call_uuid))).toEqual([]);
  }
}

/** Asserts that no account went over SERVICE_BUDGET, as measured at the simulator. */
export function expectWithinBudget(sim: RunningSimulator): void {
  const { accounts, rateLimited } = sim.stats();
  for (const account of sim.accounts) {
    const load = accounts[account.authId];
    expect(load, `${account.authId} made requests`).toBeDefined();
    expect(load!.maxPerWindow, `${account.authId}: most requests in any 5 s`).toBeLessThanOrEqual(
      SERVICE_BUDGET.requests,
    );
  }
  expect(rateLimited, 'requests refused by the budget').toBe(0);
}

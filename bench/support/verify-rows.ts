import type { BenchDatabase } from './bench-database.js';
import { RowsLostError } from './bench-errors.js';
import { isoToMicros, SimulatorOracle } from './simulator-oracle.js';
import type { BenchAccount, SimulatorDataset } from './simulator-process.js';

/**
 * The check after every load: the rows Postgres holds for a range are exactly as many as the calls
 * the simulator holds for it, and there are no rows outside it. A benchmark that fails this reports
 * no speed: it throws RowsLostError.
 */
export async function verifyStoredRows(
  what: string,
  db: BenchDatabase,
  schema: string,
  oracle: SimulatorOracle,
  range: { from: string; to: string },
): Promise<number> {
  const expected = oracle.count(isoToMicros(range.from), isoToMicros(range.to));
  const inRange = await db.countTrunkCalls(schema, range);
  if (inRange !== expected)
    throw new RowsLostError(`${what} [${range.from}, ${range.to})`, expected, inRange);
  return requireWholeTable(what, db, schema, expected);
}

/** The table holds `expected` rows in all, none outside the ranges checked; returns them. */
async function requireWholeTable(
  what: string,
  db: BenchDatabase,
  schema: string,
  expected: number,
): Promise<number> {
  const total = await db.countTrunkCalls(schema);
  if (total !== expected) throw new RowsLostError(`${what} (whole table)`, expected, total);
  return total;
}

/** One account's backfill as the command reported it: the range it covered. */
export interface AccountCoverage {
  readonly account: BenchAccount;
  readonly from: string;
  readonly to: string;
}

/**
 * verifyStoredRows for a backfill of many accounts sharing one table: each account's rows in the
 * range it covered are exactly as many as the simulator holds for that account (an oracle per
 * account, rebuilt from the dataset), and the table holds no other rows. Returns the rows.
 */
export async function verifyAccountRows(
  what: string,
  db: BenchDatabase,
  schema: string,
  dataset: SimulatorDataset,
  coverages: readonly AccountCoverage[],
): Promise<number> {
  const stored = await db.countTrunkCallsPerAccount(
    schema,
    coverages.map(({ account, from, to }) => ({ accountId: account.authId, from, to })),
  );
  let expectedTotal = 0;
  for (const { account, from, to } of coverages) {
    const expected = new SimulatorOracle({ dataset, account }).count(
      isoToMicros(from),
      isoToMicros(to),
    );
    const found = stored.get(account.authId) ?? 0;
    if (found !== expected) {
      throw new RowsLostError(
        `${what}, account ${account.authId} [${from}, ${to})`,
        expected,
        found,
      );
    }
    expectedTotal += expected;
  }
  return requireWholeTable(what, db, schema, expectedTotal);
}

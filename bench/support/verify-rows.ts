import type { BenchDatabase } from './bench-database.js';
import { RowsLostError } from './bench-errors.js';
import { isoToMicros, type SimulatorOracle } from './simulator-oracle.js';

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
  const total = await db.countTrunkCalls(schema);
  if (total !== expected) throw new RowsLostError(`${what} (whole table)`, expected, total);
  return total;
}

/**
 * The two ways a benchmark can fail without merely missing a target. Both make `npm run bench`
 * exit non-zero; a missed target never does.
 */

/** The harness itself could not measure: a child process failed, timed out, or answered nonsense. */
export class HarnessError extends Error {
  override name = 'HarnessError';
}

/**
 * Rows were lost (or invented): what Postgres holds after a run is not what the service holds for
 * the range the run covered. No speed is reported for such a run.
 */
export class RowsLostError extends HarnessError {
  override name = 'RowsLostError';
  constructor(
    readonly what: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super(
      `${what}: expected ${expected} rows (what the simulator holds for the range) but found ${actual} ` +
        `(${actual < expected ? `${expected - actual} lost` : `${actual - expected} unexpected`})`,
    );
  }
}

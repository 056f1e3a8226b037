/** A request budget: at most `requests` in any window of `windowMs` milliseconds. */
export interface RequestRate {
  readonly requests: number;
  readonly windowMs: number;
}

const REQUEST_RATE_FORM = /^([0-9]+)\s*\/\s*([0-9]*)\s*(ms|s|sec|m|min)$/i;
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  sec: 1_000,
  m: 60_000,
  min: 60_000,
};

/**
 * Reads `300/5s` (300 requests per 5 seconds), `60/s`, `1000/1m`, `1000/2min`, `10/500ms`: whole
 * requests over a whole number of milliseconds, seconds or minutes (a missing number is one).
 * Undefined when the text is not of that form; the bounds are the caller's (telesync's budget and
 * the simulator's limit take different ranges).
 */
export function parseRequestRate(text: string): RequestRate | undefined {
  const match = REQUEST_RATE_FORM.exec(text.trim());
  if (match === null) return undefined;
  const [, count, amount, unit] = match;
  const windowMs = (amount === '' ? 1 : Number(amount)) * UNIT_MS[unit!.toLowerCase()]!;
  return { requests: Number(count), windowMs };
}

/**
 * Money as the service writes it: decimal text. The simulator keeps every amount as a whole number
 * of the smallest unit it uses and only formats it at the end, so `rate × minutes` is exact — a
 * float would turn 0.0085 × 3 into 0.025500000000000002.
 */

/** The smallest money unit of simulated amounts: 0.00001. */
export const MONEY_SCALE = 5;

/**
 * Writes `units` (a whole number of 10^-scale) as decimal text with exactly `scale` decimals:
 * `formatDecimalUnits(850, 5)` is `"0.00850"`.
 */
export function formatDecimalUnits(units: number, scale: number = MONEY_SCALE): string {
  if (!Number.isSafeInteger(units)) throw new RangeError(`not a whole number of units: ${units}`);
  const negative = units < 0;
  const digits = String(Math.abs(units)).padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

/** Seconds rounded up to whole minutes, in seconds (21 → 60, 60 → 60, 0 → 0). */
export function roundUpToMinute(seconds: number): number {
  return Math.ceil(seconds / 60) * 60;
}

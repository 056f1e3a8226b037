import type { ConfigProblem } from './config-errors.js';
import type { Env } from './config-sources.js';

/** A decimal number as people write one: digits, an optional sign and fraction; no exponent or base. */
const PLAIN_DECIMAL = /^[+-]?[0-9]{1,30}(\.[0-9]{1,30})?$/;

/**
 * Typed reads of variables that record problems instead of throwing, so that one pass over the
 * configuration reports every problem at once.
 */
export class EnvReader {
  constructor(
    private readonly env: Env,
    private readonly problems: ConfigProblem[],
    private readonly origins: ReadonlyMap<string, string>,
  ) {}

  /** Records a problem with `key`, naming the config-file entry when the value came from there. */
  problem(key: string, message: string): void {
    const origin = this.origins.get(key);
    this.problems.push({ key: origin === undefined ? key : `${key} (from ${origin})`, message });
  }

  optionalString(key: string): string | undefined {
    const value = this.env[key]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  string(key: string, fallback: string): string {
    return this.optionalString(key) ?? fallback;
  }

  positiveNumber(key: string, fallback: number): number {
    return this.number(key, fallback, (n) => n > 0, 'a number greater than 0');
  }

  positiveInteger(key: string, fallback: number): number {
    return this.number(
      key,
      fallback,
      (n) => Number.isInteger(n) && n > 0,
      'a whole number of 1 or more',
    );
  }

  nonNegativeInteger(key: string, fallback: number): number {
    return this.number(
      key,
      fallback,
      (n) => Number.isInteger(n) && n >= 0,
      'a whole number of 0 or more',
    );
  }

  integerIn(key: string, fallback: number, min: number, max: number): number {
    return this.number(
      key,
      fallback,
      (n) => Number.isInteger(n) && n >= min && n <= max,
      `a whole number from ${min} to ${max}`,
    );
  }

  number(key: string, fallback: number, valid: (n: number) => boolean, expected: string): number {
    const raw = this.optionalString(key);
    if (raw === undefined) return fallback;
    // Only the plain decimal forms documented: Number() alone also takes 1e308, 0x10, 0b11, Infinity.
    const value = PLAIN_DECIMAL.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isFinite(value) || !valid(value)) {
      this.problem(key, `"${raw}" is not ${expected} (default ${fallback})`);
      return fallback;
    }
    return value;
  }
}

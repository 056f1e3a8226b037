import { DateTime } from 'luxon';
import { epochMicrosFromMillis, parseEpochMicros, type EpochMicros } from '../util/micros.js';
import { UsageError } from './exit-codes.js';

/** The forms --from/--to accept, for error messages and --help. */
export const INSTANT_FORMS =
  'YYYY-MM-DD (midnight UTC), YYYY-MM-DDTHH:MM[:SS[.ffffff]] (UTC), or either with an offset such as Z or +05:30';

/**
 * Reads a date or date-time typed by a person: a day is midnight UTC, a time without an offset is
 * UTC, an offset is honoured; microseconds are kept. Throws UsageError naming the accepted forms.
 */
export function parseUserInstant(text: string, flag: string): EpochMicros {
  const trimmed = text.trim();
  if (/^\d{4}-\d{2}-\d{2}$/.test(trimmed)) {
    const day = DateTime.fromISO(trimmed, { zone: 'utc' });
    if (day.isValid) return epochMicrosFromMillis(day.toMillis());
  } else {
    const at = parseEpochMicros(trimmed);
    if (at !== undefined) return at;
  }
  throw new UsageError(`${flag} "${text}" is not a date or time; accepted forms: ${INSTANT_FORMS}`);
}

/** Reads a whole number within bounds, or throws UsageError saying what is accepted. */
export function parseWholeNumber(text: string, flag: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag} "${text}" must be a whole number from ${min} to ${max}`);
  }
  return value;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `text` has the form of a UUID (8a1c7c6e-3f3e-4b8e-9d60-1f2a3b4c5d6e). */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}

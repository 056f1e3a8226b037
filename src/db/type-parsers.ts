/**
 * How values come back from Postgres, the same from both drivers (pg and PGlite).
 *
 * - `timestamptz`/`timestamp` come back as ISO 8601 text with every digit Postgres stored
 *   (microseconds included). Both drivers would otherwise build a JS Date, which keeps milliseconds
 *   only and silently rounds finance's timestamps.
 * - `int8` (bigint, `count(*)`) comes back as a JS number, failing loudly beyond 2^53 instead of
 *   rounding: pg returns text and PGlite a number, so without this the type depends on the driver.
 * - `numeric` and `date` stay text: amounts are never JS floats.
 */

/** Postgres type OIDs that telesync reads with its own parsers. */
export const PG_OID = {
  INT8: 20,
  DATE: 1082,
  TIMESTAMP: 1114,
  TIMESTAMPTZ: 1184,
  NUMERIC: 1700,
} as const;

const PG_TIMESTAMP_TEXT =
  /^(\d{4,}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(?:([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?)?$/;

/**
 * Converts Postgres's ISO-style output (`2022-03-29 05:40:29.456727+00`) to ISO 8601
 * (`2022-03-29T05:40:29.456727Z`), digit for digit. A UTC offset becomes `Z`; any other offset is
 * kept as `+HH:MM`. Values without an offset (plain `timestamp`) stay without one. Forms that are
 * not instants (`infinity`, BC dates) are returned unchanged.
 */
export function parsePgTimestampText(text: string): string {
  const m = PG_TIMESTAMP_TEXT.exec(text);
  if (m === null) return text;
  const [, date, time, sign, hh, mm, ss] = m;
  if (sign === undefined) return `${date}T${time}`;
  if (hh === '00' && (mm ?? '00') === '00' && (ss ?? '00') === '00') return `${date}T${time}Z`;
  return `${date}T${time}${sign}${hh}:${mm ?? '00'}${ss !== undefined ? `:${ss}` : ''}`;
}

/** Parses an `int8` as a JS number; throws rather than lose precision. */
export function parsePgInt8Text(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`bigint value ${text} does not fit a JS number exactly`);
  }
  return value;
}

const keepText = (text: string): string => text;

/** Text parsers by OID, shared by both drivers. */
export const TEXT_PARSERS: Readonly<Record<number, (text: string) => unknown>> = {
  [PG_OID.INT8]: parsePgInt8Text,
  [PG_OID.DATE]: keepText,
  [PG_OID.TIMESTAMP]: parsePgTimestampText,
  [PG_OID.TIMESTAMPTZ]: parsePgTimestampText,
  [PG_OID.NUMERIC]: keepText,
};

/**
 * Session settings both drivers apply on every connection, so that text output of timestamps is
 * in UTC and unambiguous whatever the server's defaults are.
 */
export const SESSION_SETTINGS: Readonly<Record<string, string>> = {
  TimeZone: 'UTC',
  DateStyle: 'ISO, YMD',
  IntervalStyle: 'iso_8601',
  extra_float_digits: '3',
};

/**
 * Instants at microsecond precision, as integers of microseconds since the Unix epoch.
 *
 * JS Date and luxon keep milliseconds only; the service's timestamps carry microseconds, and a
 * window bound or a record's time must never be rounded. Epoch microseconds of any date up to
 * the year 2255 fit a JS number exactly (below 2^53).
 */

/** Microseconds since 1970-01-01T00:00:00Z. */
export type EpochMicros = number;

export const MICROS_PER_SECOND = 1_000_000;
export const MICROS_PER_MINUTE = 60 * MICROS_PER_SECOND;
export const MICROS_PER_HOUR = 60 * MICROS_PER_MINUTE;
export const MICROS_PER_DAY = 24 * MICROS_PER_HOUR;

/** The parts of a date-time text, before any offset is applied. */
export interface DateTimeParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** 0–999999. */
  micros: number;
  /** Minutes east of UTC; undefined when the text has no offset. */
  offsetMinutes: number | undefined;
}

// date, 'T' or ' ', time with optional seconds and fraction, optional Z or ±HH[:MM].
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses `YYYY-MM-DD[T ]HH:MM[:SS[.ffffff]][Z|±HH[:MM]]` into its parts, checking that the date and
 * time exist (no February 30th, no hour 24). Returns undefined when it does not fit.
 */
export function parseDateTimeParts(text: string): DateTimeParts | undefined {
  const m = DATE_TIME.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, frac, offset] = m;
  const parts: DateTimeParts = {
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hour: Number(h),
    minute: Number(mi),
    second: s === undefined ? 0 : Number(s),
    micros: frac === undefined ? 0 : Number(frac.padEnd(6, '0')),
    offsetMinutes: offset === undefined ? undefined : parseOffsetMinutes(offset),
  };
  if (parts.offsetMinutes !== undefined && Number.isNaN(parts.offsetMinutes)) return undefined;
  if (
    parts.month < 1 ||
    parts.month > 12 ||
    parts.day < 1 ||
    parts.day > daysInMonth(parts.year, parts.month)
  )
    return undefined;
  if (parts.hour > 23 || parts.minute > 59 || parts.second > 59) return undefined;
  return parts;
}

function parseOffsetMinutes(offset: string): number {
  if (offset === 'Z') return 0;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  // Real offsets lie within ±15:59; anything beyond is a malformed value, not a time zone.
  if (hours > 15 || minutes > 59) return Number.NaN;
  return sign * (hours * 60 + minutes);
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/** Days in `month` (1–12) of `year`, in the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month]!;
}

/**
 * Days from 1970-01-01 to a proleptic Gregorian date, by integer arithmetic (H. Hinnant's
 * days_from_civil): no Date object per timestamp on the hot path of a backfill.
 */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The instant the parts name; parts without an offset are read as UTC. */
function partsToEpochMicros(parts: DateTimeParts): EpochMicros {
  const seconds =
    daysFromCivil(parts.year, parts.month, parts.day) * 86_400 +
    parts.hour * 3_600 +
    parts.minute * 60 +
    parts.second;
  return (
    seconds * MICROS_PER_SECOND + parts.micros - (parts.offsetMinutes ?? 0) * MICROS_PER_MINUTE
  );
}

/** Parses a date-time text to epoch microseconds; undefined when it does not fit. */
export function parseEpochMicros(text: string): EpochMicros | undefined {
  const utc = utcIsoMicros(text);
  if (utc !== undefined) return utc;
  const parts = parseDateTimeParts(text);
  return parts === undefined ? undefined : partsToEpochMicros(parts);
}

/**
 * parseEpochMicros of the form telesync itself writes, `YYYY-MM-DDTHH:MM:SS[.f…]Z` (1–6 fraction
 * digits), read by its fixed layout: the loader reads every row's timestamps so (binary COPY), and
 * the regular expression cost a backfill 7% more CPU. Undefined for any other text, which the
 * general path then reads or refuses.
 */
function utcIsoMicros(text: string): EpochMicros | undefined {
  const length = text.length;
  if (
    length < 20 ||
    length === 21 ||
    length > 27 ||
    text.charCodeAt(4) !== DASH ||
    text.charCodeAt(7) !== DASH ||
    text.charCodeAt(10) !== LETTER_T ||
    text.charCodeAt(13) !== COLON ||
    text.charCodeAt(16) !== COLON ||
    text.charCodeAt(length - 1) !== LETTER_Z ||
    (length > 20 && text.charCodeAt(19) !== POINT)
  ) {
    return undefined;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  const fractionDigits = Math.max(0, length - 21);
  const fraction = digitsAt(text, 20, fractionDigits) * 10 ** (6 - fractionDigits);
  if (
    Number.isNaN(year + month + day + hour + minute + second + fraction) ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    return undefined;
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
  return seconds * MICROS_PER_SECOND + fraction;
}

const DASH = 0x2d;
const COLON = 0x3a;
const POINT = 0x2e;
const LETTER_T = 0x54;
const LETTER_Z = 0x5a;
const DIGIT_0 = 0x30;

/** The number the `count` decimal digits at `at` spell (0 for none); NaN when one is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - DIGIT_0;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

/** Like parseEpochMicros, but throws on text that is not a date-time. */
export function toEpochMicros(text: string): EpochMicros {
  const value = parseEpochMicros(text);
  if (value === undefined) throw new RangeError(`not a date-time: "${text}"`);
  return value;
}

/** Whole milliseconds (Date.now(), luxon) to epoch microseconds. */
export function epochMicrosFromMillis(millis: number): EpochMicros {
  return Math.trunc(millis) * 1000;
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

/**
 * The UTC date of a day number (days since 1970-01-01), by integer arithmetic (H. Hinnant's
 * civil_from_days): no Date object per timestamp on the hot path of a backfill.
 */
function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear =
    dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** "00" to "99". */
const TWO_DIGITS: readonly string[] = Array.from({ length: 100 }, (_, n) =>
  n < 10 ? `0${n}` : String(n),
);

/**
 * The date text of the last day formatted. Timestamps come in runs of the same day (a call's
 * start, answer and end; a backfill's window), and every string made here is garbage a moment
 * later: formatting was a tenth of what a backfill allocated.
 */
let lastDay = Number.NaN;
let lastDayText = '';

function dayText(days: number): string {
  if (days !== lastDay) {
    const { year, month, day } = civilFromDays(days);
    lastDayText = `${pad(year, 4)}-${TWO_DIGITS[month]!}-${TWO_DIGITS[day]!}`;
    lastDay = days;
  }
  return lastDayText;
}

/** Six digits of microseconds, zeros in front. */
function sixDigits(fraction: number): string {
  return fraction >= 100_000 ? String(fraction) : String(fraction + 1_000_000).slice(1);
}

/** UTC calendar parts of an instant. */
function utcParts(micros: EpochMicros): { date: string; time: string; fraction: number } {
  const seconds = Math.floor(micros / MICROS_PER_SECOND);
  const fraction = micros - seconds * MICROS_PER_SECOND;
  const days = Math.floor(seconds / 86_400);
  const secondOfDay = seconds - days * 86_400;
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor((secondOfDay % 3600) / 60);
  return {
    date: dayText(days),
    time: `${TWO_DIGITS[hour]!}:${TWO_DIGITS[minute]!}:${TWO_DIGITS[secondOfDay % 60]!}`,
    fraction,
  };
}

/**
 * ISO 8601 in UTC: `2022-03-29T05:40:29.456727Z`, or `2022-03-29T05:40:29Z` when the fraction is
 * zero. Exact to the microsecond.
 */
export function formatIsoMicros(micros: EpochMicros): string {
  const { date, time, fraction } = utcParts(micros);
  return `${date}T${time}${fraction === 0 ? '' : `.${sixDigits(fraction)}`}Z`;
}

/**
 * ISO 8601 in UTC with exactly six fraction digits, `2022-03-29T05:40:00.000000Z`: the one form of
 * every timestamp in machine output (`--json`, log fields), so scripts can compare them as text.
 */
export function formatIsoFixed(micros: EpochMicros): string {
  const { date, time, fraction } = utcParts(micros);
  return `${date}T${time}.${sixDigits(fraction)}Z`;
}

/** formatIsoFixed of a date-time text (as the database returns it); null stays null. */
export function fixIsoText(text: string | null | undefined): string | null {
  if (text === null || text === undefined) return null;
  const micros = parseEpochMicros(text);
  return micros === undefined ? text : formatIsoFixed(micros);
}

/**
 * The form the trunk-call list takes for end_time filters: `YYYY-MM-DD HH:MM:SS[.uuuuuu]`, UTC,
 * with the fraction only when it is not zero.
 */
export function formatFilterMicros(micros: EpochMicros): string {
  const { date, time, fraction } = utcParts(micros);
  return `${date} ${time}${fraction === 0 ? '' : `.${sixDigits(fraction)}`}`;
}

/**
 * The service's record form `YYYY-MM-DD HH:MM:SS[.ffffff]+HH:MM` for an instant seen at a given
 * offset (minutes east of UTC). Used by the simulator to write records in mixed offsets.
 */
export function formatServiceTime(
  micros: EpochMicros,
  offsetMinutes: number,
  withFraction: boolean,
): string {
  const { date, time, fraction } = utcParts(micros + offsetMinutes * MICROS_PER_MINUTE);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${pad(Math.floor(abs / 60), 2)}:${pad(abs % 60, 2)}`;
  return `${date} ${time}${withFraction ? `.${sixDigits(fraction)}` : ''}${offset}`;
}

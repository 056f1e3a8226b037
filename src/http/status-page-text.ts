import { formatIsoMicros, parseEpochMicros } from '../util/micros.js';

/**
 * How the status page words its figures for a person: one precision for every time (the
 * second), thousands separators, durations past 48 hours in days, an error's cause apart from
 * its details, and runs that repeat folded into one line. Pure functions of their inputs.
 */

/** An instant to the second, in UTC: `2026-11-28 06:00:12`. Text that is no date is kept. */
export function formatTime(iso: string): string {
  const micros = parseEpochMicros(iso);
  if (micros === undefined) return iso;
  return formatIsoMicros(micros).slice(0, 19).replace('T', ' ');
}

/** A whole number with thousands separators: `181,004`. */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/**
 * A decimal text with thousands separators, every digit kept (amounts are exact `numeric`s, never
 * floats): `12345.67890` → `12,345.67890`. Text that is not a decimal is kept.
 */
export function formatAmount(decimal: string): string {
  const match = /^(-?)(\d+)(\.\d+)?$/.exec(decimal.trim());
  if (match === null) return decimal;
  const [, sign = '', whole = '', fraction = ''] = match;
  return `${sign}${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction}`;
}

/**
 * A duration in the largest two units that matter: `45 s`, `12 min`, `3 h 5 min`; past 48 hours
 * in days: `2 d 4 h`.
 */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** An error text as a person reads it: the cause, and the rest behind a click. */
export interface ErrorText {
  readonly cause: string;
  /** The whole text, when the cause leaves something out; undefined when it is all there is. */
  readonly details: string | undefined;
}

/** `GET /v1/Account/…/?…` and the like: the request a failure names, which is detail. */
const REQUEST = /\b(?:GET|POST|PUT|PATCH|DELETE|HEAD) \S+(?: failed(?: after \d+ attempts)?)?:? ?/g;
const API_ID = / ?\[api_id [^\]]*\]/g;
const URL = /\bhttps?:\/\/\S+/g;
/** Longer than this, a cause is cut at its first clause. */
const CAUSE_MAX_CHARS = 160;

/**
 * Splits a run's error into its cause (the request it failed on, api ids and URLs taken out, at
 * most one clause of {@link CAUSE_MAX_CHARS}) and the details (the whole text, when the cause
 * leaves anything out).
 */
export function splitErrorText(text: string): ErrorText {
  const whole = text.trim();
  let cause = whole.replace(REQUEST, '').replace(API_ID, '').replace(URL, '').trim();
  cause = cause.replace(/^[:;,\s]+/, '').replace(/\s{2,}/g, ' ');
  if (cause === '') cause = whole;
  if (cause.length > CAUSE_MAX_CHARS) {
    const clause = /^(.{20,}?)(?:; |\. )/.exec(cause)?.[1];
    cause =
      clause !== undefined && clause.length <= CAUSE_MAX_CHARS
        ? clause
        : `${cause.slice(0, CAUSE_MAX_CHARS - 1)}…`;
  }
  return { cause, details: cause === whole ? undefined : whole };
}

/** What of a run the folding compares and keeps. */
export interface FoldableRun {
  readonly status: string;
  readonly error: string | null;
}

/** Runs in a row with the same outcome, shown as one line. */
export interface FoldedRuns<Run extends FoldableRun> {
  /** The newest run of the fold (runs are given newest first). */
  readonly newest: Run;
  /** The oldest run of the fold; the same as `newest` for a single run. */
  readonly oldest: Run;
  readonly count: number;
}

/**
 * Folds consecutive skipped runs with the same reason into one entry (a scheduler skipping every
 * tick for the same cause would otherwise fill the list with one sentence); every other run is an
 * entry of its own. Order is kept.
 */
export function foldRepeatedSkips<Run extends FoldableRun>(
  runs: readonly Run[],
): FoldedRuns<Run>[] {
  const folded: { newest: Run; oldest: Run; count: number }[] = [];
  for (const run of runs) {
    const last = folded.at(-1);
    if (
      last !== undefined &&
      run.status === 'skipped' &&
      last.newest.status === 'skipped' &&
      last.newest.error === run.error
    ) {
      last.oldest = run;
      last.count += 1;
    } else folded.push({ newest: run, oldest: run, count: 1 });
  }
  return folded;
}

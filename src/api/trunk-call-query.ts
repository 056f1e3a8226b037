import { PAGE_LIMIT_MAX } from '../domain/service-rules.js';
import { formatFilterMicros, parseEpochMicros, type EpochMicros } from '../util/micros.js';

/**
 * The query of the trunk-call list (spec 4.6): the client encodes it and the simulator parses it
 * with the same module, so the two agree on every name, suffix and form.
 */

/** A comparison: the bare name, or one of the suffixes `__gt`, `__gte`, `__lt`, `__lte`. */
export type Comparison = 'eq' | 'gt' | 'gte' | 'lt' | 'lte';
export const COMPARISONS: readonly Comparison[] = ['eq', 'gt', 'gte', 'lt', 'lte'];

export type RangeFilter<T> = Partial<Record<Comparison, T>>;

export const CALL_DIRECTIONS = ['inbound', 'outbound'] as const;
export const HANGUP_SOURCES = ['customer', 'carrier', 'trunk'] as const;
export const STIR_VERIFICATIONS = ['Verified', 'Not Verified', 'Not Applicable'] as const;

export interface TrunkCallFilters {
  /** Exact number or prefix. */
  from_number?: string;
  /** Exact number or prefix. */
  to_number?: string;
  call_direction?: (typeof CALL_DIRECTIONS)[number];
  /** Seconds. */
  bill_duration?: RangeFilter<number>;
  /** Instants, epoch microseconds (sent as `YYYY-MM-DD HH:MM:SS[.uuuuuu]` UTC). */
  end_time?: RangeFilter<EpochMicros>;
  hangup_cause_code?: number;
  hangup_source?: (typeof HANGUP_SOURCES)[number];
  stir_verification?: (typeof STIR_VERIFICATIONS)[number];
  limit?: number;
  offset?: number;
}

function paramName(field: string, comparison: Comparison): string {
  return comparison === 'eq' ? field : `${field}__${comparison}`;
}

/** Query parameters for a trunk-call list request, in a stable order. */
export function encodeTrunkCallQuery(filters: TrunkCallFilters): URLSearchParams {
  const params = new URLSearchParams();
  const put = (name: string, value: string | number | undefined): void => {
    if (value !== undefined) params.append(name, String(value));
  };
  put('from_number', filters.from_number);
  put('to_number', filters.to_number);
  put('call_direction', filters.call_direction);
  for (const comparison of COMPARISONS)
    put(paramName('bill_duration', comparison), filters.bill_duration?.[comparison]);
  for (const comparison of COMPARISONS) {
    const at = filters.end_time?.[comparison];
    put(paramName('end_time', comparison), at === undefined ? undefined : formatFilterMicros(at));
  }
  put('hangup_cause_code', filters.hangup_cause_code);
  put('hangup_source', filters.hangup_source);
  put('stir_verification', filters.stir_verification);
  put('limit', filters.limit);
  put('offset', filters.offset);
  return params;
}

export interface QueryProblem {
  param: string;
  message: string;
}

export type ParsedTrunkCallQuery =
  { ok: true; filters: TrunkCallFilters } | { ok: false; problems: QueryProblem[] };

const END_TIME_FORM = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?$/;

/**
 * Parses an end_time filter value: `YYYY-MM-DD HH:MM[:ss[.uuuuuu]]`, read as UTC (4.6 rule 4).
 * Undefined when it is not of that form or names a time that does not exist.
 */
export function parseEndTimeFilter(text: string): EpochMicros | undefined {
  return END_TIME_FORM.test(text) ? parseEpochMicros(text) : undefined;
}

const INTEGER = /^-?\d+$/;

/**
 * Parses the query of a trunk-call list request. Only the form of each parameter is checked here;
 * rules that need the clock (the horizon, the longest range, the default window: domain/service-rules.ts)
 * are the simulator's. Unknown parameters are reported, since a misspelt filter silently ignored would
 * return the wrong calls.
 */
export function parseTrunkCallQuery(params: URLSearchParams): ParsedTrunkCallQuery {
  const problems: QueryProblem[] = [];
  const filters: TrunkCallFilters = {};
  const known = new Set<string>();

  const single = (name: string): string | undefined => {
    known.add(name);
    const values = params.getAll(name);
    if (values.length > 1)
      problems.push({ param: name, message: `${name} is given ${values.length} times` });
    return values[0];
  };
  const integer = (name: string, min: number): number | undefined => {
    const raw = single(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!INTEGER.test(raw) || !Number.isSafeInteger(value) || value < min) {
      problems.push({
        param: name,
        message: `${name} must be a whole number${min > 0 ? ` of at least ${min}` : min === 0 ? ' of 0 or more' : ''} (got "${raw}")`,
      });
      return undefined;
    }
    return value;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[]): T | undefined => {
    const raw = single(name);
    if (raw === undefined) return undefined;
    if (!allowed.includes(raw as T)) {
      problems.push({
        param: name,
        message: `${name} must be one of ${allowed.join(', ')} (got "${raw}")`,
      });
      return undefined;
    }
    return raw as T;
  };

  const from = single('from_number');
  if (from !== undefined) filters.from_number = from;
  const to = single('to_number');
  if (to !== undefined) filters.to_number = to;
  const direction = oneOf('call_direction', CALL_DIRECTIONS);
  if (direction !== undefined) filters.call_direction = direction;

  for (const comparison of COMPARISONS) {
    const name = paramName('bill_duration', comparison);
    const value = integer(name, 0);
    if (value !== undefined) (filters.bill_duration ??= {})[comparison] = value;
  }
  for (const comparison of COMPARISONS) {
    const name = paramName('end_time', comparison);
    const raw = single(name);
    if (raw === undefined) continue;
    const at = parseEndTimeFilter(raw);
    if (at === undefined) {
      problems.push({
        param: name,
        message: `${name} must have the form YYYY-MM-DD HH:MM[:ss[.uuuuuu]] in UTC (got "${raw}")`,
      });
    } else {
      (filters.end_time ??= {})[comparison] = at;
    }
  }

  const cause = integer('hangup_cause_code', Number.MIN_SAFE_INTEGER);
  if (cause !== undefined) filters.hangup_cause_code = cause;
  const source = oneOf('hangup_source', HANGUP_SOURCES);
  if (source !== undefined) filters.hangup_source = source;
  const stir = oneOf('stir_verification', STIR_VERIFICATIONS);
  if (stir !== undefined) filters.stir_verification = stir;

  const limit = integer('limit', 1);
  if (limit !== undefined) {
    if (limit > PAGE_LIMIT_MAX) {
      problems.push({
        param: 'limit',
        message: `limit must be at most ${PAGE_LIMIT_MAX} (got ${limit})`,
      });
    } else {
      filters.limit = limit;
    }
  }
  const offset = integer('offset', 0);
  if (offset !== undefined) filters.offset = offset;

  for (const name of new Set(params.keys())) {
    if (!known.has(name)) problems.push({ param: name, message: `unknown parameter ${name}` });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, filters };
}

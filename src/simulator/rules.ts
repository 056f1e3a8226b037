import { parseTrunkCallQuery, type TrunkCallFilters } from '../api/trunk-call-query.js';
import {
  PAGE_LIMIT_MAX,
  TRUNK_DEFAULT_WINDOW_DAYS,
  TRUNK_HISTORY_DAYS,
  TRUNK_MAX_RANGE_DAYS,
} from '../domain/service-rules.js';
import { formatFilterMicros, MICROS_PER_DAY, type EpochMicros } from '../util/micros.js';

/**
 * The list rules of the service that depend on the clock or on paging, as pure functions of the
 * query and `now`; the rules' values are domain/service-rules.ts, which the client and the planner
 * read too. The form of each trunk-list parameter is checked by the shared parseTrunkCallQuery, so
 * the client and the simulator agree on it.
 */

/** A trunk list request the simulator can answer. */
export interface TrunkCallPlan {
  /** Calls ending at or after this instant… */
  readonly lowerMicros: EpochMicros;
  /** …and at or before this one (never after `now`: only completed calls). Empty when below lower. */
  readonly upperMicros: EpochMicros;
  /** Every filter given; end_time is already folded into the two bounds. */
  readonly filters: TrunkCallFilters;
  readonly limit: number;
  readonly offset: number;
}

export type TrunkCallPlanResult =
  { ok: true; plan: TrunkCallPlan } | { ok: false; problems: string[] };

/**
 * Checks a trunk-list query against every rule of 4.6 and turns its end_time filters into one
 * inclusive range:
 * - no end_time filter: the last TRUNK_DEFAULT_WINDOW_DAYS up to now;
 * - a lower bound (`end_time`, `__gt`, `__gte`) older than now − TRUNK_HISTORY_DAYS is refused,
 *   naming the horizon (A15); a lower bound alone runs up to now, an upper bound alone from the
 *   horizon (A16);
 * - a lower and an upper bound (`__gt`/`__gte` with `__lt`/`__lte`) at most TRUNK_MAX_RANGE_DAYS
 *   apart, measured between the values given, else refused;
 * - the upper end never passes `now`: only completed calls are listed;
 * - a range that admits nothing (below the horizon, lower above upper) is empty, not an error (A32).
 * Every problem is reported, not only the first.
 */
export function planTrunkCallQuery(
  params: URLSearchParams,
  nowMicros: EpochMicros,
): TrunkCallPlanResult {
  const parsed = parseTrunkCallQuery(params);
  if (!parsed.ok) return { ok: false, problems: parsed.problems.map((problem) => problem.message) };
  const { filters } = parsed;
  const problems: string[] = [];
  const horizon = nowMicros - TRUNK_HISTORY_DAYS * MICROS_PER_DAY;
  const end = filters.end_time ?? {};

  const lowers: { name: string; value: EpochMicros; inclusive: EpochMicros }[] = [];
  const uppers: { name: string; value: EpochMicros; inclusive: EpochMicros }[] = [];
  if (end.eq !== undefined) {
    lowers.push({ name: 'end_time', value: end.eq, inclusive: end.eq });
    uppers.push({ name: 'end_time', value: end.eq, inclusive: end.eq });
  }
  if (end.gte !== undefined)
    lowers.push({ name: 'end_time__gte', value: end.gte, inclusive: end.gte });
  if (end.gt !== undefined)
    lowers.push({ name: 'end_time__gt', value: end.gt, inclusive: end.gt + 1 });
  if (end.lte !== undefined)
    uppers.push({ name: 'end_time__lte', value: end.lte, inclusive: end.lte });
  if (end.lt !== undefined)
    uppers.push({ name: 'end_time__lt', value: end.lt, inclusive: end.lt - 1 });

  for (const lower of lowers) {
    if (lower.inclusive < horizon) {
      problems.push(
        `${lower.name} ${formatFilterMicros(lower.value)} is older than the ${TRUNK_HISTORY_DAYS}-day ` +
          `horizon: only calls that ended at or after ${formatFilterMicros(horizon)} UTC can be listed`,
      );
    }
  }

  // The range cap concerns a range built from the suffixed bounds (4.6 rule 3).
  const rangeLower = lowers.filter((bound) => bound.name !== 'end_time');
  const rangeUpper = uppers.filter((bound) => bound.name !== 'end_time');
  if (rangeLower.length > 0 && rangeUpper.length > 0) {
    const from = Math.max(...rangeLower.map((bound) => bound.value));
    const to = Math.min(...rangeUpper.map((bound) => bound.value));
    if (to - from > TRUNK_MAX_RANGE_DAYS * MICROS_PER_DAY) {
      problems.push(
        `the end_time range from ${formatFilterMicros(from)} to ${formatFilterMicros(to)} spans more ` +
          `than ${TRUNK_MAX_RANGE_DAYS} days; split it into ranges of at most ${TRUNK_MAX_RANGE_DAYS} days`,
      );
    }
  }
  if (problems.length > 0) return { ok: false, problems };

  let lowerMicros: EpochMicros;
  let upperMicros: EpochMicros;
  if (lowers.length === 0 && uppers.length === 0) {
    lowerMicros = nowMicros - TRUNK_DEFAULT_WINDOW_DAYS * MICROS_PER_DAY;
    upperMicros = nowMicros;
  } else {
    lowerMicros = lowers.length > 0 ? Math.max(...lowers.map((bound) => bound.inclusive)) : horizon;
    upperMicros =
      uppers.length > 0 ? Math.min(...uppers.map((bound) => bound.inclusive)) : nowMicros;
  }
  return {
    ok: true,
    plan: {
      lowerMicros,
      upperMicros: Math.min(upperMicros, nowMicros),
      filters,
      limit: filters.limit ?? PAGE_LIMIT_MAX,
      offset: filters.offset ?? 0,
    },
  };
}

/** Paging of a list other than the trunk list, with its filters. */
export interface ListQuery {
  readonly limit: number;
  readonly offset: number;
  /** The filters given, by name (each at most once). */
  readonly filters: Readonly<Record<string, string>>;
}

export type ListQueryResult = { ok: true; query: ListQuery } | { ok: false; problems: string[] };

const WHOLE_NUMBER = /^\d+$/;

/**
 * Parses the query of a list: `limit` (1 to PAGE_LIMIT_MAX, its default; more is refused, A5), `offset` (0 or more)
 * and the named filters. Unknown parameters are refused, as on the trunk list (assumption A31): a
 * misspelt filter silently ignored would return the wrong items.
 */
export function parseListQuery(
  params: URLSearchParams,
  filterNames: readonly string[] = [],
): ListQueryResult {
  const problems: string[] = [];
  const filters: Record<string, string> = {};
  let limit = PAGE_LIMIT_MAX;
  let offset = 0;
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    const raw = values[0] ?? '';
    if (values.length > 1) {
      problems.push(`${name} is given ${values.length} times`);
      continue;
    }
    if (name === 'limit') {
      const value = Number(raw);
      if (!WHOLE_NUMBER.test(raw) || value < 1) {
        problems.push(`limit must be a whole number of at least 1 (got "${raw}")`);
      } else if (value > PAGE_LIMIT_MAX) {
        problems.push(`limit must be at most ${PAGE_LIMIT_MAX} (got ${raw})`);
      } else {
        limit = value;
      }
    } else if (name === 'offset') {
      const value = Number(raw);
      if (!WHOLE_NUMBER.test(raw) || !Number.isSafeInteger(value)) {
        problems.push(`offset must be a whole number of 0 or more (got "${raw}")`);
      } else {
        offset = value;
      }
    } else if (filterNames.includes(name)) {
      filters[name] = raw;
    } else {
      problems.push(`unknown parameter ${name}`);
    }
  }
  return problems.length > 0
    ? { ok: false, problems }
    : { ok: true, query: { limit, offset, filters } };
}

/** A page of a list: the slice and the meta block of the envelope. */
export interface PageMeta {
  limit: number;
  offset: number;
  next: string | null;
  previous: string | null;
  total_count: number;
}

/**
 * The meta block of a list page (assumption A6): next and previous are the request's path and
 * query, every filter kept, with `limit` and `offset` moved; null when there is no such page.
 */
export function buildPageMeta(
  path: string,
  params: URLSearchParams,
  limit: number,
  offset: number,
  totalCount: number,
): PageMeta {
  const link = (at: number): string => {
    const moved = new URLSearchParams();
    for (const [name, value] of params)
      if (name !== 'limit' && name !== 'offset') moved.append(name, value);
    moved.append('limit', String(limit));
    moved.append('offset', String(at));
    return `${path}?${moved.toString()}`;
  };
  return {
    limit,
    offset,
    next: offset + limit < totalCount ? link(offset + limit) : null,
    previous: offset > 0 ? link(Math.max(0, offset - limit)) : null,
    total_count: totalCount,
  };
}

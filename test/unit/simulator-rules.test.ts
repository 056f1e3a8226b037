import { describe, expect, it } from 'vitest';
import {
  buildPageMeta,
  parseListQuery,
  planTrunkCallQuery,
  type TrunkCallPlan,
} from '../../src/simulator/rules.js';
import { formatFilterMicros, MICROS_PER_DAY, toEpochMicros } from '../../src/util/micros.js';

const NOW = toEpochMicros('2024-06-01T12:00:00.500000Z');
const DAY = MICROS_PER_DAY;
const at = (micros: number): string => formatFilterMicros(micros);

function plan(query: Record<string, string>): TrunkCallPlan {
  const result = planTrunkCallQuery(new URLSearchParams(query), NOW);
  if (!result.ok) throw new Error(`expected a plan, got: ${result.problems.join('; ')}`);
  return result.plan;
}

function problems(query: Record<string, string>): string[] {
  const result = planTrunkCallQuery(new URLSearchParams(query), NOW);
  if (result.ok) throw new Error('expected the query to be refused');
  return result.problems;
}

describe('trunk list rules (spec 4.6)', () => {
  it('without an end_time filter, lists the last 7 days up to now', () => {
    const p = plan({});
    expect(p.lowerMicros).toBe(NOW - 7 * DAY);
    expect(p.upperMicros).toBe(NOW);
    expect(p.limit).toBe(20);
    expect(p.offset).toBe(0);
  });

  it('refuses a lower bound older than the 90-day horizon, naming the horizon', () => {
    const horizon = NOW - 90 * DAY;
    expect(plan({ end_time__gte: at(horizon), end_time__lt: at(horizon + DAY) }).lowerMicros).toBe(
      horizon,
    );
    const refused = problems({ end_time__gte: at(horizon - 1), end_time__lt: at(horizon + DAY) });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/90-day horizon/);
    expect(refused[0]).toContain(at(horizon));
    // __gt X admits X + 1 µs: a __gt one microsecond before the horizon is inside it.
    expect(plan({ end_time__gt: at(horizon - 1) }).lowerMicros).toBe(horizon);
    expect(problems({ end_time__gt: at(horizon - 2) })[0]).toMatch(/horizon/);
    expect(problems({ end_time: at(horizon - 1_000_000) })[0]).toMatch(/horizon/);
  });

  it('accepts a range of exactly 30 days and refuses 30 days and one microsecond', () => {
    const from = NOW - 40 * DAY;
    expect(plan({ end_time__gte: at(from), end_time__lt: at(from + 30 * DAY) }).upperMicros).toBe(
      from + 30 * DAY - 1,
    );
    expect(plan({ end_time__gte: at(from), end_time__lte: at(from + 30 * DAY) }).upperMicros).toBe(
      from + 30 * DAY,
    );
    for (const upper of ['end_time__lt', 'end_time__lte']) {
      const refused = problems({ end_time__gte: at(from), [upper]: at(from + 30 * DAY + 1) });
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatch(/more than 30 days/);
    }
    expect(problems({ end_time__gt: at(from), end_time__lte: at(from + 31 * DAY) })[0]).toMatch(
      /30 days/,
    );
  });

  it('reports every broken rule at once', () => {
    const refused = problems({
      end_time__gte: at(NOW - 95 * DAY),
      end_time__lte: at(NOW - 10 * DAY),
    });
    expect(refused).toHaveLength(2);
  });

  it('reads one-sided ranges as A16 says: a lower bound up to now, an upper bound from the horizon', () => {
    const lowerOnly = plan({ end_time__gte: at(NOW - 60 * DAY) });
    expect(lowerOnly.lowerMicros).toBe(NOW - 60 * DAY);
    expect(lowerOnly.upperMicros).toBe(NOW);
    const upperOnly = plan({ end_time__lt: at(NOW - DAY) });
    expect(upperOnly.lowerMicros).toBe(NOW - 90 * DAY);
    expect(upperOnly.upperMicros).toBe(NOW - DAY - 1);
    // An upper bound before the horizon admits nothing: an empty range, not an error (A32).
    const empty = plan({ end_time__lte: at(NOW - 100 * DAY) });
    expect(empty.upperMicros).toBeLessThan(empty.lowerMicros);
    // With a lower bound older than the horizon the same range is a 400, not empty (A15, A32).
    expect(
      problems({ end_time__gte: at(NOW - 110 * DAY), end_time__lte: at(NOW - 100 * DAY) })[0],
    ).toMatch(/90-day horizon/);
  });

  it('lists only completed calls: the range never reaches past now', () => {
    const p = plan({ end_time__gte: at(NOW - DAY), end_time__lte: at(NOW + 5 * DAY) });
    expect(p.upperMicros).toBe(NOW);
  });

  it('turns each end_time suffix into its inclusive bound, and a bare end_time into one instant', () => {
    const x = NOW - 3 * DAY + 123_456;
    expect(plan({ end_time__gte: at(x) }).lowerMicros).toBe(x);
    expect(plan({ end_time__gt: at(x) }).lowerMicros).toBe(x + 1);
    expect(plan({ end_time__lte: at(x) }).upperMicros).toBe(x);
    expect(plan({ end_time__lt: at(x) }).upperMicros).toBe(x - 1);
    const exact = plan({ end_time: at(x) });
    expect([exact.lowerMicros, exact.upperMicros]).toEqual([x, x]);
  });

  it('accepts the minute form and reads it as UTC', () => {
    expect(plan({ end_time__gte: '2024-05-30 10:15' }).lowerMicros).toBe(
      toEpochMicros('2024-05-30T10:15:00Z'),
    );
  });

  it('refuses a limit over 20, a bad form, and unknown parameters', () => {
    expect(problems({ limit: '21' })).toEqual(['limit must be at most 20 (got 21)']);
    expect(plan({ limit: '20', offset: '40' })).toMatchObject({ limit: 20, offset: 40 });
    expect(problems({ end_time__gte: '01/06/2024' })[0]).toMatch(/YYYY-MM-DD HH:MM/);
    expect(problems({ bill_duration__gt: 'ten' })[0]).toMatch(/bill_duration__gt/);
    expect(problems({ hangup_source: 'Error' })[0]).toMatch(/customer, carrier, trunk/);
    expect(problems({ end_time_gte: at(NOW) })[0]).toMatch(/unknown parameter end_time_gte/);
  });

  it('keeps the field filters with every suffix for the index', () => {
    const p = plan({
      from_number: '1415',
      to_number: 'sip:',
      call_direction: 'inbound',
      bill_duration__gte: '10',
      bill_duration__lt: '60',
      hangup_cause_code: '4000',
      hangup_source: 'customer',
      stir_verification: 'Verified',
    });
    expect(p.filters).toMatchObject({
      from_number: '1415',
      to_number: 'sip:',
      call_direction: 'inbound',
      bill_duration: { gte: 10, lt: 60 },
      hangup_cause_code: 4000,
      hangup_source: 'customer',
      stir_verification: 'Verified',
    });
  });
});

describe('list paging', () => {
  it('takes limit 1–20 and offset, and refuses anything else', () => {
    expect(parseListQuery(new URLSearchParams(''))).toEqual({
      ok: true,
      query: { limit: 20, offset: 0, filters: {} },
    });
    expect(
      parseListQuery(new URLSearchParams('limit=5&offset=10&country=US'), ['country']),
    ).toEqual({
      ok: true,
      query: { limit: 5, offset: 10, filters: { country: 'US' } },
    });
    const refused = parseListQuery(new URLSearchParams('limit=21&offset=-1&colour=red&limit=3'));
    expect(refused).toEqual({
      ok: false,
      problems: [
        'limit is given 2 times',
        'offset must be a whole number of 0 or more (got "-1")',
        'unknown parameter colour',
      ],
    });
    expect(parseListQuery(new URLSearchParams('limit=0'))).toMatchObject({ ok: false });
    expect(parseListQuery(new URLSearchParams('limit=21'))).toEqual({
      ok: false,
      problems: ['limit must be at most 20 (got 21)'],
    });
  });

  it('builds next and previous as relative paths with every filter kept', () => {
    const params = new URLSearchParams('country=US&limit=20&offset=20');
    const meta = buildPageMeta('/v1/Account/A/VerifiedCallerId/', params, 20, 20, 45);
    expect(meta).toEqual({
      limit: 20,
      offset: 20,
      next: '/v1/Account/A/VerifiedCallerId/?country=US&limit=20&offset=40',
      previous: '/v1/Account/A/VerifiedCallerId/?country=US&limit=20&offset=0',
      total_count: 45,
    });
    const last = buildPageMeta('/p/', new URLSearchParams(''), 20, 40, 45);
    expect(last.next).toBeNull();
    expect(last.previous).toBe('/p/?limit=20&offset=20');
    const first = buildPageMeta('/p/', new URLSearchParams(''), 20, 0, 45);
    expect(first.previous).toBeNull();
    expect(buildPageMeta('/p/', new URLSearchParams(''), 20, 0, 20).next).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import {
  encodeTrunkCallQuery,
  parseEndTimeFilter,
  parseTrunkCallQuery,
  type TrunkCallFilters,
} from '../../src/api/trunk-call-query.js';
import { windowFilters } from '../../src/sync/streams/read-trunk-call-window.js';
import { parseEpochMicros } from '../../src/util/micros.js';

const at = (text: string) => parseEpochMicros(text)!;

describe('the range a trunk-call window asks for', () => {
  it('is end_time__gte its start and end_time__lt its end: a call ending on the boundary is in one window only', () => {
    const window = { start: at('2026-11-20T00:00:00Z'), end: at('2026-11-21T00:00:00Z') };
    expect([...encodeTrunkCallQuery(windowFilters(window)).entries()]).toEqual([
      ['end_time__gte', '2026-11-20 00:00:00'],
      ['end_time__lt', '2026-11-21 00:00:00'],
    ]);
    // The next window starts where this one ends: the boundary instant belongs to it alone.
    const next = { start: window.end, end: at('2026-11-22T00:00:00Z') };
    expect(encodeTrunkCallQuery(windowFilters(next)).get('end_time__gte')).toBe(
      '2026-11-21 00:00:00',
    );
  });
});

describe('encodeTrunkCallQuery', () => {
  it('names every filter with its suffix and writes end_time in the list form, UTC', () => {
    const query = encodeTrunkCallQuery({
      from_number: '1415',
      to_number: 'sip:',
      call_direction: 'outbound',
      bill_duration: { gt: 10, lte: 600 },
      end_time: { gte: at('2026-11-20T00:00:00Z'), lt: at('2026-11-21T00:00:00.000001Z') },
      hangup_cause_code: 4000,
      hangup_source: 'carrier',
      stir_verification: 'Not Verified',
      limit: 20,
      offset: 40,
    });
    expect([...query.entries()]).toEqual([
      ['from_number', '1415'],
      ['to_number', 'sip:'],
      ['call_direction', 'outbound'],
      ['bill_duration__gt', '10'],
      ['bill_duration__lte', '600'],
      ['end_time__gte', '2026-11-20 00:00:00'],
      ['end_time__lt', '2026-11-21 00:00:00.000001'],
      ['hangup_cause_code', '4000'],
      ['hangup_source', 'carrier'],
      ['stir_verification', 'Not Verified'],
      ['limit', '20'],
      ['offset', '40'],
    ]);
  });
});

describe('parseTrunkCallQuery', () => {
  it('reads back exactly what the client encodes', () => {
    const filters: TrunkCallFilters = {
      from_number: '+1415',
      call_direction: 'inbound',
      bill_duration: { eq: 60, gte: 1 },
      end_time: {
        eq: at('2026-11-20T10:11:12.5Z'),
        gt: at('2026-11-01T00:00:00Z'),
        lte: at('2026-11-21T00:00:00Z'),
      },
      hangup_cause_code: -1,
      stir_verification: 'Not Applicable',
      limit: 1,
      offset: 0,
    };
    expect(parseTrunkCallQuery(encodeTrunkCallQuery(filters))).toEqual({ ok: true, filters });
  });

  it('accepts the short end_time forms', () => {
    expect(parseEndTimeFilter('2026-11-20 10:11')).toBe(at('2026-11-20T10:11:00Z'));
    expect(parseEndTimeFilter('2026-11-20 10:11:12')).toBe(at('2026-11-20T10:11:12Z'));
    expect(parseEndTimeFilter('2026-11-20 10:11:12.000001')).toBe(
      at('2026-11-20T10:11:12.000001Z'),
    );
  });

  it.each([
    ['limit=21', 'limit must be at most 20'],
    ['limit=0', 'limit must be a whole number of at least 1'],
    ['offset=-1', 'offset must be a whole number of 0 or more'],
    ['offset=1.5', 'offset must be a whole number'],
    ['bill_duration__gt=abc', 'bill_duration__gt must be a whole number'],
    [
      'end_time__gte=2026-11-20T00:00:00Z',
      'end_time__gte must have the form YYYY-MM-DD HH:MM[:ss[.uuuuuu]]',
    ],
    ['end_time__lt=2026-02-30 00:00', 'end_time__lt must have the form'],
    ['call_direction=sideways', 'call_direction must be one of inbound, outbound'],
    ['hangup_source=Error', 'hangup_source must be one of customer, carrier, trunk'],
    [
      'stir_verification=verified',
      'stir_verification must be one of Verified, Not Verified, Not Applicable',
    ],
    [
      'end_time__gt=2026-11-20 00:00&end_time__gt=2026-11-21 00:00',
      'end_time__gt is given 2 times',
    ],
    ['end_time__since=2026-11-20 00:00', 'unknown parameter end_time__since'],
  ])('refuses %s', (query, message) => {
    const parsed = parseTrunkCallQuery(new URLSearchParams(query));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok)
      expect(parsed.problems.map((problem) => problem.message).join('\n')).toContain(message);
  });
});

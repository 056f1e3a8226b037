import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/domain/ledger-entry.js';
import { afterProbe, decideBackfill, decideIncremental } from '../../src/sync/window-actions.js';
import { parseEpochMicros } from '../../src/util/micros.js';

const at = (text: string) => parseEpochMicros(text)!;
const day = { start: at('2026-11-20T00:00:00Z'), end: at('2026-11-21T00:00:00Z') };
const complete = (overrides: Partial<LedgerEntry> = {}): LedgerEntry => ({
  status: 'complete',
  slotStart: day.start,
  start: day.start,
  coveredEnd: day.end,
  totalCount: 100,
  readAt: at('2026-11-21T01:00:00Z'),
  verifiedAt: null,
  ...overrides,
});

describe('decideIncremental', () => {
  it('reads a window the ledger does not have, or has not completed', () => {
    expect(decideIncremental(day, undefined, undefined)).toEqual({ kind: 'read', why: 'new' });
    expect(decideIncremental(day, complete({ status: 'running' }), undefined)).toEqual({
      kind: 'read',
      why: 'incomplete',
    });
    expect(decideIncremental(day, complete({ status: 'failed' }), undefined)).toEqual({
      kind: 'read',
      why: 'incomplete',
    });
  });
  it('probes a completed window', () => {
    expect(decideIncremental(day, complete(), undefined)).toEqual({ kind: 'probe' });
  });
  it('reads a deep re-check day once per UTC day', () => {
    const recheck = { range: day, dayStart: at('2026-11-21T00:00:00Z') };
    expect(
      decideIncremental(day, complete({ readAt: at('2026-11-20T23:00:00Z') }), recheck),
    ).toEqual({ kind: 'read', why: 'deep-recheck' });
    expect(
      decideIncremental(day, complete({ readAt: at('2026-11-21T00:00:01Z') }), recheck),
    ).toEqual({ kind: 'probe' });
  });
});

describe('decideBackfill', () => {
  const started = at('2026-11-21T05:00:00Z');
  it('skips a window this backfill already read in full', () => {
    expect(decideBackfill(day, complete({ readAt: at('2026-11-21T05:00:01Z') }), started)).toEqual({
      kind: 'skip',
      why: 'read-since-backfill-start',
    });
  });
  it('reads a window read before the backfill started, read only in part, or not complete', () => {
    expect(decideBackfill(day, complete(), started).kind).toBe('read');
    expect(
      decideBackfill(day, complete({ readAt: started + 1, coveredEnd: day.end - 1 }), started).kind,
    ).toBe('read');
    expect(
      decideBackfill(day, complete({ readAt: started + 1, status: 'running' }), started).kind,
    ).toBe('read');
    expect(decideBackfill(day, undefined, started).kind).toBe('read');
  });
});

describe('afterProbe', () => {
  it('finds an unchanged window unchanged', () => {
    expect(afterProbe(day, complete(), 100)).toEqual({ kind: 'unchanged' });
  });
  it('extends a grown window with no new calls, without reading', () => {
    expect(afterProbe(day, complete({ coveredEnd: at('2026-11-20T12:00:00Z') }), 100)).toEqual({
      kind: 'extend',
    });
  });
  it('reads only the new part of a grown window with more calls', () => {
    const entry = complete({ coveredEnd: at('2026-11-20T12:00:00Z') });
    expect(afterProbe(day, entry, 130)).toEqual({
      kind: 'read-new-part',
      part: { start: at('2026-11-20T12:00:00Z'), end: day.end },
      expectedNew: 30,
    });
  });
  it('reads everything again when the part already read changed', () => {
    expect(afterProbe(day, complete(), 101)).toEqual({ kind: 'read-all' });
    expect(afterProbe(day, complete(), 99)).toEqual({ kind: 'read-all' });
    expect(afterProbe(day, complete({ coveredEnd: at('2026-11-20T12:00:00Z') }), 99)).toEqual({
      kind: 'read-all',
    });
  });
});

import { describe, expect, it } from 'vitest';
import { TRUNK_HISTORY_DAYS, TRUNK_MAX_RANGE_DAYS } from '../../src/domain/service-rules.js';
import {
  deepRecheckRange,
  horizonStart,
  planBackfill,
  planIncremental,
  plannerSettings,
  settledEnd,
  slotStart,
  utcDay,
  type PlannerSettings,
  type TimeWindow,
} from '../../src/sync/window-planner.js';
import {
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_MINUTE,
  parseEpochMicros,
} from '../../src/util/micros.js';

/** A small seeded generator (mulberry32): the same cases every run, many of them. */
function randomSource(seed: number): (min: number, max: number) => number {
  let state = seed >>> 0;
  return (min, max) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const unit = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    return min + Math.floor(unit * (max - min + 1));
  };
}

const at = (text: string) => parseEpochMicros(text)!;
const SLICES_HOURS = [1, 6, 7, 24, 48, 24 * 7, 24 * 30];

function randomCase(random: (min: number, max: number) => number) {
  const settings: PlannerSettings = plannerSettings({
    sliceHours: SLICES_HOURS[random(0, SLICES_HOURS.length - 1)]!,
    settleLagMinutes: random(0, 120),
    lookbackHours: random(0, 72),
    initialDays: random(1, 90),
  });
  const now =
    at('2026-01-01T00:00:00Z') + random(0, 400) * MICROS_PER_DAY + random(0, MICROS_PER_DAY - 1);
  return { settings, now };
}

/** The properties every plan must have; returns the first one broken, or undefined. */
function brokenProperty(
  windows: readonly TimeWindow[],
  from: number,
  to: number,
  now: number,
  settings: PlannerSettings,
): string | undefined {
  if (from >= to) return windows.length === 0 ? undefined : 'windows for an empty span';
  if (windows[0]?.start !== from) return 'does not start at the start of the span';
  if (windows.at(-1)?.end !== to) return 'does not end at the end of the span';
  for (let index = 0; index < windows.length; index++) {
    const window = windows[index]!;
    if (!(window.start < window.end)) return `window ${index} is empty or reversed`;
    if (window.end - window.start > TRUNK_MAX_RANGE_DAYS * MICROS_PER_DAY)
      return `window ${index} exceeds 30 days`;
    if (window.end - window.start > settings.sliceMicros)
      return `window ${index} exceeds the slice`;
    if (window.start < horizonStart(now)) return `window ${index} starts before the horizon`;
    if (window.end > settledEnd(now, settings))
      return `window ${index} ends after now minus the settle lag`;
    const next = windows[index + 1];
    if (next !== undefined && next.start !== window.end)
      return `gap or overlap after window ${index}`;
    // Interior boundaries are slot boundaries, so slots keep their ledger rows across runs.
    if (next !== undefined && window.end % settings.sliceMicros !== 0)
      return `boundary ${index} is off the grid`;
  }
  return undefined;
}

describe('planIncremental', () => {
  it('holds its properties over many random watermark, clock, lookback and slice combinations', () => {
    const random = randomSource(20261121);
    for (let n = 0; n < 3000; n++) {
      const { settings, now } = randomCase(random);
      const hasWatermark = random(0, 9) > 0;
      // Watermarks from well beyond the horizon to just before now.
      const watermark = hasWatermark
        ? now - random(0, 200) * MICROS_PER_DAY - random(0, MICROS_PER_DAY)
        : undefined;
      const plan = planIncremental(now, watermark, settings);
      expect(
        brokenProperty(plan.windows, plan.from, plan.to, now, settings),
        `case ${n}`,
      ).toBeUndefined();

      // Exactly the wanted span: from the slot holding (watermark − lookback), cut to the horizon.
      const wanted =
        watermark === undefined
          ? now - settings.initialMicros
          : watermark - settings.lookbackMicros;
      expect(plan.from).toBe(Math.max(slotStart(wanted, settings.sliceMicros), horizonStart(now)));
      expect(plan.to).toBe(now - settings.settleLagMicros);
      if (plan.windows.length > 0)
        expect(plan.from).toBeLessThanOrEqual(Math.max(wanted, horizonStart(now)));

      // A watermark behind the horizon is an unrecoverable gap, reported with its bounds.
      if (watermark !== undefined && watermark < horizonStart(now)) {
        expect(plan.gap).toEqual({ start: watermark, end: horizonStart(now) });
      } else {
        expect(plan.gap).toBeUndefined();
      }
    }
  });

  it('starts a day-sliced run at midnight UTC of the slot holding watermark − lookback', () => {
    const settings = plannerSettings({
      sliceHours: 24,
      settleLagMinutes: 5,
      lookbackHours: 6,
      initialDays: 7,
    });
    const plan = planIncremental(at('2026-11-21T10:00:00Z'), at('2026-11-21T03:00:00Z'), settings);
    expect(plan.windows).toEqual([
      { start: at('2026-11-20T00:00:00Z'), end: at('2026-11-21T00:00:00Z') },
      { start: at('2026-11-21T00:00:00Z'), end: at('2026-11-21T09:55:00Z') },
    ]);
  });

  it('starts a first run the initial number of days back', () => {
    const settings = plannerSettings({
      sliceHours: 24,
      settleLagMinutes: 5,
      lookbackHours: 6,
      initialDays: 7,
    });
    const plan = planIncremental(at('2026-11-21T10:00:00Z'), undefined, settings);
    expect(plan.windows[0]?.start).toBe(at('2026-11-14T00:00:00Z'));
    expect(plan.windows).toHaveLength(8);
  });

  it('never asks for time older than the horizon, and says what was lost', () => {
    const settings = plannerSettings({
      sliceHours: 24,
      settleLagMinutes: 5,
      lookbackHours: 6,
      initialDays: 7,
    });
    const now = at('2026-11-21T10:00:00Z');
    const plan = planIncremental(now, at('2026-06-01T00:00:00Z'), settings);
    const horizon = now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY + 10 * MICROS_PER_MINUTE;
    expect(plan.windows[0]?.start).toBe(horizon);
    expect(plan.gap).toEqual({ start: at('2026-06-01T00:00:00Z'), end: horizon });
  });
});

describe('planBackfill', () => {
  it('holds its properties over many random requests', () => {
    const random = randomSource(7);
    for (let n = 0; n < 3000; n++) {
      const { settings, now } = randomCase(random);
      const start = now - random(0, 120) * MICROS_PER_DAY - random(0, MICROS_PER_DAY);
      const end = start + random(0, 100) * MICROS_PER_HOUR + random(0, MICROS_PER_HOUR);
      const plan = planBackfill(now, { start, end }, settings);
      const from = Math.max(slotStart(start, settings.sliceMicros), horizonStart(now));
      const endSlot = slotStart(end, settings.sliceMicros);
      const to = Math.min(
        endSlot === end ? end : endSlot + settings.sliceMicros,
        settledEnd(now, settings),
      );
      expect(brokenProperty(plan.windows, from, to, now, settings), `case ${n}`).toBeUndefined();
      // Everything asked for that the service still has is covered.
      const retrievable = {
        start: Math.max(start, horizonStart(now)),
        end: Math.min(end, settledEnd(now, settings)),
      };
      if (retrievable.start < retrievable.end) {
        expect(plan.covered?.start).toBeLessThanOrEqual(retrievable.start);
        expect(plan.covered?.end).toBeGreaterThanOrEqual(retrievable.end);
      }
      expect(plan.beyondHorizon !== undefined).toBe(start < horizonStart(now));
      expect(plan.beyondService !== undefined).toBe(
        start < now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY,
      );
      expect(plan.notYetSettled !== undefined).toBe(end > settledEnd(now, settings));
    }
  });

  it('reads 90 days as whole UTC days, oldest first, clamped to the horizon', () => {
    const settings = plannerSettings({
      sliceHours: 24,
      settleLagMinutes: 5,
      lookbackHours: 6,
      initialDays: 7,
    });
    const now = at('2026-11-21T10:00:00Z');
    const plan = planBackfill(now, { start: now - 90 * MICROS_PER_DAY, end: now }, settings);
    expect(plan.windows).toHaveLength(91);
    expect(plan.windows[0]).toEqual({ start: horizonStart(now), end: at('2026-08-24T00:00:00Z') });
    expect(plan.windows[1]).toEqual({
      start: at('2026-08-24T00:00:00Z'),
      end: at('2026-08-25T00:00:00Z'),
    });
    expect(plan.windows.at(-1)).toEqual({
      start: at('2026-11-21T00:00:00Z'),
      end: at('2026-11-21T09:55:00Z'),
    });
    expect(plan.beyondHorizon).toEqual({
      start: now - 90 * MICROS_PER_DAY,
      end: horizonStart(now),
    });
  });
});

describe('deep re-check days', () => {
  it('covers the previous whole UTC days', () => {
    expect(deepRecheckRange(at('2026-11-21T00:30:00Z'), 1)).toEqual({
      start: at('2026-11-20T00:00:00Z'),
      end: at('2026-11-21T00:00:00Z'),
    });
    expect(deepRecheckRange(at('2026-11-21T23:59:59.999999Z'), 2)?.start).toBe(
      at('2026-11-19T00:00:00Z'),
    );
    expect(deepRecheckRange(at('2026-11-21T10:00:00Z'), 0)).toBeUndefined();
    expect(utcDay(at('2026-11-21T23:59:59.999999Z'))).toBe('2026-11-21');
  });
});

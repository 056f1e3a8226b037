import { describe, expect, it } from 'vitest';
import {
  CHART_DAY_STEP,
  CHART_LEFT,
  niceCeiling,
  planDayChart,
  renderDayChart,
  shortDate,
  type ChartDay,
} from '../../src/http/day-chart.js';

/** 90 days from 2026-08-30, oldest first; the service counted 100 a day, 10.5 billed. */
function days(overrides: Record<string, Partial<ChartDay>> = {}): ChartDay[] {
  return Array.from({ length: 90 }, (_, index) => {
    const day = new Date(Date.UTC(2026, 7, 30 + index)).toISOString().slice(0, 10);
    return {
      day,
      serviceCount: 100,
      storedRows: 100,
      billedAmount: '10.50000',
      differs: false,
      alarm: false,
      ...overrides[day],
    };
  });
}

describe('planDayChart', () => {
  it('puts one column per day from the left, the newest day at the right', () => {
    const chart = planDayChart(days());
    expect(chart.days).toHaveLength(90);
    expect(chart.days[0]?.day.day).toBe('2026-08-30');
    expect(chart.days[0]?.column.x).toBe(CHART_LEFT);
    expect(chart.days.at(-1)?.day.day).toBe('2026-11-27');
    expect(chart.days.at(-1)?.column.x).toBe(CHART_LEFT + 89 * CHART_DAY_STEP);
    expect(chart.width).toBeGreaterThan(CHART_LEFT + 90 * CHART_DAY_STEP);
  });

  it("draws the service's count and the rows stored side by side on one scale", () => {
    const chart = planDayChart(
      days({
        '2026-10-01': { serviceCount: 250, storedRows: 125 },
        '2026-10-02': { serviceCount: null },
      }),
    );
    const day = chart.days.find((found) => found.day.day === '2026-10-01')!;
    // The scale's top is 250 (a round number at or above the largest value).
    expect(day.counted!.height).toBeCloseTo(2 * day.stored.height);
    expect(day.counted!.y + day.counted!.height).toBeCloseTo(day.stored.y + day.stored.height);
    expect(day.stored.x).toBeGreaterThanOrEqual(day.counted!.x + day.counted!.width);
    expect(chart.callsScale.map((line) => line.label)).toEqual(['0', '125', '250']);
    expect(chart.days.find((found) => found.day.day === '2026-10-02')?.counted).toBeUndefined();
  });

  it('scales the billed amount in its own panel, below the calls', () => {
    const chart = planDayChart(days({ '2026-10-01': { billedAmount: '20.00000' } }));
    const high = chart.days.find((found) => found.day.day === '2026-10-01')!;
    const usual = chart.days[0]!;
    expect(high.billed.height / usual.billed.height).toBeCloseTo(20 / 10.5);
    expect(high.billed.y).toBeGreaterThan(chart.panels.calls.y + chart.panels.calls.height);
    expect(chart.amountScale.map((line) => line.label)).toEqual(['0', '10', '20']);
  });

  it('labels the date axis every seven days, ending on the newest day', () => {
    const chart = planDayChart(days());
    expect(chart.ticks.at(-1)).toMatchObject({ day: '2026-11-27', label: 'Nov 27' });
    expect(chart.ticks.at(-2)).toMatchObject({ day: '2026-11-20', label: 'Nov 20' });
    expect(chart.ticks[0]).toMatchObject({ day: '2026-09-04', label: 'Sep 4' });
    expect(chart.ticks).toHaveLength(13);
  });

  it('draws empty days with nothing to scale against', () => {
    const chart = planDayChart(
      days().map((day) => ({ ...day, serviceCount: null, storedRows: 0, billedAmount: '0' })),
    );
    expect(chart.days.every((day) => day.stored.height === 0 && day.billed.height === 0)).toBe(
      true,
    );
  });
});

describe('renderDayChart', () => {
  it('classes the differing and alarm days, and marks a differing one above its bars', () => {
    const svg = renderDayChart(
      days({ '2026-10-01': { differs: true }, '2026-08-31': { alarm: true } }),
      'chart',
    );
    expect(svg).toContain('<g class="chart-day differs" data-day="2026-10-01">');
    expect(svg).toContain('<g class="chart-day alarm" data-day="2026-08-31">');
    expect(svg.match(/class="differs-mark"/g)).toHaveLength(1);
    expect(svg.match(/<g class="tick"/g)).toHaveLength(13);
  });
});

describe('helpers', () => {
  it('rounds a scale up to 1, 2, 2.5 or 5 times a power of ten', () => {
    expect([0, 0.3, 7, 12, 240, 251, 4_001].map(niceCeiling)).toEqual([
      1, 0.5, 10, 20, 250, 500, 5_000,
    ]);
  });
  it('writes a day as month and day', () => {
    expect(shortDate('2026-01-05')).toBe('Jan 5');
  });
});

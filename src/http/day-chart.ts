import { escapeHtml } from './escape-html.js';
import { formatAmount, formatCount } from './status-page-text.js';

/**
 * The status page's chart of an account's last 90 UTC days, as inline SVG: per day the calls the
 * service counted beside the rows stored, and below them the day's billed amount, on one date
 * axis, oldest day at the left. Days that differ and days in the horizon alarm are marked across
 * both panels. `planDayChart` is the geometry (pure, tested); `renderDayChart` writes it out.
 */

/** One day as the chart takes it. */
export interface ChartDay {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  /** The service's count; null when the day was not counted (as a whole). */
  readonly serviceCount: number | null;
  readonly storedRows: number;
  /** The exact sum of total_amount, decimal text. */
  readonly billedAmount: string;
  /** The count and the rows stored disagree (the edge rule of coverage-days.ts). */
  readonly differs: boolean;
  /** Counted by the horizon alarm. */
  readonly alarm: boolean;
}

/** Pixels per day: the coverage strip's cells use the same step, so the two line up. */
export const CHART_DAY_STEP = 13;
/** Room at the left for the value labels; the strip is indented by as much. */
export const CHART_LEFT = 64;
const RIGHT = 12;
const CALLS_TOP = 18;
const CALLS_HEIGHT = 150;
const AMOUNT_TOP = CALLS_TOP + CALLS_HEIGHT + 34;
const AMOUNT_HEIGHT = 70;
const AXIS_Y = AMOUNT_TOP + AMOUNT_HEIGHT;
const HEIGHT = AXIS_Y + 22;
/** A label every this many days, counted back from the newest so the newest day has one. */
export const CHART_LABEL_EVERY_DAYS = 7;

export interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export interface ChartDayGeometry {
  readonly day: ChartDay;
  /** The day's whole column (both panels), for the marks and the tooltip. */
  readonly column: Rect;
  /** The service's count; undefined when the day was not counted. */
  readonly counted: Rect | undefined;
  readonly stored: Rect;
  readonly billed: Rect;
}

export interface AxisTick {
  /** Centre of the day's column. */
  readonly x: number;
  /** `Nov 23`. */
  readonly label: string;
  readonly day: string;
}

export interface ScaleLine {
  readonly y: number;
  readonly label: string;
}

export interface DayChartGeometry {
  readonly width: number;
  readonly height: number;
  readonly days: readonly ChartDayGeometry[];
  readonly ticks: readonly AxisTick[];
  /** Gridlines of the calls panel (0, half, top), bottom first. */
  readonly callsScale: readonly ScaleLine[];
  /** Gridlines of the amount panel. */
  readonly amountScale: readonly ScaleLine[];
  readonly panels: {
    readonly calls: Rect;
    readonly amount: Rect;
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `2026-11-23` → `Nov 23`. */
export function shortDate(day: string): string {
  const month = MONTHS[Number(day.slice(5, 7)) - 1] ?? day.slice(5, 7);
  return `${month} ${Number(day.slice(8, 10))}`;
}

/** The smallest 1, 2, 2.5 or 5 × 10^k at or above `value` (1 for nothing to show). */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/**
 * The chart's geometry: one column per day, oldest at the left; in the upper panel the service's
 * count and the rows stored as two bars side by side on one scale, in the lower panel the billed
 * amount; a date label every {@link CHART_LABEL_EVERY_DAYS} days ending on the newest day.
 */
export function planDayChart(days: readonly ChartDay[]): DayChartGeometry {
  const width = CHART_LEFT + days.length * CHART_DAY_STEP + RIGHT;
  const callsTop = niceCeiling(
    Math.max(0, ...days.map((day) => Math.max(day.serviceCount ?? 0, day.storedRows))),
  );
  // Bar heights only: the labels and tooltips show the exact decimal text.
  const amounts = days.map((day) => Math.max(0, Number(day.billedAmount) || 0));
  const amountTop = niceCeiling(Math.max(0, ...amounts));
  const barWidth = (CHART_DAY_STEP - 3) / 2;
  const geometry = days.map((day, index): ChartDayGeometry => {
    const x = CHART_LEFT + index * CHART_DAY_STEP;
    const bar = (value: number, left: number, top: number, span: number, scale: number) => {
      const height = (value / scale) * span;
      return { x: left, y: top + span - height, width: barWidth, height };
    };
    const amount = amounts[index] ?? 0;
    return {
      day,
      column: { x, y: CALLS_TOP, width: CHART_DAY_STEP, height: AXIS_Y - CALLS_TOP },
      counted:
        day.serviceCount === null
          ? undefined
          : bar(day.serviceCount, x + 1, CALLS_TOP, CALLS_HEIGHT, callsTop),
      stored: bar(day.storedRows, x + 1 + barWidth + 1, CALLS_TOP, CALLS_HEIGHT, callsTop),
      billed: {
        ...bar(amount, x + 1, AMOUNT_TOP, AMOUNT_HEIGHT, amountTop),
        width: CHART_DAY_STEP - 2,
      },
    };
  });
  const ticks: AxisTick[] = [];
  for (let index = days.length - 1; index >= 0; index -= CHART_LABEL_EVERY_DAYS) {
    const day = days[index];
    if (day === undefined) continue;
    ticks.unshift({
      x: CHART_LEFT + index * CHART_DAY_STEP + CHART_DAY_STEP / 2,
      label: shortDate(day.day),
      day: day.day,
    });
  }
  const scale = (top: number, span: number, max: number, label: (value: number) => string) =>
    [0, 0.5, 1].map((share) => ({ y: top + span - share * span, label: label(share * max) }));
  return {
    width,
    height: HEIGHT,
    days: geometry,
    ticks,
    callsScale: scale(CALLS_TOP, CALLS_HEIGHT, callsTop, (value) => formatCount(value)),
    amountScale: scale(AMOUNT_TOP, AMOUNT_HEIGHT, amountTop, (value) =>
      formatAmount(String(Number(value.toPrecision(6)))),
    ),
    panels: {
      calls: {
        x: CHART_LEFT,
        y: CALLS_TOP,
        width: width - CHART_LEFT - RIGHT,
        height: CALLS_HEIGHT,
      },
      amount: {
        x: CHART_LEFT,
        y: AMOUNT_TOP,
        width: width - CHART_LEFT - RIGHT,
        height: AMOUNT_HEIGHT,
      },
    },
  };
}

const round = (value: number) => Math.round(value * 100) / 100;

function rect(box: Rect, className: string): string {
  return `<rect class="${className}" x="${round(box.x)}" y="${round(box.y)}" width="${round(box.width)}" height="${round(box.height)}"/>`;
}

/** The chart as an `<svg>` element (no script; tooltips are SVG `<title>`s). */
export function renderDayChart(days: readonly ChartDay[], label: string): string {
  const chart = planDayChart(days);
  const { calls, amount } = chart.panels;
  const grid = (lines: readonly ScaleLine[], className: string) =>
    lines
      .map(
        (line) =>
          `<line class="grid ${className}" x1="${calls.x}" x2="${calls.x + calls.width}" y1="${round(line.y)}" y2="${round(line.y)}"/><text class="scale" x="${calls.x - 6}" y="${round(line.y) + 4}" text-anchor="end">${escapeHtml(line.label)}</text>`,
      )
      .join('');
  const columns = chart.days
    .map(({ day, column, counted, stored, billed }) => {
      const classes = ['chart-day'];
      if (day.differs) classes.push('differs');
      if (day.alarm) classes.push('alarm');
      const service = day.serviceCount === null ? 'not counted' : formatCount(day.serviceCount);
      const title = `${day.day}: service ${service} · stored ${formatCount(day.storedRows)} · billed ${formatAmount(day.billedAmount)}${day.differs ? ' · DIFFERS' : ''}${day.alarm ? ' · horizon alarm' : ''}`;
      const mark = day.differs
        ? `<path class="differs-mark" d="M${round(column.x + CHART_DAY_STEP / 2)} ${column.y - 2}l-4 -7h8z"/>`
        : '';
      return `<g class="${classes.join(' ')}" data-day="${escapeHtml(day.day)}"><title>${escapeHtml(title)}</title>${rect(column, 'column')}${counted === undefined ? '' : rect(counted, 'counted')}${rect(stored, 'stored')}${rect(billed, 'billed')}${mark}</g>`;
    })
    .join('');
  const axis = chart.ticks
    .map(
      (tick) =>
        `<g class="tick" data-day="${escapeHtml(tick.day)}"><line x1="${round(tick.x)}" x2="${round(tick.x)}" y1="${AXIS_Y}" y2="${AXIS_Y + 4}"/><text x="${round(tick.x)}" y="${AXIS_Y + 16}" text-anchor="middle">${escapeHtml(tick.label)}</text></g>`,
    )
    .join('');
  return `<svg class="day-chart" role="img" aria-label="${escapeHtml(label)}" width="${chart.width}" height="${chart.height}" viewBox="0 0 ${chart.width} ${chart.height}" xmlns="http://www.w3.org/2000/svg">
${grid(chart.callsScale, 'calls')}${grid(chart.amountScale, 'amount')}
${columns}
<text class="panel-label" x="${calls.x}" y="${calls.y - 8}">calls per day: service count · rows stored</text>
<text class="panel-label" x="${amount.x}" y="${amount.y - 8}">billed amount per day</text>
<g class="date-axis"><line class="axis" x1="${calls.x}" x2="${calls.x + calls.width}" y1="${AXIS_Y}" y2="${AXIS_Y}"/>${axis}</g>
</svg>`;
}

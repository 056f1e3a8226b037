/**
 * What each benchmark hands back: its figures (medians), every run, the targets it checked, and
 * tables for the console and the markdown summary.
 */

export const BENCHMARK_NAMES = [
  'backfill-throughput',
  'naive-sync',
  'throttled',
  'incremental-cost',
  'loader-choice',
  'fault-harness',
  'multi-account',
] as const;
export type BenchmarkName = (typeof BENCHMARK_NAMES)[number];

export function isBenchmarkName(name: string): name is BenchmarkName {
  return (BENCHMARK_NAMES as readonly string[]).includes(name);
}

export interface TargetCheck {
  readonly id: string;
  /** What is required, in words: "end-to-end ≥ 70% of the slower limit". */
  readonly description: string;
  readonly measured: number | null;
  readonly unit: string;
  readonly comparator: '>=' | '<=';
  readonly threshold: number;
  readonly pass: boolean;
  /** Which runs the measured value summarises: "median of 3 runs", "worst of 3 runs". */
  readonly basis: string;
}

/** A target check from a measured value. */
export function checkTarget(
  spec: Omit<TargetCheck, 'pass' | 'measured'> & { measured: number | null },
): TargetCheck {
  const { measured, comparator, threshold } = spec;
  const pass =
    measured !== null &&
    Number.isFinite(measured) &&
    (comparator === '>=' ? measured >= threshold : measured <= threshold);
  return { ...spec, pass };
}

export interface Table {
  readonly headers: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

export interface TitledTable {
  readonly title: string;
  readonly table: Table;
}

export interface BenchmarkReport {
  readonly name: BenchmarkName;
  readonly title: string;
  readonly status: 'ok' | 'error';
  /** Why the harness could not measure (rows lost, a child failed). */
  readonly error?: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly settings: Readonly<Record<string, unknown>>;
  /** The benchmark's figures: medians over its runs unless a name says otherwise. */
  readonly figures: Readonly<Record<string, unknown>>;
  readonly runs: readonly unknown[];
  readonly targets: readonly TargetCheck[];
  readonly tables: readonly TitledTable[];
  readonly notes: readonly string[];
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function formatInteger(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? '—'
    : integer.format(value);
}

export function formatDecimal(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? '—'
    : new Intl.NumberFormat('en-US', {
        minimumFractionDigits: digits,
        maximumFractionDigits: digits,
      }).format(value);
}

/** Bytes as decimal megabytes (10^6), the unit of the memory target. */
export function formatMb(bytes: number | null | undefined): string {
  return bytes === null || bytes === undefined || !Number.isFinite(bytes)
    ? '—'
    : `${formatDecimal(bytes / MB, 0)} MB`;
}

export const MB = 1_000_000;

export function formatPercent(ratio: number | null | undefined, digits = 1): string {
  return ratio === null || ratio === undefined || !Number.isFinite(ratio)
    ? '—'
    : `${formatDecimal(ratio * 100, digits)}%`;
}

export function formatSeconds(ms: number | null | undefined): string {
  return ms === null || ms === undefined || !Number.isFinite(ms)
    ? '—'
    : `${formatDecimal(ms / 1000, 1)} s`;
}

/** A value in a target's unit, for tables. */
export function formatMeasured(target: TargetCheck): string {
  const { measured, unit } = target;
  if (measured === null) return '—';
  if (unit === 'ratio') return formatPercent(measured);
  // Two decimals under 10×: a 1.25× target must not read as 1.3×.
  if (unit === '×') return `${formatDecimal(measured, measured < 10 ? 2 : 1)}×`;
  if (unit === 'MB') return `${formatDecimal(measured, 0)} MB`;
  if (unit === 'rows/s') return `${formatInteger(measured)} rows/s`;
  return `${formatDecimal(measured, measured % 1 === 0 ? 0 : 2)} ${unit}`;
}

export function formatThreshold(target: TargetCheck): string {
  const value: TargetCheck = { ...target, measured: target.threshold };
  return `${target.comparator === '>=' ? '≥' : '≤'} ${formatMeasured(value)}`;
}

/**
 * Targets only a full run can judge (`why`: what makes a quick run too small for them): a quick
 * run's figures would judge start-up and warm-up, not telesync's steady pace. On a full run they
 * are the targets; on a quick one, notes of what was required and measured.
 */
export function judgedOnFullRunsOnly(
  mode: 'full' | 'quick',
  checks: readonly TargetCheck[],
  why: string,
): { targets: TargetCheck[]; notes: string[] } {
  if (mode === 'full') return { targets: [...checks], notes: [] };
  return {
    targets: [],
    notes: checks.map(
      (target) =>
        `Judged on full runs only: ${target.description}, required ${formatThreshold(target)}, measured ${formatMeasured(target)} in this quick run; ${why}.`,
    ),
  };
}

/** A plain-text table with aligned columns (numbers to the right). */
export function renderTextTable(table: Table): string {
  const widths = table.headers.map((header, column) =>
    Math.max(header.length, ...table.rows.map((row) => (row[column] ?? '').length)),
  );
  const numeric = table.headers.map((_, column) =>
    table.rows.every((row) => /^[-—\d.,%×\s]*(rows\/s|MB|s|ms|req)?$/.test(row[column] ?? '')),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [line(table.headers), rule, ...table.rows.map(line)].join('\n');
}

/** A GitHub-flavoured markdown table. */
export function renderMarkdownTable(table: Table): string {
  const escape = (cell: string): string => cell.replaceAll('|', '\\|');
  return [
    `| ${table.headers.map(escape).join(' | ')} |`,
    `| ${table.headers.map(() => '---').join(' | ')} |`,
    ...table.rows.map((row) => `| ${row.map(escape).join(' | ')} |`),
  ].join('\n');
}

/** The targets of a report as a table. */
export function targetsTable(targets: readonly TargetCheck[]): Table {
  return {
    headers: ['target', 'required', 'measured', 'basis', 'result'],
    rows: targets.map((target) => [
      target.description,
      formatThreshold(target),
      formatMeasured(target),
      target.basis,
      target.pass ? 'PASS' : 'FAIL',
    ]),
  };
}

/** The console form of a report. */
export function renderReport(report: BenchmarkReport): string {
  const parts = [`\n=== ${report.title} ===`];
  if (report.status === 'error') parts.push(`HARNESS FAILURE: ${report.error ?? 'unknown'}`);
  for (const { title, table } of report.tables) {
    parts.push(`\n${title}\n${renderTextTable(table)}`);
  }
  if (report.targets.length > 0) {
    parts.push(`\nTargets\n${renderTextTable(targetsTable(report.targets))}`);
  }
  for (const note of report.notes) parts.push(`note: ${note}`);
  return parts.join('\n');
}

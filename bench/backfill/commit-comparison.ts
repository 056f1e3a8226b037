import type { BenchSettings } from '../support/bench-settings.js';
import { cpuPerRow, medianCpuPerRow, ratioOf, type CpuPerRow } from '../support/cpu-per-row.js';
import {
  checkTarget,
  formatDecimal,
  formatInteger,
  formatPercent,
  formatSeconds,
  type BenchmarkReport,
  type Table,
} from '../support/report.js';
import { median, round } from '../support/stats.js';
import { BACKFILL_DAYS, type EndToEndRun } from './throughput-round.js';

/**
 * Benchmark 1 against another commit (`--against <ref>`): the same backfill run alternately with
 * that commit's telesync and this one, and what each costs in CPU per stored row.
 */

export type Side = 'ref' | 'current';

export interface ComparisonRun {
  readonly run: number;
  readonly side: Side;
  readonly loadAverageAtStart: readonly number[];
  readonly endToEnd: EndToEndRun;
}

export interface SideFigures {
  readonly runs: number;
  readonly rows: number;
  readonly rowsPerSecond: number;
  readonly cpuPerRow: CpuPerRow;
}

export interface CommitRatios {
  /** current ÷ ref, each of the medians. */
  readonly telesyncCpuPerRow: number | null;
  readonly postgresCpuPerRow: number | null;
  readonly allPostgresCpuPerRow: number | null;
  readonly rowsPerSecond: number | null;
  readonly rowsPerMachineCpuSecond: number | null;
  /**
   * current ÷ ref of each party's CPU a row over the simulator's in the same run, the median over
   * the alternated pairs (null without a pair that has every figure). The simulator runs the same
   * code and serves the same requests in every run, so its CPU a row shows how fast the machine was
   * during that run: on a shared machine it moves by a quarter between runs minutes apart, and this
   * ratio takes that movement out. Shown beside the targets, which stay on the plain CPU a row.
   */
  readonly telesyncCpuPerRowOverSimulator: number | null;
  readonly postgresCpuPerRowOverSimulator: number | null;
}

/** The target: each party's CPU per stored row at most this share of the ref's. */
export const CPU_PER_ROW_TARGET = 0.6;

export function sideFigures(runs: readonly ComparisonRun[], side: Side): SideFigures {
  const mine = runs.filter((run) => run.side === side).map((run) => run.endToEnd);
  return {
    runs: mine.length,
    rows: median(mine.map((run) => run.rows)),
    rowsPerSecond: round(median(mine.map((run) => run.rowsPerSecond))),
    cpuPerRow: medianCpuPerRow(mine.map((run) => cpuPerRow(run.rows, run.cpu))),
  };
}

export function commitRatios(
  ref: SideFigures,
  current: SideFigures,
  runs: readonly ComparisonRun[],
): CommitRatios {
  return {
    telesyncCpuPerRow: ratioOf(current.cpuPerRow.telesyncUs, ref.cpuPerRow.telesyncUs),
    postgresCpuPerRow: ratioOf(current.cpuPerRow.ownPostgresUs, ref.cpuPerRow.ownPostgresUs),
    allPostgresCpuPerRow: ratioOf(current.cpuPerRow.allPostgresUs, ref.cpuPerRow.allPostgresUs),
    rowsPerSecond: ratioOf(current.rowsPerSecond, ref.rowsPerSecond),
    rowsPerMachineCpuSecond: ratioOf(
      current.cpuPerRow.rowsPerMachineCpuSecond,
      ref.cpuPerRow.rowsPerMachineCpuSecond,
    ),
    telesyncCpuPerRowOverSimulator: pairedRatioOverSimulator(runs, (row) => row.telesyncUs),
    postgresCpuPerRowOverSimulator: pairedRatioOverSimulator(runs, (row) => row.ownPostgresUs),
  };
}

/**
 * For each run number both sides have: (current's figure ÷ its simulator's) ÷ (ref's ÷ its
 * simulator's); the median of those.
 */
function pairedRatioOverSimulator(
  runs: readonly ComparisonRun[],
  figure: (row: CpuPerRow) => number | null,
): number | null {
  const overSimulator = (run: ComparisonRun | undefined): number | null => {
    if (run === undefined) return null;
    const row = cpuPerRow(run.endToEnd.rows, run.endToEnd.cpu);
    const value = figure(row);
    return value === null || row.simulatorUs === null || row.simulatorUs === 0
      ? null
      : value / row.simulatorUs;
  };
  const ratios: number[] = [];
  for (const run of new Set(runs.map((each) => each.run))) {
    const ratio = ratioOf(
      overSimulator(runs.find((each) => each.run === run && each.side === 'current')),
      overSimulator(runs.find((each) => each.run === run && each.side === 'ref')),
    );
    if (ratio !== null) ratios.push(ratio);
  }
  return ratios.length === 0 ? null : round(median(ratios), 3);
}

export interface ComparisonResults {
  readonly settings: BenchSettings;
  readonly startedAt: string;
  readonly ref: { readonly name: string; readonly commit: string; readonly subject: string };
  readonly runs: readonly ComparisonRun[];
  readonly notes: readonly string[];
}

const us = (value: number | null): string => (value === null ? '—' : formatDecimal(value, 1));

function runsTable(runs: readonly ComparisonRun[], refName: string): Table {
  return {
    headers: [
      'run',
      'commit',
      'rows stored',
      'wall',
      'rows/s',
      'telesync µs/row',
      'postgres (own backends) µs/row',
      'postgres (all) µs/row',
      'simulator µs/row',
      'rows per machine CPU-second',
      'other CPU',
      'load average at start',
    ],
    rows: runs.map((run) => {
      const perRow = cpuPerRow(run.endToEnd.rows, run.endToEnd.cpu);
      return [
        String(run.run),
        run.side === 'ref' ? refName : 'current',
        formatInteger(run.endToEnd.rows),
        formatSeconds(run.endToEnd.wallMs),
        formatInteger(run.endToEnd.rowsPerSecond),
        us(perRow.telesyncUs),
        us(perRow.ownPostgresUs),
        us(perRow.allPostgresUs),
        us(perRow.simulatorUs),
        formatInteger(perRow.rowsPerMachineCpuSecond),
        run.endToEnd.cpu === null ? '—' : `${formatDecimal(run.endToEnd.cpu.otherSeconds, 1)} s`,
        run.loadAverageAtStart.map((value) => formatDecimal(value, 2)).join(' '),
      ];
    }),
  };
}

function mediansTable(
  refName: string,
  ref: SideFigures,
  current: SideFigures,
  ratios: CommitRatios,
): Table {
  const line = (label: string, side: SideFigures): string[] => [
    label,
    String(side.runs),
    formatInteger(side.rowsPerSecond),
    us(side.cpuPerRow.telesyncUs),
    us(side.cpuPerRow.ownPostgresUs),
    us(side.cpuPerRow.allPostgresUs),
    us(side.cpuPerRow.simulatorUs),
    formatInteger(side.cpuPerRow.rowsPerMachineCpuSecond),
  ];
  return {
    headers: [
      'commit',
      'runs',
      'rows/s',
      'telesync µs/row',
      'postgres (own backends) µs/row',
      'postgres (all) µs/row',
      'simulator µs/row',
      'rows per machine CPU-second',
    ],
    rows: [
      line(refName, ref),
      line('current', current),
      [
        `current ÷ ${refName}`,
        '',
        formatPercent(ratios.rowsPerSecond),
        formatPercent(ratios.telesyncCpuPerRow),
        formatPercent(ratios.postgresCpuPerRow),
        formatPercent(ratios.allPostgresCpuPerRow),
        '',
        formatPercent(ratios.rowsPerMachineCpuSecond),
      ],
      [
        `current ÷ ${refName}, each over its simulator (median of the pairs)`,
        '',
        '',
        formatPercent(ratios.telesyncCpuPerRowOverSimulator),
        formatPercent(ratios.postgresCpuPerRowOverSimulator),
        '',
        '',
        '',
      ],
    ],
  };
}

export function buildComparisonReport(results: ComparisonResults): BenchmarkReport {
  const { settings, startedAt, runs } = results;
  const refName = results.ref.name;
  const ref = sideFigures(runs, 'ref');
  const current = sideFigures(runs, 'current');
  const ratios = commitRatios(ref, current, runs);
  const basis = `medians of ${current.runs} + ${ref.runs} alternated runs`;
  const targets = [
    checkTarget({
      id: 'telesync-cpu-per-row-vs-ref',
      description: `telesync CPU per stored row ÷ ${refName}'s`,
      measured: ratios.telesyncCpuPerRow,
      unit: 'ratio',
      comparator: '<=',
      threshold: CPU_PER_ROW_TARGET,
      basis,
    }),
    checkTarget({
      id: 'postgres-cpu-per-row-vs-ref',
      description: `PostgreSQL CPU per stored row ÷ ${refName}'s (own backends)`,
      measured: ratios.postgresCpuPerRow,
      unit: 'ratio',
      comparator: '<=',
      threshold: CPU_PER_ROW_TARGET,
      basis,
    }),
  ];
  const notes = [
    ...results.notes,
    `${refName} is ${results.ref.commit} ("${results.ref.subject}"), run from a detached git worktree with its own bin/telesync, its own \`telesync migrate\` of each fresh schema, and the same environment as the current code.`,
    `Each run is \`telesync backfill --days ${BACKFILL_DAYS}\` of the same simulator data into a fresh schema, every stored row checked against the simulator's count; the commits alternate (${runs.map((run) => (run.side === 'ref' ? 'A' : 'B')).join('')}, A = ${refName}).`,
    'CPU per row: CPU seconds during the backfill ÷ rows stored. "postgres (own backends)" counts the backends serving telesync\'s own connections (client ports mapped to backend pids through pg_stat_activity, sampled through the run); "postgres (all)" every postgres process on the machine. The ratios are of the medians; rows/s is wall-time throughput, start-up included.',
    "The simulator runs the same code and serves the same requests in every run, so its CPU a row shows how fast the machine was in that run; the last line of the medians table divides each party's CPU a row by it, run by run, and gives the median of the pairs' ratios (beside the targets, which are judged on the plain medians).",
  ];
  return {
    name: 'backfill-throughput',
    title: `1. Backfill throughput against ${refName} — 90 days, ${formatInteger(settings.calls)} calls, unthrottled`,
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      calls: settings.calls,
      runs: settings.runs,
      days: BACKFILL_DAYS,
      concurrency: settings.concurrency,
      maxRps: settings.unthrottledMaxRps,
      warmup: settings.warmup,
      against: refName,
      againstCommit: results.ref.commit,
    },
    figures: { ref, current, ratios },
    runs,
    targets,
    tables: [
      {
        title: `Runs, alternated (${refName} and the current code)`,
        table: runsTable(runs, refName),
      },
      {
        title: `Medians and ratios (current ÷ ${refName})`,
        table: mediansTable(refName, ref, current, ratios),
      },
    ],
    notes,
  };
}

import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildComparisonReport,
  commitRatios,
  sideFigures,
  type ComparisonRun,
  type Side,
} from '../../bench/backfill/commit-comparison.js';
import type { EndToEndRun } from '../../bench/backfill/throughput-round.js';
import { parseBenchSettings, type BenchSettings } from '../../bench/support/bench-settings.js';
import { cpuPerRow, ratioOf } from '../../bench/support/cpu-per-row.js';
import { resultPaths } from '../../bench/support/results.js';
import type { CpuBreakdown } from '../../bench/support/process-monitor.js';

function settings(argv: string[]): BenchSettings {
  const parsed = parseBenchSettings(argv, {}, '/tmp/telesync-bench-results');
  if (parsed === 'help') throw new Error('settings expected');
  return parsed;
}

function cpu(telesync: number, ownPostgres: number, machine: number, simulator = 1): CpuBreakdown {
  return {
    wallSeconds: 10,
    capacitySeconds: 20,
    machineBusySeconds: machine,
    childSeconds: telesync,
    simulatorSeconds: simulator,
    postgresSeconds: ownPostgres + 1,
    ownPostgresSeconds: ownPostgres,
    ownBackends: 3,
    harnessSeconds: 0.5,
    otherSeconds: 0,
  };
}

function run(
  index: number,
  side: Side,
  telesync: number,
  postgres: number,
  simulator = 1,
): ComparisonRun {
  const endToEnd: EndToEndRun = {
    rows: 100_000,
    wallMs: 10_000,
    rowsPerSecond: side === 'ref' ? 10_000 : 12_500,
    telesyncDurationMs: 9_500,
    requests: 1_000,
    simulatorRequests: 1_000,
    retries: 0,
    windows: 91,
    peakRssBytes: null,
    rssQuarterPeaksBytes: [],
    rssGrowth: null,
    cpu: cpu(telesync, postgres, 16, simulator),
    coveredFrom: '2026-08-29T00:00:00.000000Z',
    coveredTo: '2026-11-27T00:00:00.000000Z',
  };
  return { run: index, side, loadAverageAtStart: [1, 2, 3], endToEnd };
}

describe('--against (benchmark 1 against another commit)', () => {
  it('parses the ref, selects benchmark 1 and three runs even when quick', () => {
    const parsed = settings(['--quick', '--against', 'b6c48bd']);
    expect(parsed.against).toBe('b6c48bd');
    expect(parsed.only).toEqual(['backfill-throughput']);
    expect(parsed.runs).toBe(3);
    expect(settings(['--quick', '--against', 'main', '--runs', '2']).runs).toBe(2);
    expect(settings(['--quick']).against).toBeUndefined();
  });

  it('writes its own results files, never benchmark 1 standing ones', () => {
    expect(resultPaths(settings(['--quick', '--against', 'main']))).toEqual({
      json: '/tmp/telesync-bench-results/latest-against-quick.json',
      summary: '/tmp/telesync-bench-results/summary-against-quick.md',
    });
    expect(resultPaths(settings([])).json).toBe('/tmp/telesync-bench-results/latest.json');
  });

  it('writes a results directory given as a relative path where it was run from', () => {
    // The benchmarks run from a copy of the code whose directory is deleted afterwards.
    expect(settings(['--results-dir', 'bench/results']).resultsDir).toBe(resolve('bench/results'));
  });

  it('refuses other benchmarks and an empty or option-like ref', () => {
    expect(() => settings(['--against', 'main', '--only', 'throttled'])).toThrow(
      /--only backfill-throughput/,
    );
    expect(() => settings(['--against', ''])).toThrow(/needs a git ref/);
    expect(() => settings(['--against=--quick'])).toThrow(/needs a git ref/);
  });

  it('states CPU per row in µs and rows per machine CPU-second', () => {
    expect(cpuPerRow(100_000, cpu(2, 4, 8))).toEqual({
      telesyncUs: 20,
      ownPostgresUs: 40,
      allPostgresUs: 50,
      simulatorUs: 10,
      rowsPerMachineCpuSecond: 12_500,
    });
    expect(cpuPerRow(100_000, null).telesyncUs).toBeNull();
  });

  it('divides current by ref, and gives nothing for a missing or zero base', () => {
    expect(ratioOf(12, 20)).toBe(0.6);
    expect(ratioOf(12, 0)).toBeNull();
    expect(ratioOf(null, 20)).toBeNull();
  });

  it('compares the medians of each commit and checks both against 60%', () => {
    const runs = [
      run(1, 'ref', 2.0, 4.0),
      run(1, 'current', 1.1, 2.0),
      run(2, 'ref', 2.2, 4.4),
      run(2, 'current', 1.2, 2.8),
      run(3, 'ref', 2.4, 3.6),
      run(3, 'current', 1.4, 2.2),
    ];
    const ref = sideFigures(runs, 'ref');
    const current = sideFigures(runs, 'current');
    expect(ref.cpuPerRow.telesyncUs).toBe(22);
    expect(current.cpuPerRow.ownPostgresUs).toBe(22);
    const ratios = commitRatios(ref, current, runs);
    expect(ratios.telesyncCpuPerRow).toBe(0.545);
    expect(ratios.postgresCpuPerRow).toBe(0.55);
    expect(ratios.rowsPerSecond).toBe(1.25);

    const report = buildComparisonReport({
      settings: settings(['--quick', '--against', 'b6c48bd']),
      startedAt: '2026-11-29T00:00:00.000Z',
      ref: { name: 'b6c48bd', commit: 'b6c48bd0'.padEnd(40, '0'), subject: 'b6c48bd base' },
      runs,
      notes: [],
    });
    expect(
      report.targets.map((target) => [target.description, target.measured, target.pass]),
    ).toEqual([
      ["telesync CPU per stored row ÷ b6c48bd's", 0.545, true],
      ["PostgreSQL CPU per stored row ÷ b6c48bd's (own backends)", 0.55, true],
    ]);
  });

  it('also divides each run by its simulator, pair by pair, to take out how the machine drifted', () => {
    // The machine runs at half speed during pair 2 and again during the current side of pair 3:
    // every process's CPU a row doubles then, the simulator's included.
    const runs = [
      run(1, 'ref', 2.0, 4.0, 1),
      run(1, 'current', 1.6, 3.0, 1),
      run(2, 'ref', 4.0, 8.0, 2),
      run(2, 'current', 3.2, 6.0, 2),
      run(3, 'ref', 2.0, 4.0, 1),
      run(3, 'current', 3.2, 6.0, 2),
    ];
    const ratios = commitRatios(sideFigures(runs, 'ref'), sideFigures(runs, 'current'), runs);
    // The plain medians see the drift: 32 µs against 20.
    expect(ratios.telesyncCpuPerRow).toBe(1.6);
    expect(ratios.telesyncCpuPerRowOverSimulator).toBe(0.8);
    expect(ratios.postgresCpuPerRowOverSimulator).toBe(0.75);
    // A run without the other side's run of the same number counts for nothing.
    const lone = [run(1, 'ref', 2, 4, 1), run(2, 'current', 1, 2, 1)];
    expect(
      commitRatios(sideFigures(lone, 'ref'), sideFigures(lone, 'current'), lone)
        .postgresCpuPerRowOverSimulator,
    ).toBeNull();
  });
});

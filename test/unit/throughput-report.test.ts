import { describe, expect, it } from 'vitest';
import { buildThroughputReport } from '../../bench/backfill/throughput-report.js';
import type { ThroughputRound } from '../../bench/backfill/throughput-round.js';
import { parseBenchSettings, type BenchSettings } from '../../bench/support/bench-settings.js';

function settings(argv: string[]): BenchSettings {
  const parsed = parseBenchSettings(argv, {}, '/tmp/telesync-bench-results');
  if (parsed === 'help') throw new Error('settings expected');
  return parsed;
}

/** One round whose backfill's last-quarter RSS peak is `growth` times its second quarter's. */
function round(growth: number): ThroughputRound {
  const q2 = 100_000_000;
  return {
    round: 1,
    order: ['telesync', 'fetch', 'copy'],
    endToEnd: {
      rows: 100_000,
      wallMs: 5_000,
      rowsPerSecond: 20_000,
      telesyncDurationMs: 4_600,
      requests: 5_000,
      simulatorRequests: 5_000,
      retries: 0,
      windows: 91,
      peakRssBytes: q2 * growth,
      rssQuarterPeaksBytes: [q2 * 0.8, q2, q2, q2 * growth],
      rssGrowth: growth,
      cpu: null,
      coveredFrom: '2026-08-29T00:00:00.000000Z',
      coveredTo: '2026-11-27T00:00:00.000000Z',
    },
    fetchLimit: {
      records: 100_000,
      elapsedMs: 1_500,
      rowsPerSecond: 66_667,
      requests: 5_000,
      simulatorRequests: 5_000,
      retries: 0,
      peakRssBytes: null,
      cpu: null,
    },
    copyLimit: {
      rows: 100_000,
      rowsPerSecond: 25_000,
      bestLanes: 2,
      loads: [{ lanes: 2, loadMs: 4_000, rowsPerSecond: 25_000, gcMs: 10 }],
      prepareMs: 1_000,
      batches: 50,
    },
    slowerLimit: 'copy',
    ratio: 0.8,
  };
}

function report(argv: string[], growth: number) {
  return buildThroughputReport({
    settings: settings(argv),
    startedAt: '2026-11-27T20:00:00.000Z',
    rounds: [round(growth)],
    profile: null,
    notes: [],
  });
}

describe('the backfill benchmark’s memory-flat target', () => {
  it('is judged on a full run, and fails when the last quarter grew', () => {
    const flat = report([], 1.26).targets.find((target) => target.id === 'backfill-rss-flat');
    expect(flat).toMatchObject({ measured: 1.26, threshold: 1.1, pass: false });
    expect(report([], 1.02).targets.find((target) => target.id === 'backfill-rss-flat')?.pass).toBe(
      true,
    );
  });

  it('is not judged on a quick run, which says what it saw instead', () => {
    const quick = report(['--quick'], 1.263);
    expect(quick.targets.map((target) => target.id)).not.toContain('backfill-rss-flat');
    expect(quick.targets.map((target) => target.id)).toContain('backfill-peak-rss');
    expect(quick.notes.join('\n')).toContain(
      'Memory flatness is judged on full runs only: this quick backfill of 100,000 rows',
    );
    expect(quick.notes.join('\n')).toContain('1.263×');
    expect(quick.figures.rssGrowthWorst).toBe(1.263);
  });
});

describe('the backfill benchmark’s ratio to the slower limit', () => {
  it('is judged on a full run', () => {
    const target = report([], 1.02).targets.find((t) => t.id === 'backfill-vs-limits');
    expect(target).toMatchObject({ measured: 0.8, threshold: 0.7, pass: true });
  });

  it('is not judged on a quick run, whose wall time is mostly start-up; it says what it saw', () => {
    const quick = report(['--quick'], 1.02);
    expect(quick.targets.map((target) => target.id)).not.toContain('backfill-vs-limits');
    expect(quick.notes).toContain(
      'Judged on full runs only: end-to-end rows/s vs the slower of the fetch and COPY limits, ' +
        'required ≥ 70.0%, measured 80.0% in this quick run; a backfill of 100,000 rows spends ' +
        'much of its wall time starting up, which the limits do not time.',
    );
  });
});

describe('the backfill benchmark’s CPU per stored row', () => {
  it('states each party in µs a row, its own backends apart, and rows per machine CPU-second', () => {
    const base = round(1.02);
    const withCpu: ThroughputRound = {
      ...base,
      endToEnd: {
        ...base.endToEnd,
        cpu: {
          wallSeconds: 5,
          capacitySeconds: 10,
          machineBusySeconds: 8,
          childSeconds: 2,
          simulatorSeconds: 1,
          postgresSeconds: 4.5,
          ownPostgresSeconds: 4,
          ownBackends: 4,
          harnessSeconds: 0.3,
          otherSeconds: 0.2,
        },
      },
    };
    const built = buildThroughputReport({
      settings: settings(['--quick']),
      startedAt: '2026-11-29T00:00:00.000Z',
      rounds: [withCpu],
      profile: null,
      notes: [],
    });
    expect(built.figures.cpuPerRow).toEqual({
      telesyncUs: 20,
      ownPostgresUs: 40,
      allPostgresUs: 45,
      simulatorUs: 10,
      rowsPerMachineCpuSecond: 12_500,
    });
    const table = built.tables.find((titled) => titled.title.startsWith('CPU per stored row'));
    expect(table?.title).toContain('80.0% of the slower limit, 12,500 rows per machine CPU-second');
    expect(table?.table.rows[0]).toEqual([
      '1',
      '100,000',
      '20.0',
      '40.0',
      '45.0',
      '10.0',
      '12,500',
    ]);
  });
});

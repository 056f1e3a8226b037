import type { ProfileSummary } from '../support/cpu-profile.js';
import {
  formatDecimal,
  formatInteger,
  formatMb,
  formatPercent,
  formatSeconds,
  type Table,
} from '../support/report.js';
import { cpuPerRow, medianCpuPerRow, type CpuPerRow } from '../support/cpu-per-row.js';
import { median } from '../support/stats.js';
import type { BackfillProfile, ThroughputRound } from './throughput-round.js';

/** The tables of the backfill-throughput report: rounds, COPY loads, CPU, and the profile. */

export function roundsTable(rounds: readonly ThroughputRound[]): Table {
  const row = (
    label: string,
    values: {
      rows: number;
      wallMs: number;
      e2e: number;
      requests: number;
      peak: number | null;
      fetch: number;
      copy: number;
      copyLanes?: number;
      slower: string;
      ratio: number;
    },
  ): string[] => [
    label,
    formatInteger(values.rows),
    formatSeconds(values.wallMs),
    formatInteger(values.e2e),
    formatInteger(values.requests),
    formatMb(values.peak),
    formatInteger(values.fetch),
    values.copyLanes === undefined
      ? formatInteger(values.copy)
      : `${formatInteger(values.copy)} (${values.copyLanes} lane${values.copyLanes === 1 ? '' : 's'})`,
    values.slower,
    formatPercent(values.ratio),
  ];
  const rows = rounds.map((r) =>
    row(`${r.round} (${r.order.join('→')})`, {
      rows: r.endToEnd.rows,
      wallMs: r.endToEnd.wallMs,
      e2e: r.endToEnd.rowsPerSecond,
      requests: r.endToEnd.requests,
      peak: r.endToEnd.peakRssBytes,
      fetch: r.fetchLimit.rowsPerSecond,
      copy: r.copyLimit.rowsPerSecond,
      copyLanes: r.copyLimit.bestLanes,
      slower: r.slowerLimit,
      ratio: r.ratio,
    }),
  );
  if (rounds.length > 1) {
    rows.push(
      row('median', {
        rows: median(rounds.map((r) => r.endToEnd.rows)),
        wallMs: median(rounds.map((r) => r.endToEnd.wallMs)),
        e2e: median(rounds.map((r) => r.endToEnd.rowsPerSecond)),
        requests: median(rounds.map((r) => r.endToEnd.requests)),
        peak: median(rounds.map((r) => r.endToEnd.peakRssBytes ?? Number.NaN)),
        fetch: median(rounds.map((r) => r.fetchLimit.rowsPerSecond)),
        copy: median(rounds.map((r) => r.copyLimit.rowsPerSecond)),
        slower: '',
        ratio: median(rounds.map((r) => r.ratio)),
      }),
    );
  }
  return {
    headers: [
      'run',
      'rows stored',
      'wall',
      'telesync rows/s',
      'requests',
      'peak RSS',
      'fetch limit rows/s',
      'COPY limit rows/s',
      'slower',
      'telesync ÷ slower',
    ],
    rows,
  };
}

export function copyLoadsTable(rounds: readonly ThroughputRound[]): Table {
  const lanes = [
    ...new Set(rounds.flatMap((r) => r.copyLimit.loads.map((load) => load.lanes))),
  ].sort((a, b) => a - b);
  return {
    headers: [
      'run',
      ...lanes.map((count) => `${count} lane${count === 1 ? '' : 's'} rows/s`),
      'GC pauses',
      'rows prepared in',
    ],
    rows: rounds.map((r) => [
      String(r.round),
      ...lanes.map((count) =>
        formatInteger(r.copyLimit.loads.find((load) => load.lanes === count)?.rowsPerSecond),
      ),
      r.copyLimit.loads.map((load) => formatSeconds(load.gcMs)).join(' / '),
      formatSeconds(r.copyLimit.prepareMs),
    ]),
  };
}

export function cpuTable(rounds: readonly ThroughputRound[]): Table {
  return {
    headers: [
      'run',
      'wall',
      'capacity',
      'busy',
      'telesync',
      'simulator',
      'postgres (own backends)',
      'own backends',
      'postgres (all)',
      'harness',
      'other',
      'RSS by quarter (peaks)',
    ],
    rows: rounds.map((r) => {
      const cpu = r.endToEnd.cpu;
      const seconds = (value: number | null | undefined): string =>
        value === null || value === undefined ? '—' : formatDecimal(value, 1);
      return [
        String(r.round),
        formatSeconds(r.endToEnd.wallMs),
        seconds(cpu?.capacitySeconds),
        seconds(cpu?.machineBusySeconds),
        seconds(cpu?.childSeconds),
        seconds(cpu?.simulatorSeconds),
        seconds(cpu?.ownPostgresSeconds),
        formatInteger(cpu?.ownBackends),
        seconds(cpu?.postgresSeconds),
        seconds(cpu?.harnessSeconds),
        seconds(cpu?.otherSeconds),
        r.endToEnd.rssQuarterPeaksBytes.map((bytes) => formatMb(bytes)).join(' / '),
      ];
    }),
  };
}

/** µs of CPU per stored row of each party, and rows per busy CPU-second of the machine. */
export function cpuPerRowTable(rounds: readonly ThroughputRound[]): Table {
  const us = (value: number | null): string => (value === null ? '—' : formatDecimal(value, 1));
  const line = (label: string, rows: number, values: CpuPerRow): string[] => [
    label,
    formatInteger(rows),
    us(values.telesyncUs),
    us(values.ownPostgresUs),
    us(values.allPostgresUs),
    us(values.simulatorUs),
    formatInteger(values.rowsPerMachineCpuSecond),
  ];
  const perRound = rounds.map((r) => cpuPerRow(r.endToEnd.rows, r.endToEnd.cpu));
  const rows = rounds.map((r, index) => line(String(r.round), r.endToEnd.rows, perRound[index]!));
  if (rounds.length > 1) {
    rows.push(
      line('median', median(rounds.map((r) => r.endToEnd.rows)), medianCpuPerRow(perRound)),
    );
  }
  return {
    headers: [
      'run',
      'rows stored',
      'telesync µs/row',
      'postgres (own backends) µs/row',
      'postgres (all) µs/row',
      'simulator µs/row',
      'rows per machine CPU-second',
    ],
    rows,
  };
}

export function profileTables(profile: BackfillProfile): { title: string; table: Table }[] {
  const table = (
    summary: ProfileSummary,
    count: number,
    key: 'topFunctions' | 'byArea',
  ): Table => ({
    headers: ['self time', 'share', key === 'byArea' ? 'area' : 'function'],
    rows: summary[key]
      .slice(0, count)
      .map((entry) => [
        `${formatInteger(entry.selfMs)} ms`,
        formatPercent(entry.share),
        entry.name,
      ]),
  });
  const head = `profiled backfill: ${formatInteger(profile.rows)} rows in ${formatSeconds(profile.wallMs)}`;
  const tables = [
    {
      title: `telesync CPU profile by area (${head}; busy ${formatInteger(profile.telesync.busyMs)} ms of ${formatInteger(profile.telesync.totalMs)} ms sampled)`,
      table: table(profile.telesync, 12, 'byArea'),
    },
    {
      title: 'telesync CPU profile: top functions by self time',
      table: table(profile.telesync, 15, 'topFunctions'),
    },
  ];
  if (profile.simulator !== null) {
    tables.push({
      title: `simulator CPU profile by area (whole life of its process; busy ${formatInteger(profile.simulator.busyMs)} ms)`,
      table: table(profile.simulator, 8, 'byArea'),
    });
  }
  return tables;
}

import type { CpuBreakdown } from './process-monitor.js';
import { median, round } from './stats.js';

/**
 * CPU per stored row: what a backfill costs each party, steadier than wall time on a shared
 * machine. µs of CPU ÷ rows stored; the machine as rows per busy CPU-second of every core.
 */
export interface CpuPerRow {
  readonly telesyncUs: number | null;
  /** The backends serving telesync's own connections. */
  readonly ownPostgresUs: number | null;
  /** Every postgres process on the machine (other users of the server included). */
  readonly allPostgresUs: number | null;
  readonly simulatorUs: number | null;
  /** Rows ÷ the machine's busy CPU seconds during the run (everything that ran, all cores). */
  readonly rowsPerMachineCpuSecond: number | null;
}

export function cpuPerRow(rows: number, cpu: CpuBreakdown | null): CpuPerRow {
  const perRow = (seconds: number | null | undefined): number | null =>
    seconds === null || seconds === undefined || rows <= 0
      ? null
      : round((seconds / rows) * 1e6, 2);
  return {
    telesyncUs: perRow(cpu?.childSeconds),
    ownPostgresUs: perRow(cpu?.ownPostgresSeconds),
    allPostgresUs: perRow(cpu?.postgresSeconds),
    simulatorUs: perRow(cpu?.simulatorSeconds),
    rowsPerMachineCpuSecond:
      cpu === null || cpu.machineBusySeconds <= 0 ? null : round(rows / cpu.machineBusySeconds),
  };
}

/** `current ÷ base`, rounded to 3 decimals; null when either is missing or the base is 0. */
export function ratioOf(current: number | null, base: number | null): number | null {
  if (current === null || base === null || !Number.isFinite(current) || !Number.isFinite(base))
    return null;
  if (base === 0) return null;
  return round(current / base, 3);
}

/** The median of each per-row figure over the runs that have one. */
export function medianCpuPerRow(values: readonly CpuPerRow[]): CpuPerRow {
  const mid = (key: keyof CpuPerRow): number | null => {
    const present = values.map((value) => value[key]).filter((v): v is number => v !== null);
    return present.length === 0 ? null : round(median(present), 2);
  };
  return {
    telesyncUs: mid('telesyncUs'),
    ownPostgresUs: mid('ownPostgresUs'),
    allPostgresUs: mid('allPostgresUs'),
    simulatorUs: mid('simulatorUs'),
    rowsPerMachineCpuSecond: mid('rowsPerMachineCpuSecond'),
  };
}

import type { CpuBreakdown } from './process-monitor.js';
import { median, round } from './stats.js';

/** The median of each CPU figure over the runs that have one. */
export function medianCpu(values: readonly (CpuBreakdown | null)[]): Record<string, number> | null {
  const present = values.filter((value): value is CpuBreakdown => value !== null);
  if (present.length === 0) return null;
  const keys: (keyof CpuBreakdown)[] = [
    'wallSeconds',
    'capacitySeconds',
    'machineBusySeconds',
    'childSeconds',
    'simulatorSeconds',
    'postgresSeconds',
    'ownPostgresSeconds',
    'harnessSeconds',
    'otherSeconds',
  ];
  return Object.fromEntries(
    keys.map((key) => [key, round(median(present.map((cpu) => cpu[key] ?? Number.NaN)), 2)]),
  );
}

import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * The fault-harness tests record what they survived (faults injected, kills, rejects, losses) in
 * the JSON file named by TELESYNC_FAULT_REPORT, when set: `npm run bench` sets it and puts the
 * figures in the benchmark summary. Without it, nothing is written.
 */
export function recordFaultFigures(section: string, figures: Record<string, unknown>): void {
  const path = process.env.TELESYNC_FAULT_REPORT;
  if (path === undefined || path === '') return;
  let report: Record<string, unknown> = {};
  if (existsSync(path)) {
    try {
      report = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    } catch {
      report = {};
    }
  }
  report[section] = { ...figures, recorded_at: new Date().toISOString() };
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}

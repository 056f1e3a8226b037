import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import type { BenchContext } from './support/bench-context.js';
import { HarnessError } from './support/bench-errors.js';
import { baseChildEnv, REPO_ROOT } from './support/paths.js';
import { runMonitored } from './support/process-monitor.js';
import { checkTarget, formatSeconds, type BenchmarkReport } from './support/report.js';
import { FAULT_HARNESS_FILE } from './support/results.js';
import { originalRepoRoot } from './support/source-snapshot.js';

/**
 * Not a benchmark: runs the fault-injection tests (every test file that records figures with
 * recordFaultFigures) with TELESYNC_FAULT_REPORT pointing at bench/results/fault-harness.json, so
 * the summary can show what they survived (faults injected, rejects, losses). Their losses must
 * be 0. A failing test is reported, not a harness failure.
 */

/** Test files that record fault figures (found by what they call, so new ones join in). */
function faultTestFiles(): string[] {
  const found: string[] = [];
  const visit = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (
        name.endsWith('.test.ts') &&
        readFileSync(path, 'utf8').includes('recordFaultFigures(')
      ) {
        found.push(relative(REPO_ROOT, path));
      }
    }
  };
  visit(join(REPO_ROOT, 'test'));
  return found.sort();
}

/** Every numeric `losses` in the report, summed (any depth). */
function totalLosses(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let total = 0;
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'losses' && typeof inner === 'number') total += inner;
    else total += totalLosses(inner);
  }
  return total;
}

export async function runFaultHarness(context: BenchContext): Promise<BenchmarkReport> {
  const startedAt = new Date().toISOString();
  const { settings } = context;
  const files = faultTestFiles();
  if (files.length === 0)
    throw new HarnessError('no test file records fault figures (recordFaultFigures)');
  const report = join(settings.resultsDir, FAULT_HARNESS_FILE);
  // Figures of an earlier run must not pass for this one's.
  rmSync(report, { force: true });
  context.log(
    `running ${files.join(', ')} with TELESYNC_FAULT_REPORT=${relative(originalRepoRoot(), report)}`,
  );
  const run = await runMonitored({
    label: 'fault-harness tests',
    command: process.execPath,
    args: [join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--project', 'e2e', ...files],
    env: {
      ...baseChildEnv(),
      TEST_DATABASE_URL: settings.databaseUrl,
      TELESYNC_FAULT_REPORT: report,
    },
    cwd: REPO_ROOT,
    timeoutMs: 30 * 60_000,
    track: (pid) => context.track(pid),
  });
  const figures = existsSync(report) ? (JSON.parse(readFileSync(report, 'utf8')) as unknown) : null;
  const sections = figures !== null && typeof figures === 'object' ? Object.keys(figures) : [];
  const losses = figures === null ? null : totalLosses(figures);
  const summaryLine = /Tests\s+.*$/m.exec(stripVTControlCharacters(run.stdout))?.[0];
  return {
    name: 'fault-harness',
    title: '6. Fault harness — the fault-injection tests, recorded',
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      files,
      report: relative(originalRepoRoot(), report),
      TEST_DATABASE_URL: 'DATABASE_URL of the benchmarks',
    },
    figures: { exitCode: run.code, sections, losses, wallMs: Math.round(run.wallMs) },
    runs: [],
    targets: [
      checkTarget({
        id: 'fault-harness-tests',
        description: 'fault-injection tests failing',
        measured: run.code === 0 ? 0 : 1,
        unit: 'files',
        comparator: '<=',
        threshold: 0,
        basis: summaryLine ?? `exit code ${run.code}`,
      }),
      checkTarget({
        id: 'fault-harness-losses',
        description: 'rows lost under injected faults (sum of recorded losses)',
        measured: losses,
        unit: 'rows',
        comparator: '<=',
        threshold: 0,
        basis: `${sections.length} recorded section(s)`,
      }),
    ],
    tables: [],
    notes: [
      `Ran ${files.join(', ')} (${formatSeconds(run.wallMs)}, exit code ${run.code}); the figures they recorded are in the "Fault harness figures" section below.`,
      ...(run.code === 0
        ? []
        : [`The tests failed: ${failureReport(run.stdout + run.stderrTail)}`]),
    ],
  };
}

/**
 * What a failed run of the tests said about its failures: vitest's "Failed Tests" section (each
 * failure's test, assertion and place), cut to a few thousand characters, or the output's end.
 */
export function failureReport(output: string): string {
  const text = stripVTControlCharacters(output);
  const start = text.search(/⎯+ Failed Tests \d+ ⎯+/);
  return start < 0 ? `their output ends: ${text.slice(-1500)}` : text.slice(start, start + 4000);
}

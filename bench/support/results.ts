import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { redactUrl } from './bench-database.js';
import type { BenchSettings } from './bench-settings.js';
import type { BenchEnvironment } from './environment.js';
import {
  BENCHMARK_NAMES,
  formatMeasured,
  formatThreshold,
  renderMarkdownTable,
  type BenchmarkName,
  type BenchmarkReport,
  type Table,
} from './report.js';

/**
 * The results on disk: `latest.json` (every figure, every run, the settings, the environment) and
 * `summary.md` (for people; the README links it). A run of some benchmarks (`--only`) replaces
 * those and keeps the others from the previous file, each with the environment it ran in.
 * `--quick` writes `latest-quick.json` and `summary-quick.md` instead, so a smoke run never
 * overwrites the full figures; `--against` writes `latest-against(-quick).json` and its summary.
 */

export interface StoredBenchmark extends BenchmarkReport {
  readonly environment: BenchEnvironment;
  readonly harnessSettings: BenchSettings;
}

export interface ResultsFile {
  readonly schemaVersion: 1;
  readonly mode: 'full' | 'quick';
  readonly generatedAt: string;
  readonly benchmarks: Partial<Record<BenchmarkName, StoredBenchmark>>;
}

/** What the fault-injection tests record, if they have run (read, never written, here). */
export const FAULT_HARNESS_FILE = 'fault-harness.json';

export function resultPaths(settings: BenchSettings): { json: string; summary: string } {
  const suffix = settings.mode === 'quick' ? '-quick' : '';
  // A comparison with another commit (--against) is not benchmark 1's standing figure: its own files.
  const against = settings.against === undefined ? '' : '-against';
  return {
    json: join(settings.resultsDir, `latest${against}${suffix}.json`),
    summary: join(settings.resultsDir, `summary${against}${suffix}.md`),
  };
}

export function writeResults(
  settings: BenchSettings,
  environment: BenchEnvironment,
  reports: readonly BenchmarkReport[],
): { json: string; summary: string } {
  mkdirSync(settings.resultsDir, { recursive: true });
  const paths = resultPaths(settings);
  const previous = readPrevious(paths.json);
  const benchmarks: Partial<Record<BenchmarkName, StoredBenchmark>> = { ...previous };
  // The URL may carry a password: results are shared.
  const harnessSettings = { ...settings, databaseUrl: redactUrl(settings.databaseUrl) };
  for (const report of reports) {
    benchmarks[report.name] = { ...report, environment, harnessSettings };
  }
  const file: ResultsFile = {
    schemaVersion: 1,
    mode: settings.mode,
    generatedAt: new Date().toISOString(),
    benchmarks,
  };
  writeAtomically(paths.json, `${JSON.stringify(file, null, 2)}\n`);
  writeAtomically(paths.summary, renderSummary(file, settings.resultsDir));
  return paths;
}

/** Writes the summary again from the results file, without running anything. */
export function rewriteSummary(settings: BenchSettings): { json: string; summary: string } {
  const paths = resultPaths(settings);
  if (!existsSync(paths.json))
    throw new Error(`${paths.json} does not exist yet: run the benchmarks first`);
  const file = JSON.parse(readFileSync(paths.json, 'utf8')) as ResultsFile;
  writeAtomically(paths.summary, renderSummary(file, settings.resultsDir));
  return paths;
}

function readPrevious(path: string): Partial<Record<BenchmarkName, StoredBenchmark>> {
  if (!existsSync(path)) return {};
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<ResultsFile>;
    return parsed.schemaVersion === 1 && parsed.benchmarks !== undefined ? parsed.benchmarks : {};
  } catch {
    return {};
  }
}

function writeAtomically(path: string, text: string): void {
  const temporary = `${path}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}

function renderSummary(file: ResultsFile, resultsDir: string): string {
  const stored = BENCHMARK_NAMES.map((name) => file.benchmarks[name]).filter(
    (benchmark): benchmark is StoredBenchmark => benchmark !== undefined,
  );
  const lines: string[] = [
    `# telesync benchmarks${file.mode === 'quick' ? ' (quick smoke run — not the reference figures)' : ''}`,
    '',
    'Produced by `npm run bench` (bench/run-benchmarks.ts); every figure below is also in',
    `\`${file.mode === 'quick' ? 'latest-quick.json' : 'latest.json'}\` beside this file, with every run. Regenerated ${file.generatedAt}.`,
    '',
  ];

  const environments = new Map<string, { environment: BenchEnvironment; titles: string[] }>();
  for (const benchmark of stored) {
    const key = JSON.stringify(benchmark.environment);
    const entry = environments.get(key) ?? { environment: benchmark.environment, titles: [] };
    entry.titles.push(benchmark.title.replace(/ —.*$/, ''));
    environments.set(key, entry);
  }
  for (const { environment, titles } of environments.values()) {
    lines.push(
      `- ${environments.size > 1 ? `${titles.join(', ')}: ran` : 'Ran'} ${environment.date} on commit \`${environment.gitCommit?.slice(0, 12) ?? 'unknown'}\`` +
        `${environment.gitDirtyFiles ? ` (with ${environment.gitDirtyFiles} uncommitted file(s) in the tree)` : ''}` +
        `, source digest \`${environment.sourceDigest}\`${environment.snapshot ? ' (a copy taken at the start was measured)' : ''}` +
        `, telesync ${environment.telesyncVersion}, Node ${environment.node}, ${environment.postgres.split(' on ')[0]}, ` +
        `${environment.cores} cores (${environment.cpuModel}), ${environment.memoryGiB} GiB, load average at start ${environment.loadAverageAtStart.join(' ')}.`,
    );
  }
  lines.push(
    '',
    `> **Shared cores.** The machine has ${[...environments.values()][0]?.environment.cores ?? '?'} cores, and the simulator, telesync and`,
    '> PostgreSQL (and the harness) all run on them at once: every figure is what the three achieve together',
    '> on this machine, not what telesync would do with the CPU to itself. The CPU tables show where the time',
    '> went ("other" is anything else running on the machine meanwhile).',
    '',
    '## Targets',
    '',
  );
  const targetRows: string[][] = [];
  for (const benchmark of stored) {
    if (benchmark.status === 'error') {
      targetRows.push([
        benchmark.title,
        'harness failure',
        '',
        '',
        '',
        `ERROR: ${benchmark.error ?? ''}`,
      ]);
      continue;
    }
    for (const target of benchmark.targets) {
      targetRows.push([
        benchmark.title.replace(/ —.*$/, ''),
        target.description,
        formatThreshold(target),
        formatMeasured(target),
        target.basis,
        target.pass ? 'PASS' : '**FAIL**',
      ]);
    }
  }
  lines.push(
    renderMarkdownTable({
      headers: ['benchmark', 'target', 'required', 'measured', 'basis', 'result'],
      rows: targetRows,
    }),
    '',
  );

  for (const benchmark of stored) {
    lines.push(`## ${benchmark.title}`, '');
    if (benchmark.status === 'error') {
      lines.push(`**Harness failure — no figures:** ${benchmark.error ?? ''}`, '');
    }
    for (const { title, table } of benchmark.tables) {
      lines.push(`${title}:`, '', renderMarkdownTable(table), '');
    }
    for (const note of benchmark.notes) lines.push(`- ${note}`);
    lines.push(
      '',
      `Settings: ${Object.entries(benchmark.settings)
        .map(([key, value]) => `${key} ${JSON.stringify(value)}`)
        .join(', ')}.`,
      '',
    );
  }

  lines.push(
    `## Fault harness figures (bench/results/${FAULT_HARNESS_FILE})`,
    '',
    ...faultHarnessSection(resultsDir),
    '',
  );
  lines.push(
    '## Rerunning',
    '',
    '```sh',
    'npm run bench                      # the full issue setup (1,000,000 calls, medians of 3); about 30 minutes here',
    'npm run bench:quick                # smoke version (100,000 calls, 1 run); about 2 minutes',
    'npm run bench -- --only throttled,loader-choice --runs 5',
    'DATABASE_URL=postgres://user@host/db npm run bench',
    '```',
    '',
    'Every run works in schemas of its own (`bench_*`), dropped afterwards. The exit code is 0 even when a',
    'target is missed; it is non-zero only when the harness itself failed or rows were lost.',
    '',
  );
  return lines.join('\n');
}

/** The fault-injection tests' figures, if they wrote any. */
function faultHarnessSection(resultsDir: string): string[] {
  const path = join(resultsDir, FAULT_HARNESS_FILE);
  if (!existsSync(path)) {
    return [
      `Not recorded: \`bench/results/${FAULT_HARNESS_FILE}\` is absent. The fault-injection tests write it`,
      '(faults injected, kills survived, rejects, losses) when TELESYNC_FAULT_REPORT names it, as the full',
      '`npm run bench` does (step 6); this section shows it when present.',
    ];
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    return [
      `Not recorded: \`bench/results/${FAULT_HARNESS_FILE}\` is not valid JSON (${String(error)}).`,
    ];
  }
  const rows: string[][] = [];
  const flatten = (value: unknown, prefix: string): void => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) {
        flatten(inner, prefix === '' ? key : `${prefix}.${key}`);
      }
      return;
    }
    const text = Array.isArray(value)
      ? value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join('; ')
      : typeof value === 'string'
        ? value
        : JSON.stringify(value);
    const [section = '', ...rest] = prefix.split('.');
    rows.push([section, rest.join('.'), text]);
  };
  flatten(parsed, '');
  const table: Table = { headers: ['section', 'figure', 'value'], rows };
  return [
    `From \`bench/results/${FAULT_HARNESS_FILE}\` (written ${statSync(path).mtime.toISOString()} by the fault tests):`,
    '',
    renderMarkdownTable(table),
  ];
}

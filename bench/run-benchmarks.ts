import { runBackfillThroughput } from './backfill-throughput.js';
import { runFaultHarness } from './fault-harness.js';
import { runIncrementalCost } from './incremental-cost.js';
import { runLoaderChoice } from './loader-choice.js';
import { runMultiAccount } from './multi-account.js';
import { runNaiveSync } from './naive-sync.js';
import { runThrottled } from './throttled.js';
import type { BenchContext } from './support/bench-context.js';
import { BenchDatabase, redactUrl } from './support/bench-database.js';
import { HarnessError } from './support/bench-errors.js';
import { parseBenchSettings, USAGE, type BenchSettings } from './support/bench-settings.js';
import { describeEnvironment } from './support/environment.js';
import { RESULTS_DIR } from './support/paths.js';
import {
  renderReport,
  renderTextTable,
  targetsTable,
  type BenchmarkName,
  type BenchmarkReport,
} from './support/report.js';
import { rewriteSummary, writeResults } from './support/results.js';
import { runFromSnapshot, SNAPSHOT_ENV } from './support/source-snapshot.js';

/**
 * `npm run bench`: the benchmarks of telesync against its targets. Each runs the simulator as a
 * separate process and telesync (the real command) against real PostgreSQL, prints a table with
 * the targets and PASS/FAIL, and the whole run is written to bench/results/. Exit code 0 even when
 * a target is missed; 1 when the harness failed or rows were lost; 2 for bad options.
 */

const BENCHMARKS: Readonly<
  Record<BenchmarkName, (context: BenchContext) => Promise<BenchmarkReport>>
> = {
  'backfill-throughput': runBackfillThroughput,
  'naive-sync': runNaiveSync,
  throttled: runThrottled,
  'incremental-cost': runIncrementalCost,
  'loader-choice': runLoaderChoice,
  'fault-harness': runFaultHarness,
  'multi-account': runMultiAccount,
};

const TITLES: Readonly<Record<BenchmarkName, string>> = {
  'backfill-throughput': '1. Backfill throughput',
  'naive-sync': '2. Against a naive sync',
  throttled: '3. Throttled service',
  'incremental-cost': '4. Incremental cost',
  'loader-choice': '5. Loader choice',
  'fault-harness': '6. Fault harness',
  'multi-account': '7. Accounts side by side',
};

async function main(): Promise<number> {
  let settings: BenchSettings | 'help';
  try {
    settings = parseBenchSettings(process.argv.slice(2), process.env, RESULTS_DIR);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}\n`);
    return 2;
  }
  if (settings === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (settings.summaryOnly) {
    const paths = rewriteSummary(settings);
    process.stdout.write(`Summary: ${paths.summary} (from ${paths.json})\n`);
    return 0;
  }
  if (settings.snapshot && process.env[SNAPSHOT_ENV] === undefined) {
    return runFromSnapshot(process.argv.slice(2), settings.resultsDir);
  }

  const tag = Date.now().toString(36);
  const db = new BenchDatabase(settings.databaseUrl, tag);
  const children = new Set<number>();
  let current = 'setup';
  const context: BenchContext = {
    settings,
    db,
    account: { authId: 'MABENCH0000000000001', authToken: `bench-${tag}-token` },
    log: (message) => {
      const time = new Date().toISOString().slice(11, 19);
      process.stderr.write(`[${time}] [${current}] ${message}\n`);
    },
    track: (pid) => {
      children.add(pid);
      return () => children.delete(pid);
    },
  };

  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(
      `\n${signal}: stopping the children and dropping the benchmark schemas…\n`,
    );
    for (const pid of children) stopProcess(pid);
    void db.dropAll().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const reports: BenchmarkReport[] = [];
  try {
    await db.check();
    const environment = describeEnvironment(await db.serverVersion(), settings.databaseUrl);
    context.log(
      `${settings.mode} run: ${settings.only.join(', ')}; ${settings.calls.toLocaleString('en-US')} calls, ` +
        `${settings.runs} run(s) each; PostgreSQL ${redactUrl(settings.databaseUrl)}; ${environment.cores} cores`,
    );
    for (const name of settings.only) {
      current = name;
      const startedAt = new Date().toISOString();
      let report: BenchmarkReport;
      try {
        report = await BENCHMARKS[name](context);
      } catch (error) {
        if (interrupted) throw error;
        context.log(
          `FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
        report = {
          name,
          title: TITLES[name],
          status: 'error',
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          startedAt,
          finishedAt: new Date().toISOString(),
          settings: {},
          figures: {},
          runs: [],
          targets: [],
          tables: [],
          notes: [],
        };
      } finally {
        await db.dropAll();
      }
      reports.push(report);
      process.stdout.write(`${renderReport(report)}\n`);
    }
    current = 'results';
    const paths = writeResults(settings, environment, reports);
    const targets = reports.flatMap((report) => report.targets);
    process.stdout.write(`\n=== All targets ===\n${renderTextTable(targetsTable(targets))}\n`);
    const failures = reports.filter((report) => report.status === 'error');
    for (const failure of failures)
      process.stdout.write(`HARNESS FAILURE in ${failure.name}: ${failure.error}\n`);
    process.stdout.write(`\nResults: ${paths.json}\nSummary: ${paths.summary}\n`);
    return failures.length > 0 ? 1 : 0;
  } catch (error) {
    process.stderr.write(
      `${error instanceof HarnessError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  } finally {
    for (const pid of children) stopProcess(pid);
    await db.dropAll();
    await db.close();
  }
}

/** Stops a child this harness started: its process group if it leads one, else the process. */
function stopProcess(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
    return;
  } catch {
    // Not a group leader.
  }
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // Already gone.
  }
}

process.exitCode = await main();

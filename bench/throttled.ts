import { CONFIG_DEFAULTS } from '../src/config/load-config.js';
import { startBenchSimulator, type BenchContext } from './support/bench-context.js';
import { sharedMachineNote, type CpuBreakdown } from './support/process-monitor.js';
import {
  checkTarget,
  formatDecimal,
  formatInteger,
  formatSeconds,
  type BenchmarkReport,
  type Table,
} from './support/report.js';
import { SimulatorOracle } from './support/simulator-oracle.js';
import { maxOf, median, round } from './support/stats.js';
import { budgetEnv, numberField, runTelesync, stringField } from './support/telesync-command.js';
import { verifyStoredRows } from './support/verify-rows.js';
import { medianCpu } from './support/median-cpu.js';

/**
 * Benchmark 3, throttled service: the simulator enforces the service's published limit (300
 * requests per 5 seconds per account), and telesync, given that budget and the whole of it
 * (TELESYNC_REQUEST_BUDGET=300/5s, TELESYNC_REQUEST_SHARE=100%), backfills enough days of one
 * account for about 150,000 calls, two minutes. Target: at least 97% of 300/5 × 20 = 1,200 rows/s over
 * the whole run, and no more than a handful (5) of 429s.
 */

const PAGE_ROWS = 20;
const HANDFUL_OF_429S = 5;

export interface ThrottledRun {
  readonly round: number;
  readonly rows: number;
  readonly wallMs: number;
  readonly rowsPerSecond: number;
  readonly internalRowsPerSecond: number;
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly retries: number;
  /** Answers 429 the simulator gave (its rate limit refused the request). */
  readonly tooManyRequests: number;
  readonly cpu: CpuBreakdown | null;
}

export async function runThrottled(context: BenchContext): Promise<BenchmarkReport> {
  const startedAt = new Date().toISOString();
  const { settings, db } = context;
  const { requests: limitRequests, windowSeconds } = settings.rateLimit;
  const budgetRowsPerSecond = (limitRequests / windowSeconds) * PAGE_ROWS;
  const callsPerDay = settings.calls / 90;
  const days = Math.min(
    89,
    Math.max(1, Math.ceil((budgetRowsPerSecond * settings.throttledSeconds) / callsPerDay)),
  );
  const rateLimit = `${limitRequests}/${windowSeconds}s`;
  const simulator = await startBenchSimulator(context, { rateLimit });
  const runs: ThrottledRun[] = [];
  try {
    const dataset = await simulator.dataset();
    const oracle = new SimulatorOracle({ dataset, account: context.account });
    await oracle.verifyAgainst(simulator);
    context.log(
      `simulator limit ${rateLimit}; telesync TELESYNC_REQUEST_SHARE=${settings.throttledSharePercent}%; backfill --days ${days} (~${formatInteger(days * callsPerDay)} calls)`,
    );
    for (let index = 0; index < settings.runs; index++) {
      // Start each run with the simulator's whole budget: nothing in its sliding window.
      await new Promise((resolve) => setTimeout(resolve, (windowSeconds + 1) * 1000));
      const schema = await db.createSchema('throttled');
      try {
        await db.checkpoint();
        await simulator.resetStats();
        context.log(`run ${index + 1}/${settings.runs}: telesync backfill --days ${days}`);
        const run = await runTelesync(
          ['backfill', '--days', String(days)],
          {
            databaseUrl: settings.databaseUrl,
            schema,
            simulator,
            concurrency: settings.concurrency,
            extraEnv: budgetEnv(settings.rateLimit, settings.throttledSharePercent),
          },
          {
            label: 'throttled telesync backfill',
            timeoutMs: 60 * 60_000,
            track: (pid) => context.track(pid),
          },
        );
        const stats = await simulator.stats();
        const rows = await verifyStoredRows('throttled backfill', db, schema, oracle, {
          from: stringField(run.json, 'covered_from'),
          to: stringField(run.json, 'covered_to'),
        });
        const requests = numberField(run.json, 'requests');
        const result: ThrottledRun = {
          round: index + 1,
          rows,
          wallMs: round(run.wallMs),
          rowsPerSecond: round((rows / run.wallMs) * 1000),
          internalRowsPerSecond: round((rows / numberField(run.json, 'duration_ms')) * 1000),
          requests,
          requestsPerSecond: round((requests / run.wallMs) * 1000, 2),
          retries: numberField(run.json, 'retries'),
          tooManyRequests: stats.requests.byStatus['429'] ?? 0,
          cpu: run.cpu,
        };
        runs.push(result);
        context.log(
          `run ${index + 1}: ${formatInteger(result.rowsPerSecond)} rows/s, ${result.tooManyRequests} × 429, ${formatSeconds(result.wallMs)}`,
        );
      } finally {
        await db.dropSchema(schema);
      }
    }
  } finally {
    await simulator.stop();
  }

  const basis = `median of ${runs.length} run${runs.length === 1 ? '' : 's'}`;
  const shared = sharedMachineNote(
    'throttled backfills',
    runs.map((run) => run.cpu),
  );
  const rowsPerSecond = round(median(runs.map((run) => run.rowsPerSecond)));
  const worst429 = maxOf(runs.map((run) => run.tooManyRequests));
  return {
    name: 'throttled',
    title: `3. Throttled service — ${rateLimit} per account, ${days} days`,
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      calls: settings.calls,
      runs: settings.runs,
      simulatorRateLimit: rateLimit,
      ...budgetEnv(settings.rateLimit, settings.throttledSharePercent),
      TELESYNC_CONCURRENCY: settings.concurrency,
      days,
      targetSeconds: settings.throttledSeconds,
    },
    figures: {
      rows: median(runs.map((run) => run.rows)),
      wallMs: round(median(runs.map((run) => run.wallMs))),
      rowsPerSecond,
      shareOfBudget: round(rowsPerSecond / budgetRowsPerSecond, 4),
      budgetRowsPerSecond,
      requestsPerSecond: round(median(runs.map((run) => run.requestsPerSecond)), 2),
      tooManyRequestsWorst: worst429,
      retries: median(runs.map((run) => run.retries)),
      cpu: medianCpu(runs.map((run) => run.cpu)),
    },
    runs,
    targets: [
      checkTarget({
        id: 'throttled-rows-per-second',
        description: `rows/s over the whole backfill (97% of ${formatInteger(budgetRowsPerSecond)})`,
        measured: rowsPerSecond,
        unit: 'rows/s',
        comparator: '>=',
        threshold: 0.97 * budgetRowsPerSecond,
        basis,
      }),
      checkTarget({
        id: 'throttled-429s',
        description: '429 answers provoked',
        measured: worst429,
        unit: '× 429',
        comparator: '<=',
        threshold: HANDFUL_OF_429S,
        basis: `worst of ${runs.length} run${runs.length === 1 ? '' : 's'}`,
      }),
    ],
    tables: [{ title: 'Runs', table: runsTable(runs) }],
    notes: [
      `telesync ran with TELESYNC_REQUEST_BUDGET=${rateLimit} and TELESYNC_REQUEST_SHARE=${settings.throttledSharePercent}% (the whole budget: its limiter then holds ${limitRequests} requests per ${windowSeconds} s, over the service's own window; the default share, ${CONFIG_DEFAULTS.requestShare * 100}%, leaves the rest to the account's other traffic). The limiter keeps a small margin under the budget (an allowance for arrival jitter), so the requests/s column shows how close to ${limitRequests / windowSeconds}/s it actually went.`,
      'Rows/s is rows stored ÷ wall time of the whole command (start-up included); the column "inside" uses the command\'s own duration. 429s are counted by the simulator (its rate limiter), not by telesync.',
      ...(shared !== undefined ? [shared] : []),
      `The day range is chosen from the dataset (${formatInteger(callsPerDay)} calls a day) for a backfill of about ${settings.throttledSeconds} s; each run starts after the limiter's ${windowSeconds}-second window has emptied.`,
    ],
  };
}

function runsTable(runs: readonly ThrottledRun[]): Table {
  const rows = runs.map((run) => [
    String(run.round),
    formatInteger(run.rows),
    formatSeconds(run.wallMs),
    formatInteger(run.rowsPerSecond),
    formatInteger(run.internalRowsPerSecond),
    formatInteger(run.requests),
    formatDecimal(run.requestsPerSecond, 2),
    formatInteger(run.tooManyRequests),
    formatInteger(run.retries),
  ]);
  if (runs.length > 1) {
    rows.push([
      'median',
      formatInteger(median(runs.map((run) => run.rows))),
      formatSeconds(median(runs.map((run) => run.wallMs))),
      formatInteger(median(runs.map((run) => run.rowsPerSecond))),
      formatInteger(median(runs.map((run) => run.internalRowsPerSecond))),
      formatInteger(median(runs.map((run) => run.requests))),
      formatDecimal(median(runs.map((run) => run.requestsPerSecond)), 2),
      formatInteger(median(runs.map((run) => run.tooManyRequests))),
      formatInteger(median(runs.map((run) => run.retries))),
    ]);
  }
  return {
    headers: [
      'run',
      'rows',
      'wall',
      'rows/s',
      'rows/s inside',
      'requests',
      'requests/s',
      '429s',
      'retries',
    ],
    rows,
  };
}

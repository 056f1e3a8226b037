import type { NaiveSyncInput, NaiveSyncResult } from './workers/naive-sync-worker.js';
import { startBenchSimulator, type BenchContext } from './support/bench-context.js';
import { HarnessError, RowsLostError } from './support/bench-errors.js';
import {
  checkTarget,
  formatDecimal,
  formatInteger,
  formatSeconds,
  judgedOnFullRunsOnly,
  type BenchmarkReport,
  type Table,
} from './support/report.js';
import { DAY_MICROS, microsToIso, SimulatorOracle } from './support/simulator-oracle.js';
import type { SimulatorProcess } from './support/simulator-process.js';
import { sharedMachineNote, type CpuBreakdown } from './support/process-monitor.js';
import { median, round } from './support/stats.js';
import { numberField, runTelesync, stringField } from './support/telesync-command.js';
import { verifyStoredRows } from './support/verify-rows.js';
import { runWorkerProcess } from './support/worker-protocol.js';

/**
 * Benchmark 2, against a naive sync: the same slice of whole UTC days synced by a plain reference
 * (sequential pages, one autocommitted INSERT per row; bench/workers/naive-sync-worker.ts) and by
 * `telesync backfill --from … --to …`, in the same run, alternating which goes first. Both are
 * timed as whole processes. Target: telesync at least 10× faster.
 */

export interface NaiveRound {
  readonly round: number;
  readonly order: readonly ('naive' | 'telesync')[];
  readonly rows: number;
  readonly naive: {
    wallMs: number;
    workMs: number;
    rowsPerSecond: number;
    requests: number;
    cpu: CpuBreakdown | null;
  };
  readonly telesync: {
    wallMs: number;
    durationMs: number;
    rowsPerSecond: number;
    requests: number;
    cpu: CpuBreakdown | null;
  };
  /** telesync rows/s over naive rows/s. */
  readonly speedup: number;
}

export async function runNaiveSync(context: BenchContext): Promise<BenchmarkReport> {
  const startedAt = new Date().toISOString();
  const { settings } = context;
  const simulator = await startBenchSimulator(context);
  const rounds: NaiveRound[] = [];
  let slice: { from: string; to: string; expected: number };
  try {
    const dataset = await simulator.dataset();
    const oracle = new SimulatorOracle({ dataset, account: context.account });
    await oracle.verifyAgainst(simulator);
    // Whole UTC days a week back: settled, well inside the horizon, the same rows in every round.
    const today = Math.floor(Date.now() / 86_400_000) * DAY_MICROS;
    const fromMicros = today - (settings.naiveDays + 7) * DAY_MICROS;
    const toMicros = fromMicros + settings.naiveDays * DAY_MICROS;
    slice = {
      from: microsToIso(fromMicros),
      to: microsToIso(toMicros),
      expected: oracle.count(fromMicros, toMicros),
    };
    context.log(`slice [${slice.from}, ${slice.to}): ${formatInteger(slice.expected)} calls`);

    for (let index = 0; index < settings.runs; index++) {
      const order: ('naive' | 'telesync')[] =
        index % 2 === 0 ? ['naive', 'telesync'] : ['telesync', 'naive'];
      let naive: NaiveRound['naive'] | undefined;
      let telesync: NaiveRound['telesync'] | undefined;
      for (const step of order) {
        context.log(`round ${index + 1}/${settings.runs}: ${step}`);
        if (step === 'naive') naive = await measureNaive(context, simulator, oracle, slice);
        else telesync = await measureTelesync(context, simulator, oracle, slice);
      }
      if (naive === undefined || telesync === undefined)
        throw new HarnessError('a round did not run both syncs');
      const speedup = telesync.rowsPerSecond / naive.rowsPerSecond;
      rounds.push({ round: index + 1, order, rows: slice.expected, naive, telesync, speedup });
      context.log(
        `round ${index + 1}: naive ${formatInteger(naive.rowsPerSecond)} rows/s, telesync ${formatInteger(telesync.rowsPerSecond)} rows/s → ${formatDecimal(speedup)}×`,
      );
    }
  } finally {
    await simulator.stop();
  }

  const speedup = round(median(rounds.map((r) => r.speedup)), 2);
  const basis = `median of ${rounds.length} run${rounds.length === 1 ? '' : 's'}`;
  // A quick run's slice is a few days: both processes are mostly start-up.
  const speedupJudged = judgedOnFullRunsOnly(
    settings.mode,
    [
      checkTarget({
        id: 'naive-speedup',
        description: 'telesync rows/s ÷ naive reference rows/s, same slice',
        measured: speedup,
        unit: '×',
        comparator: '>=',
        threshold: 10,
        basis: `${basis} (ratio within each run)`,
      }),
    ],
    `on ${settings.naiveDays} days both processes spend much of their time starting up, and telesync has too few pages to overlap fetching with loading`,
  );
  const shared = [
    sharedMachineNote(
      'naive runs',
      rounds.map((r) => r.naive.cpu),
    ),
    sharedMachineNote(
      'telesync runs',
      rounds.map((r) => r.telesync.cpu),
    ),
  ].filter((note): note is string => note !== undefined);
  return {
    name: 'naive-sync',
    title: `2. Against a naive sync — ${settings.naiveDays} days, ${formatInteger(slice.expected)} calls`,
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      calls: settings.calls,
      runs: settings.runs,
      slice: { from: slice.from, to: slice.to },
      concurrency: settings.concurrency,
      maxRps: settings.unthrottledMaxRps,
    },
    figures: {
      rows: slice.expected,
      naiveRowsPerSecond: round(median(rounds.map((r) => r.naive.rowsPerSecond))),
      telesyncRowsPerSecond: round(median(rounds.map((r) => r.telesync.rowsPerSecond))),
      speedup,
      naiveRequests: median(rounds.map((r) => r.naive.requests)),
      telesyncRequests: median(rounds.map((r) => r.telesync.requests)),
    },
    runs: rounds,
    targets: speedupJudged.targets,
    tables: [{ title: 'Runs', table: roundsTable(rounds) }],
    notes: [
      'Both are timed as whole processes (start-up included): the naive reference is bench/workers/naive-sync-worker.ts (plain fetch, JSON.parse, one parameterised INSERT … ON CONFLICT per row, autocommit, pages one after the other), telesync is `telesync backfill --from … --to …` with its defaults and an unthrottled TELESYNC_MAX_RPS.',
      'The target is on whole processes; "without start-up" compares each one\'s own timing of its work (the naive worker from its first request, telesync its run\'s duration_ms), to show how much of the gap is start-up on a slice this small.',
      'The slice defaults to 30 days, one full window: the unit a backfill works in and long enough that the naive reference settles at its steady row-by-row rate (it runs for minutes). On a few days both are dominated by start-up and telesync has too few pages to overlap fetching with loading; `--naive-days 3` shows that smaller figure.',
      'Each stores the slice into a freshly migrated schema; both results are checked against what the simulator holds before any speed is reported.',
      ...shared,
      ...speedupJudged.notes,
    ],
  };
}

async function measureNaive(
  context: BenchContext,
  simulator: SimulatorProcess,
  oracle: SimulatorOracle,
  slice: { from: string; to: string; expected: number },
): Promise<NaiveRound['naive']> {
  const { db, settings } = context;
  const schema = await db.createSchema('naive');
  try {
    await db.checkpoint();
    const input: NaiveSyncInput = {
      baseUrl: simulator.url,
      authId: simulator.account.authId,
      authToken: simulator.account.authToken,
      from: slice.from,
      to: slice.to,
      databaseUrl: settings.databaseUrl,
      schema,
    };
    const { run, result } = await runWorkerProcess<NaiveSyncResult>('naive-sync-worker', input, {
      label: 'naive sync',
      timeoutMs: 2 * 60 * 60_000,
      simulatorPid: simulator.pid,
      track: (pid) => context.track(pid),
    });
    const rows = await verifyStoredRows('naive sync', db, schema, oracle, slice);
    if (result.rows !== rows)
      throw new RowsLostError('naive sync (rows it inserted)', rows, result.rows);
    return {
      wallMs: round(run.wallMs),
      workMs: round(result.elapsedMs),
      rowsPerSecond: round((rows / run.wallMs) * 1000),
      requests: result.requests,
      cpu: run.cpu,
    };
  } finally {
    await db.dropSchema(schema);
  }
}

async function measureTelesync(
  context: BenchContext,
  simulator: SimulatorProcess,
  oracle: SimulatorOracle,
  slice: { from: string; to: string; expected: number },
): Promise<NaiveRound['telesync']> {
  const { db, settings } = context;
  const schema = await db.createSchema('naive_ts');
  try {
    await db.checkpoint();
    const run = await runTelesync(
      ['backfill', '--from', slice.from, '--to', slice.to],
      {
        databaseUrl: settings.databaseUrl,
        schema,
        simulator,
        maxRps: settings.unthrottledMaxRps,
        concurrency: settings.concurrency,
      },
      {
        label: 'telesync backfill of the slice',
        timeoutMs: 60 * 60_000,
        track: (pid) => context.track(pid),
      },
    );
    const covered = {
      from: stringField(run.json, 'covered_from'),
      to: stringField(run.json, 'covered_to'),
    };
    if (
      Date.parse(covered.from) !== Date.parse(slice.from) ||
      Date.parse(covered.to) !== Date.parse(slice.to)
    ) {
      throw new HarnessError(
        `telesync covered [${covered.from}, ${covered.to}), not the slice [${slice.from}, ${slice.to})`,
      );
    }
    const rows = await verifyStoredRows('telesync slice backfill', db, schema, oracle, slice);
    return {
      wallMs: round(run.wallMs),
      durationMs: numberField(run.json, 'duration_ms'),
      rowsPerSecond: round((rows / run.wallMs) * 1000),
      requests: numberField(run.json, 'requests'),
      cpu: run.cpu,
    };
  } finally {
    await db.dropSchema(schema);
  }
}

function roundsTable(rounds: readonly NaiveRound[]): Table {
  /** The same comparison without either process's start-up (each one's own timing of its work). */
  const inside = (r: NaiveRound): number => r.naive.workMs / r.telesync.durationMs;
  const rows = rounds.map((r) => [
    `${r.round} (${r.order.join('→')})`,
    formatInteger(r.rows),
    formatSeconds(r.naive.wallMs),
    formatInteger(r.naive.rowsPerSecond),
    formatInteger(r.naive.requests),
    formatSeconds(r.telesync.wallMs),
    formatInteger(r.telesync.rowsPerSecond),
    formatInteger(r.telesync.requests),
    `${formatDecimal(r.speedup)}×`,
    `${formatDecimal(inside(r))}×`,
  ]);
  if (rounds.length > 1) {
    rows.push([
      'median',
      formatInteger(median(rounds.map((r) => r.rows))),
      formatSeconds(median(rounds.map((r) => r.naive.wallMs))),
      formatInteger(median(rounds.map((r) => r.naive.rowsPerSecond))),
      formatInteger(median(rounds.map((r) => r.naive.requests))),
      formatSeconds(median(rounds.map((r) => r.telesync.wallMs))),
      formatInteger(median(rounds.map((r) => r.telesync.rowsPerSecond))),
      formatInteger(median(rounds.map((r) => r.telesync.requests))),
      `${formatDecimal(median(rounds.map((r) => r.speedup)))}×`,
      `${formatDecimal(median(rounds.map(inside)))}×`,
    ]);
  }
  return {
    headers: [
      'run',
      'rows',
      'naive wall',
      'naive rows/s',
      'naive requests',
      'telesync wall',
      'telesync rows/s',
      'telesync requests',
      'speed-up',
      'speed-up without start-up',
    ],
    rows,
  };
}

import { mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { CopyLimitInput, CopyLimitResult } from './workers/copy-limit-worker.js';
import type { FetchLimitInput, FetchLimitResult } from './workers/fetch-limit-worker.js';
import { startBenchSimulator, type BenchContext } from './support/bench-context.js';
import { HarnessError, RowsLostError } from './support/bench-errors.js';
import {
  findMainProfile,
  summarizeCpuProfile,
  type ProfileSummary,
} from './support/cpu-profile.js';
import { createScratchDir } from './support/paths.js';
import {
  peakRssBytes,
  rssByQuarter,
  sharedMachineNote,
  type CpuBreakdown,
} from './support/process-monitor.js';
import {
  checkTarget,
  formatDecimal,
  formatInteger,
  formatMb,
  formatPercent,
  formatSeconds,
  MB,
  type BenchmarkReport,
  type Table,
} from './support/report.js';
import { isoToMicros, SimulatorOracle } from './support/simulator-oracle.js';
import type { SimulatorProcess } from './support/simulator-process.js';
import { maxOf, median, rotate, round } from './support/stats.js';
import {
  numberField,
  runTelesync,
  stringField,
  type TelesyncSettings,
} from './support/telesync-command.js';
import { verifyStoredRows } from './support/verify-rows.js';
import { runWorkerProcess } from './support/worker-protocol.js';

/**
 * Benchmark 1, backfill throughput: `telesync backfill --days 90` of the whole dataset, unthrottled,
 * end to end (rows stored ÷ wall time of the command), beside the two limits measured in the same
 * round — (a) fetching every page with telesync's client and discarding it, (b) loading the same
 * rows with COPY, no HTTP. Target: end to end ≥ 70% of the slower limit; peak RSS under 300 MB and
 * not growing with the backfill.
 */

const BACKFILL_DAYS = 90;
const HTTP_TIMEOUT_MS = 30_000;
const MAX_RETRIES = 8;

type Step = 'telesync' | 'fetch' | 'copy';

export interface EndToEndRun {
  readonly rows: number;
  readonly wallMs: number;
  readonly rowsPerSecond: number;
  /** Inside the command (its own duration_ms), without process start-up. */
  readonly telesyncDurationMs: number;
  readonly requests: number;
  readonly simulatorRequests: number;
  readonly retries: number;
  readonly windows: number;
  readonly peakRssBytes: number | null;
  readonly rssQuarterPeaksBytes: readonly (number | null)[];
  /** Peak of the last quarter over peak of the second quarter of the run. */
  readonly rssGrowth: number | null;
  readonly cpu: CpuBreakdown | null;
  readonly coveredFrom: string;
  readonly coveredTo: string;
}

export interface FetchLimitRun {
  readonly records: number;
  readonly elapsedMs: number;
  readonly rowsPerSecond: number;
  readonly requests: number;
  readonly simulatorRequests: number;
  readonly retries: number;
  readonly peakRssBytes: number | null;
  readonly cpu: CpuBreakdown | null;
}

export interface CopyLoad {
  readonly lanes: number;
  readonly loadMs: number;
  readonly rowsPerSecond: number;
  readonly gcMs: number;
}

export interface CopyLimitRun {
  readonly rows: number;
  /** The best of `loads`: the limit. */
  readonly rowsPerSecond: number;
  readonly bestLanes: number;
  readonly loads: readonly CopyLoad[];
  readonly prepareMs: number;
  readonly batches: number;
}

export interface ThroughputRound {
  readonly round: number;
  readonly order: readonly Step[];
  readonly endToEnd: EndToEndRun;
  readonly fetchLimit: FetchLimitRun;
  readonly copyLimit: CopyLimitRun;
  readonly slowerLimit: 'fetch' | 'copy';
  /** End-to-end rows/s over the slower limit's rows/s, in this round. */
  readonly ratio: number;
}

export async function runBackfillThroughput(context: BenchContext): Promise<BenchmarkReport> {
  const startedAt = new Date().toISOString();
  const { settings, db } = context;
  const notes: string[] = [];
  const simulator = await startBenchSimulator(context);
  const rounds: ThroughputRound[] = [];
  let profile: {
    telesync: ProfileSummary;
    simulator: ProfileSummary | null;
    rows: number;
    wallMs: number;
  } | null = null;
  try {
    const dataset = await simulator.dataset();
    const oracle = new SimulatorOracle({ dataset, account: context.account });
    await oracle.verifyAgainst(simulator);
    context.log(
      `simulator at ${simulator.url}: ${formatInteger(dataset.accounts[0]?.callsLast90Days)} calls in the last 90 days`,
    );
    const telesync = (schema: string): TelesyncSettings => ({
      databaseUrl: settings.databaseUrl,
      schema,
      simulator,
      maxRps: settings.unthrottledMaxRps,
      concurrency: settings.concurrency,
    });

    if (settings.warmup) {
      const schema = await db.createSchema('warmup');
      context.log('warm-up: telesync backfill --days 2 (untimed)');
      await runTelesync(['backfill', '--days', '2'], telesync(schema), {
        label: 'warm-up backfill',
        timeoutMs: 10 * 60_000,
        track: (pid) => context.track(pid),
      });
      await db.dropSchema(schema);
    }

    for (let index = 0; index < settings.runs; index++) {
      const order = rotate<Step>(['telesync', 'fetch', 'copy'], index);
      const done: Partial<Record<Step, EndToEndRun | FetchLimitRun | CopyLimitRun>> = {};
      for (const step of order) {
        context.log(`round ${index + 1}/${settings.runs}: ${step}`);
        if (step === 'telesync')
          done.telesync = await measureEndToEnd(context, simulator, oracle, telesync);
        if (step === 'fetch') done.fetch = await measureFetchLimit(context, simulator, oracle);
        if (step === 'copy') done.copy = await measureCopyLimit(context, oracle, index);
      }
      const endToEnd = done.telesync as EndToEndRun;
      const fetchLimit = done.fetch as FetchLimitRun;
      const copyLimit = done.copy as CopyLimitRun;
      const slowerLimit = fetchLimit.rowsPerSecond <= copyLimit.rowsPerSecond ? 'fetch' : 'copy';
      const slower = Math.min(fetchLimit.rowsPerSecond, copyLimit.rowsPerSecond);
      const ratio = endToEnd.rowsPerSecond / slower;
      rounds.push({ round: index + 1, order, endToEnd, fetchLimit, copyLimit, slowerLimit, ratio });
      context.log(
        `round ${index + 1}: telesync ${formatInteger(endToEnd.rowsPerSecond)} rows/s, fetch limit ${formatInteger(fetchLimit.rowsPerSecond)}, ` +
          `COPY limit ${formatInteger(copyLimit.rowsPerSecond)} → ${formatPercent(ratio)} of the slower`,
      );
    }
  } finally {
    await simulator.stop();
  }

  if (settings.profile) {
    try {
      profile = await profileBackfill(context);
    } catch (error) {
      if (error instanceof RowsLostError) throw error;
      notes.push(`the CPU profile could not be taken: ${String(error)}`);
    }
  }

  const e2e = rounds.map((r) => r.endToEnd);
  const peaks = e2e
    .map((run) => run.peakRssBytes)
    .filter((value): value is number => value !== null);
  const growths = e2e
    .map((run) => run.rssGrowth)
    .filter((value): value is number => value !== null);
  const basis = `median of ${rounds.length} run${rounds.length === 1 ? '' : 's'}`;
  const worst = `worst of ${rounds.length} run${rounds.length === 1 ? '' : 's'}`;
  const figures = {
    rows: median(e2e.map((run) => run.rows)),
    endToEndRowsPerSecond: round(median(e2e.map((run) => run.rowsPerSecond))),
    endToEndWallMs: round(median(e2e.map((run) => run.wallMs))),
    telesyncInternalRowsPerSecond: round(
      median(e2e.map((run) => (run.rows / run.telesyncDurationMs) * 1000)),
    ),
    requests: median(e2e.map((run) => run.requests)),
    simulatorCountedRequests: median(e2e.map((run) => run.simulatorRequests)),
    peakRssBytes: median(peaks),
    peakRssBytesWorst: maxOf(peaks),
    rssGrowthWorst: round(maxOf(growths), 3),
    fetchLimitRowsPerSecond: round(median(rounds.map((r) => r.fetchLimit.rowsPerSecond))),
    copyLimitRowsPerSecond: round(median(rounds.map((r) => r.copyLimit.rowsPerSecond))),
    ratioToSlowerLimit: round(median(rounds.map((r) => r.ratio)), 3),
    slowerLimitByRound: rounds.map((r) => r.slowerLimit),
    cpuDuringEndToEnd: medianCpu(e2e.map((run) => run.cpu)),
    profile,
  };

  const targets = [
    checkTarget({
      id: 'backfill-vs-limits',
      description: 'end-to-end rows/s vs the slower of the fetch and COPY limits',
      measured: figures.ratioToSlowerLimit,
      unit: 'ratio',
      comparator: '>=',
      threshold: 0.7,
      basis: `${basis} (ratio within each run)`,
    }),
    checkTarget({
      id: 'backfill-peak-rss',
      description: 'peak RSS of the telesync process',
      measured: peaks.length > 0 ? round(maxOf(peaks) / MB, 1) : null,
      unit: 'MB',
      comparator: '<=',
      threshold: 300,
      basis: worst,
    }),
    checkTarget({
      id: 'backfill-rss-flat',
      description: 'memory flat over the backfill (last-quarter RSS peak ÷ second-quarter peak)',
      measured: growths.length > 0 ? round(maxOf(growths), 3) : null,
      unit: 'ratio',
      comparator: '<=',
      threshold: 1.1,
      basis: worst,
    }),
  ];

  notes.push(
    'End to end is the wall time of the `telesync backfill --days 90` process, start-up included; the limits time only their work (first request to last answer; first batch to last commit).',
    `The fetch limit uses telesync's HttpTransport and TelephonyClient with the same settings (concurrency ${settings.concurrency}, ${settings.concurrency * 2} pages queued at once, TELESYNC_MAX_RPS ${settings.unthrottledMaxRps}) and the same 1-day windows, but keeps every window's pages flowing at once; records are parsed by the client and then discarded.`,
    `The COPY limit loads rows made by telesync's own parser and normaliser from the same simulated data (generated in-process, untimed) with telesync's upsertDataRows('copy') in batches of ${settings.batchSize} (TELESYNC_BATCH_SIZE default), one transaction each, into a freshly migrated trunk_calls (same indexes), emptied and CHECKPOINTed before each load. It loads them over ${copyLaneCounts().join(', ')} connection(s) ("lanes", each taking the next batch when its transaction commits), and the best is the limit: one connection is one PostgreSQL backend, one core at most.`,
    'Memory is the resident set of the telesync process and its children, sampled every 50 ms, and the kernel\'s VmHWM of the process; "flat" compares the peak of the run\'s last quarter with that of its second quarter.',
  );
  const shared = sharedMachineNote(
    'telesync backfills',
    e2e.map((run) => run.cpu),
  );
  if (shared !== undefined) notes.push(shared);
  const mismatched = e2e.filter((run) => run.requests !== run.simulatorRequests);
  if (mismatched.length > 0) {
    notes.push(
      `telesync's own request count differed from what the simulator counted in ${mismatched.length} run(s) (e.g. ${mismatched[0]!.requests} vs ${mismatched[0]!.simulatorRequests}).`,
    );
  }

  return {
    name: 'backfill-throughput',
    title: `1. Backfill throughput — 90 days, ${formatInteger(settings.calls)} calls, unthrottled`,
    status: 'ok',
    startedAt,
    finishedAt: new Date().toISOString(),
    settings: {
      calls: settings.calls,
      runs: settings.runs,
      days: BACKFILL_DAYS,
      concurrency: settings.concurrency,
      pageConcurrency: settings.concurrency * 2,
      maxRps: settings.unthrottledMaxRps,
      batchSize: settings.batchSize,
      warmup: settings.warmup,
    },
    figures,
    runs: rounds,
    targets,
    tables: [
      {
        title: 'Runs (each row is one round: telesync and both limits, in the order shown)',
        table: roundsTable(rounds),
      },
      {
        title: 'COPY limit by number of connections (the best is the limit)',
        table: copyLoadsTable(rounds),
      },
      {
        title:
          'Where the CPU went during each telesync backfill (CPU seconds; capacity = cores × wall)',
        table: cpuTable(rounds),
      },
      ...(profile !== null ? profileTables(profile) : []),
    ],
    notes,
  };
}

async function measureEndToEnd(
  context: BenchContext,
  simulator: SimulatorProcess,
  oracle: SimulatorOracle,
  telesync: (schema: string) => TelesyncSettings,
): Promise<EndToEndRun> {
  const { db } = context;
  const schema = await db.createSchema('e2e');
  try {
    await db.checkpoint();
    const before = await simulator.stats();
    let lastProgress = 0;
    const run = await runTelesync(['backfill', '--days', String(BACKFILL_DAYS)], telesync(schema), {
      label: 'telesync backfill',
      timeoutMs: 2 * 60 * 60_000,
      track: (pid) => context.track(pid),
      onProgress: (line) => {
        if (performance.now() - lastProgress > 15_000 && line.startsWith('backfill')) {
          lastProgress = performance.now();
          context.log(`  ${line}`);
        }
      },
    });
    const after = await simulator.stats();
    const coveredFrom = stringField(run.json, 'covered_from');
    const coveredTo = stringField(run.json, 'covered_to');
    if (numberField(run.json, 'records_rejected') !== 0) {
      throw new HarnessError(
        `telesync rejected ${String(run.json.records_rejected)} records of a clean dataset`,
      );
    }
    const rows = await verifyStoredRows('telesync backfill', db, schema, oracle, {
      from: coveredFrom,
      to: coveredTo,
    });
    const quarters = rssByQuarter(run);
    const q2 = quarters[1];
    const q4 = quarters[3];
    return {
      rows,
      wallMs: round(run.wallMs),
      rowsPerSecond: round((rows / run.wallMs) * 1000),
      telesyncDurationMs: numberField(run.json, 'duration_ms'),
      requests: numberField(run.json, 'requests'),
      simulatorRequests: after.requests.total - before.requests.total,
      retries: numberField(run.json, 'retries'),
      windows: numberField(run.json, 'windows_planned'),
      peakRssBytes: peakRssBytes(run),
      rssQuarterPeaksBytes: quarters,
      rssGrowth:
        q2 !== null && q2 !== undefined && q4 !== null && q4 !== undefined
          ? round(q4 / q2, 3)
          : null,
      cpu: run.cpu,
      coveredFrom,
      coveredTo,
    };
  } finally {
    await db.dropSchema(schema);
  }
}

async function measureFetchLimit(
  context: BenchContext,
  simulator: SimulatorProcess,
  oracle: SimulatorOracle,
): Promise<FetchLimitRun> {
  const { settings } = context;
  const input: FetchLimitInput = {
    baseUrl: simulator.url,
    authId: simulator.account.authId,
    authToken: simulator.account.authToken,
    maxRps: settings.unthrottledMaxRps,
    concurrency: settings.concurrency,
    pageConcurrency: settings.concurrency * 2,
    timeoutMs: HTTP_TIMEOUT_MS,
    maxRetries: MAX_RETRIES,
    days: BACKFILL_DAYS,
  };
  const before = await simulator.stats();
  const { run, result } = await runWorkerProcess<FetchLimitResult>('fetch-limit-worker', input, {
    label: 'fetch limit',
    timeoutMs: 2 * 60 * 60_000,
    simulatorPid: simulator.pid,
    track: (pid) => context.track(pid),
  });
  const after = await simulator.stats();
  const expected = oracle.count(isoToMicros(result.coveredFrom), isoToMicros(result.coveredTo));
  if (result.records !== expected)
    throw new RowsLostError('fetch limit (records received)', expected, result.records);
  if (result.distinctCalls !== expected) {
    throw new RowsLostError(
      'fetch limit (distinct calls received)',
      expected,
      result.distinctCalls,
    );
  }
  return {
    records: result.records,
    elapsedMs: round(result.elapsedMs),
    rowsPerSecond: round((result.records / result.elapsedMs) * 1000),
    requests: result.requests,
    simulatorRequests: after.requests.total - before.requests.total,
    retries: result.retries,
    peakRssBytes: peakRssBytes(run),
    cpu: run.cpu,
  };
}

async function measureCopyLimit(
  context: BenchContext,
  oracle: SimulatorOracle,
  index: number,
): Promise<CopyLimitRun> {
  const { db, settings } = context;
  const schema = await db.createSchema('copy');
  try {
    const input: CopyLimitInput = {
      oracle: oracle.spec,
      databaseUrl: settings.databaseUrl,
      schema,
      days: BACKFILL_DAYS,
      batchSize: settings.batchSize,
      laneCounts: rotate(copyLaneCounts(), index),
    };
    const { result } = await runWorkerProcess<CopyLimitResult>('copy-limit-worker', input, {
      label: 'COPY limit',
      timeoutMs: 2 * 60 * 60_000,
      // A million normalised rows in memory at once.
      nodeArgs: ['--max-old-space-size=8192'],
      track: (pid) => context.track(pid),
      onProgress: (line) => context.log(`  ${line}`),
    });
    if (result.rejected !== 0) {
      throw new HarnessError(
        `the COPY limit's rows: ${result.rejected} rejected by the normaliser`,
      );
    }
    // The table holds the last load; every load's count was checked by the worker.
    const rows = await verifyStoredRows('COPY limit', db, schema, oracle, {
      from: result.coveredFrom,
      to: result.coveredTo,
    });
    if (rows !== result.rows) {
      throw new RowsLostError('COPY limit (rows handed to the loader)', result.rows, rows);
    }
    const loads: CopyLoad[] = result.loads
      .map((load) => ({
        lanes: load.lanes,
        loadMs: round(load.loadMs),
        rowsPerSecond: round((rows / load.loadMs) * 1000),
        gcMs: round(load.gcMs),
      }))
      .sort((a, b) => a.lanes - b.lanes);
    const best = loads.reduce((a, b) => (b.rowsPerSecond > a.rowsPerSecond ? b : a));
    return {
      rows,
      rowsPerSecond: best.rowsPerSecond,
      bestLanes: best.lanes,
      loads,
      prepareMs: round(result.prepareMs),
      batches: result.loads[0]?.batches ?? 0,
    };
  } finally {
    await db.dropSchema(schema);
  }
}

/** Connections the COPY limit loads with: one, one per core, two per core. */
function copyLaneCounts(): number[] {
  const cores = availableParallelism();
  return [...new Set([1, cores, 2 * cores])];
}

/**
 * One extra backfill (`--days profileDays`), untimed, with both telesync and a simulator of its own
 * under `node --cpu-prof`: where the CPU time goes.
 */
async function profileBackfill(context: BenchContext): Promise<{
  telesync: ProfileSummary;
  simulator: ProfileSummary | null;
  rows: number;
  wallMs: number;
}> {
  const { db, settings } = context;
  const scratch = createScratchDir('profile');
  const simulatorDir = join(scratch.path, 'simulator');
  const telesyncDir = join(scratch.path, 'telesync');
  mkdirSync(simulatorDir);
  mkdirSync(telesyncDir);
  try {
    context.log(
      `profile: telesync backfill --days ${settings.profileDays} under node --cpu-prof (untimed)`,
    );
    const simulator = await startBenchSimulator(context, {
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${simulatorDir}`],
    });
    const schema = await db.createSchema('profile');
    let rows: number;
    let wallMs: number;
    try {
      const dataset = await simulator.dataset();
      const oracle = new SimulatorOracle({ dataset, account: context.account });
      const run = await runTelesync(
        ['backfill', '--days', String(settings.profileDays)],
        {
          databaseUrl: settings.databaseUrl,
          schema,
          simulator,
          maxRps: settings.unthrottledMaxRps,
          concurrency: settings.concurrency,
        },
        {
          label: 'profiled telesync backfill',
          timeoutMs: 60 * 60_000,
          nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${telesyncDir}`],
          track: (pid) => context.track(pid),
        },
      );
      rows = await verifyStoredRows('profiled backfill', db, schema, oracle, {
        from: stringField(run.json, 'covered_from'),
        to: stringField(run.json, 'covered_to'),
      });
      wallMs = round(run.wallMs);
    } finally {
      await simulator.stop();
      await db.dropSchema(schema);
    }
    const telesyncProfile = findMainProfile(telesyncDir);
    if (telesyncProfile === undefined) throw new HarnessError('telesync wrote no CPU profile');
    const simulatorProfile = findMainProfile(simulatorDir);
    return {
      telesync: strip(summarizeCpuProfile(telesyncProfile)),
      simulator:
        simulatorProfile === undefined ? null : strip(summarizeCpuProfile(simulatorProfile)),
      rows,
      wallMs,
    };
  } finally {
    scratch.remove();
  }
}

/** The summary without the temporary file's path. */
function strip(summary: ProfileSummary): ProfileSummary {
  return { ...summary, file: '(deleted after reading)' };
}

function roundsTable(rounds: readonly ThroughputRound[]): Table {
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

function copyLoadsTable(rounds: readonly ThroughputRound[]): Table {
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

function cpuTable(rounds: readonly ThroughputRound[]): Table {
  return {
    headers: [
      'run',
      'wall',
      'capacity',
      'busy',
      'telesync',
      'simulator',
      'postgres',
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
        seconds(cpu?.postgresSeconds),
        seconds(cpu?.harnessSeconds),
        seconds(cpu?.otherSeconds),
        r.endToEnd.rssQuarterPeaksBytes.map((bytes) => formatMb(bytes)).join(' / '),
      ];
    }),
  };
}

function profileTables(profile: {
  telesync: ProfileSummary;
  simulator: ProfileSummary | null;
  rows: number;
  wallMs: number;
}): { title: string; table: Table }[] {
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
    'harnessSeconds',
    'otherSeconds',
  ];
  return Object.fromEntries(
    keys.map((key) => [key, round(median(present.map((cpu) => cpu[key] ?? Number.NaN)), 2)]),
  );
}

import type { FetchLimitInput, FetchLimitResult } from '../workers/fetch-limit-worker.js';
import type { BenchContext } from '../support/bench-context.js';
import { RowsLostError } from '../support/bench-errors.js';
import { peakRssBytes } from '../support/process-monitor.js';
import { isoToMicros, type SimulatorOracle } from '../support/simulator-oracle.js';
import type { SimulatorProcess } from '../support/simulator-process.js';
import { round } from '../support/stats.js';
import { runWorkerProcess } from '../support/worker-protocol.js';
import { BACKFILL_DAYS, type FetchLimitRun } from './throughput-round.js';

const HTTP_TIMEOUT_MS = 30_000;
const MAX_RETRIES = 8;

/**
 * The fetch limit: every page of the backfill fetched with telesync's client in a worker process
 * and discarded; every call must arrive once.
 */
export async function measureFetchLimit(
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

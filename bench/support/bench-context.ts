import type { BenchDatabase } from './bench-database.js';
import type { BenchSettings } from './bench-settings.js';
import { SimulatorProcess, type BenchAccount } from './simulator-process.js';

/** What every benchmark receives from the harness. */
export interface BenchContext {
  readonly settings: BenchSettings;
  readonly db: BenchDatabase;
  /** The account the simulators serve and telesync syncs. */
  readonly account: BenchAccount;
  /** A progress line on stderr, prefixed with the time and the benchmark. */
  log(message: string): void;
  /** Registers a child process to stop if the harness is interrupted; returns the unregister. */
  track(pid: number): () => void;
}

/** Starts a simulator process for a benchmark, with the run's seed and account. */
export function startBenchSimulator(
  context: BenchContext,
  options: { calls?: number; rateLimit?: string; nodeArgs?: readonly string[] } = {},
): Promise<SimulatorProcess> {
  return SimulatorProcess.start({
    seed: context.settings.seed,
    calls: options.calls ?? context.settings.calls,
    account: context.account,
    ...(options.rateLimit !== undefined ? { rateLimit: options.rateLimit } : {}),
    ...(options.nodeArgs !== undefined ? { nodeArgs: options.nodeArgs } : {}),
    track: (pid) => context.track(pid),
  });
}

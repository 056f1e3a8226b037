import { execFileSync } from 'node:child_process';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { TELESYNC_VERSION } from '../../src/version.js';
import { redactUrl } from './bench-database.js';
import { REPO_ROOT } from './paths.js';
import { originalRepoRoot, SNAPSHOT_ENV, sourceDigest } from './source-snapshot.js';

/** Where and on what the benchmarks ran: recorded with every result. */
export interface BenchEnvironment {
  readonly date: string;
  readonly node: string;
  readonly postgres: string;
  readonly telesyncVersion: string;
  readonly gitCommit: string | null;
  /** Files changed in the working tree at the time (the figures may not match the commit). */
  readonly gitDirtyFiles: number | null;
  /** Digest of the measured source (src, bin, migrations, package.json). */
  readonly sourceDigest: string;
  /** Whether a copy of the code taken at the start was measured (not the changing tree). */
  readonly snapshot: boolean;
  readonly cores: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly platform: string;
  readonly loadAverageAtStart: readonly number[];
  readonly databaseUrl: string;
}

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, {
      cwd: originalRepoRoot(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

export function describeEnvironment(
  postgresVersion: string,
  databaseUrl: string,
): BenchEnvironment {
  const status = git(['status', '--porcelain']);
  return {
    date: new Date().toISOString(),
    node: process.version,
    postgres: postgresVersion,
    telesyncVersion: TELESYNC_VERSION,
    gitCommit: git(['rev-parse', 'HEAD']),
    gitDirtyFiles: status === null ? null : status.split('\n').filter((line) => line !== '').length,
    sourceDigest: sourceDigest(REPO_ROOT),
    snapshot: process.env[SNAPSHOT_ENV] !== undefined,
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    platform: `${process.platform} ${process.arch}`,
    loadAverageAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
    databaseUrl: redactUrl(databaseUrl),
  };
}

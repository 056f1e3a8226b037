import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** The repository root. */
export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** telesync's entry script, for node to run directly (the simulator). */
export const TELESYNC_BIN = join(REPO_ROOT, 'bin/telesync.js');

/**
 * The `telesync` command as npm installs it (package.json "bin"): a script that runs node, as one
 * process, with the young generation the command sets. What the benchmarks measure telesync as.
 */
export const TELESYNC_COMMAND = join(REPO_ROOT, 'bin/telesync');

/** Where the results are written. */
export const RESULTS_DIR = join(REPO_ROOT, 'bench/results');

/** A worker script of the benchmarks (bench/workers/<name>.ts). */
export function workerScript(name: string): string {
  return join(REPO_ROOT, 'bench/workers', `${name}.ts`);
}

/**
 * A fresh empty directory under the system's temporary directory; `remove` deletes it. Children
 * run in one so that no developer's `.env` leaks into a measurement.
 */
export function createScratchDir(prefix: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), `telesync-bench-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** The environment every child gets besides its own settings: PATH and HOME only. */
export function baseChildEnv(): Record<string, string> {
  // The node running the benchmarks first, for the `telesync` command's `node`.
  const path = `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`;
  return { PATH: path, HOME: process.env.HOME ?? '/tmp' };
}

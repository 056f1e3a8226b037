import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The repository root. */
export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** The `telesync` command, run as users run it (TypeScript through tsx's loader). */
export const TELESYNC_BIN = join(REPO_ROOT, 'bin/telesync.js');

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
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
}

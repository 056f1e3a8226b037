import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** The repository root. */
export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/**
 * The `telesync` command as npm installs it (package.json "bin"): a script that runs node, as one
 * process, with the young generation the command sets. What the benchmarks measure telesync as.
 * A checkout of another commit (`--against`) is run through its own command the same way.
 */
export const TELESYNC_COMMAND = join(REPO_ROOT, 'bin/telesync');

/** The script the command runs under node. */
const TELESYNC_SCRIPT = join(REPO_ROOT, 'bin/telesync.js');

/**
 * The flags the command gives node (bin/telesync; test/unit/bench-invocation.test.ts keeps the two
 * in step).
 */
export const COMMAND_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];

/**
 * How to start `telesync <args>` with node flags `nodeArgs`: the command itself when there are
 * none; otherwise node with the command's flags and those, since some (--cpu-prof) are refused in
 * NODE_OPTIONS, the only way through the command. Either way one process, node's.
 */
export function telesyncInvocation(
  args: readonly string[],
  nodeArgs: readonly string[] = [],
  root: string = REPO_ROOT,
): { command: string; args: string[] } {
  if (nodeArgs.length === 0) {
    return {
      command: root === REPO_ROOT ? TELESYNC_COMMAND : join(root, 'bin/telesync'),
      args: [...args],
    };
  }
  return {
    command: process.execPath,
    args: [
      ...COMMAND_NODE_FLAGS,
      ...nodeArgs,
      root === REPO_ROOT ? TELESYNC_SCRIPT : join(root, 'bin/telesync.js'),
      ...args,
    ],
  };
}

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

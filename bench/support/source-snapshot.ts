import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './paths.js';

/**
 * A full benchmark run takes the better part of an hour, and the working tree is shared: files
 * change under it. So by default the harness copies the code it measures (src, bin, migrations,
 * bench, the tests the fault harness runs, package.json, the tsconfigs, vitest.config.ts;
 * node_modules is linked) to a temporary directory and runs
 * from there, and every figure belongs to that one snapshot, identified by a digest of its source.
 */

/** Set in the harness that runs inside a snapshot: the repository it was taken from. */
export const SNAPSHOT_ENV = 'TELESYNC_BENCH_SNAPSHOT_OF';

const COPIED = [
  'src',
  'bin',
  'migrations',
  'bench',
  'test',
  'package.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'vitest.config.ts',
];

/** The repository the running code was copied from, or the repository itself. */
export function originalRepoRoot(): string {
  return process.env[SNAPSHOT_ENV] ?? REPO_ROOT;
}

/** A digest of the product's source (src, bin, migrations, package.json) at `root`. */
export function sourceDigest(root: string): string {
  const hash = createHash('sha256');
  const visit = (path: string): void => {
    if (!existsSync(path)) return;
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path).sort()) visit(join(path, name));
      return;
    }
    hash.update(relative(root, path));
    hash.update('\0');
    hash.update(readFileSync(path));
    hash.update('\0');
  };
  for (const entry of ['src', 'bin', 'migrations', 'package.json']) visit(join(root, entry));
  return hash.digest('hex').slice(0, 16);
}

/**
 * Copies the code to a temporary directory and runs this same harness from there with `argv`,
 * results written back into the repository. Resolves with the child's exit code; the copy is
 * deleted afterwards.
 */
export async function runFromSnapshot(
  argv: readonly string[],
  resultsDir: string,
): Promise<number> {
  const snapshot = mkdtempSync(join(tmpdir(), 'telesync-bench-snapshot-'));
  try {
    for (const entry of COPIED) {
      const from = join(REPO_ROOT, entry);
      if (!existsSync(from)) continue;
      cpSync(from, join(snapshot, entry), {
        recursive: true,
        filter: (source) => !relative(REPO_ROOT, source).startsWith(join('bench', 'results')),
      });
    }
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(snapshot, 'node_modules'), 'dir');
    // Built as `npm ci` builds it (the prepare script), so telesync is measured as users run it:
    // compiled, not through the TypeScript loader.
    const build = spawnSync(process.execPath, [join(snapshot, 'bin/build.js')], {
      cwd: snapshot,
      stdio: 'inherit',
    });
    if (build.status !== 0) throw new Error('building the snapshot failed');
    process.stderr.write(
      `measuring a snapshot of the code (source ${sourceDigest(snapshot)}) in ${snapshot}\n`,
    );
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(snapshot, 'bench/run-benchmarks.ts'),
        ...argv,
        '--results-dir',
        resultsDir,
      ],
      { cwd: snapshot, stdio: 'inherit', env: { ...process.env, [SNAPSHOT_ENV]: REPO_ROOT } },
    );
    // Ctrl-C reaches the child from the terminal (same process group) and it cleans up; this
    // process only waits for it. A SIGTERM sent to this process alone is passed on.
    const ignore = (): void => undefined;
    const forward = (): void => {
      child.kill('SIGTERM');
    };
    process.on('SIGINT', ignore);
    process.on('SIGTERM', forward);
    const code = await new Promise<number>((resolve) => {
      child.once('close', (exitCode) => resolve(exitCode ?? 1));
    });
    process.off('SIGINT', ignore);
    process.off('SIGTERM', forward);
    return code;
  } finally {
    rmSync(snapshot, { recursive: true, force: true });
  }
}

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HarnessError } from './bench-errors.js';

/**
 * Another commit of the repository, checked out and built beside this one for a comparison: a
 * detached git worktree in a temporary directory, node_modules linked from this checkout, built by
 * its own bin/build.js. `remove` deletes it; it also runs when the process exits (Ctrl-C included).
 */
export interface RefCheckout {
  readonly ref: string;
  readonly commit: string;
  /** The commit's subject line. */
  readonly subject: string;
  readonly root: string;
  remove(): void;
}

function git(repo: string, args: readonly string[]): { ok: boolean; out: string } {
  const result = spawnSync('git', ['-C', repo, ...args], { encoding: 'utf8' });
  return { ok: result.status === 0, out: `${result.stdout}${result.stderr}`.trim() };
}

export function checkOutRef(repo: string, ref: string): RefCheckout {
  const resolved = git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  if (!resolved.ok) {
    throw new HarnessError(
      `--against ${ref}: not a commit of the repository at ${repo} (git rev-parse: ${resolved.out || 'unknown'})`,
    );
  }
  const commit = resolved.out.split('\n')[0]!;
  const subject = git(repo, ['log', '-1', '--format=%s', commit]).out;
  const root = mkdtempSync(join(tmpdir(), 'telesync-bench-against-'));
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    try {
      unlinkSync(join(root, 'node_modules'));
    } catch {
      // Not linked yet.
    }
    git(repo, ['worktree', 'remove', '--force', root]);
    rmSync(root, { recursive: true, force: true });
    git(repo, ['worktree', 'prune']);
  };
  process.on('exit', remove);
  try {
    const added = git(repo, ['worktree', 'add', '--detach', root, commit]);
    if (!added.ok)
      throw new HarnessError(`--against ${ref}: git worktree add failed: ${added.out}`);
    symlinkSync(join(repo, 'node_modules'), join(root, 'node_modules'), 'dir');
    const build = spawnSync(process.execPath, [join(root, 'bin/build.js')], {
      cwd: root,
      encoding: 'utf8',
    });
    if (build.status !== 0) {
      throw new HarnessError(
        `--against ${ref}: building ${commit.slice(0, 7)} failed: ${`${build.stdout}${build.stderr}`.slice(-2000)}`,
      );
    }
  } catch (error) {
    remove();
    throw error;
  }
  return { ref, commit, subject, root, remove };
}

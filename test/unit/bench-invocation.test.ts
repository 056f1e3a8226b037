import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  baseChildEnv,
  COMMAND_NODE_FLAGS,
  REPO_ROOT,
  TELESYNC_COMMAND,
  telesyncInvocation,
} from '../../bench/support/paths.js';

describe('telesyncInvocation (benchmarks)', () => {
  it('gives node the flags the telesync command gives it', () => {
    const command = readFileSync(join(REPO_ROOT, 'bin/telesync'), 'utf8');
    expect(command).toContain(`exec "$node" ${COMMAND_NODE_FLAGS.join(' ')} "$entry" "$@"`);
  });

  it('runs the command itself when node needs no flags of the benchmark', () => {
    expect(telesyncInvocation(['backfill', '--days', '90'])).toEqual({
      command: TELESYNC_COMMAND,
      args: ['backfill', '--days', '90'],
    });
  });

  // Node refuses --cpu-prof in NODE_OPTIONS, so benchmark 1 puts it on node's command line: this
  // checks that the profile is then written.
  it('runs node under --cpu-prof with the command flags, and node writes the profile', () => {
    const dir = mkdtempSync(join(tmpdir(), 'telesync-invocation-'));
    try {
      const { command, args } = telesyncInvocation(
        ['--version'],
        ['--cpu-prof', `--cpu-prof-dir=${dir}`],
      );
      expect(args.slice(0, COMMAND_NODE_FLAGS.length)).toEqual(COMMAND_NODE_FLAGS);
      const result = spawnSync(command, args, { env: baseChildEnv(), encoding: 'utf8' });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
      // Node writes a profile per thread, named CPU.<date>.<time>.<pid>.<thread>.<n>: the main
      // thread's is thread 0; tsx's loader thread writes another when sources newer than the
      // bundle run through tsx (an edit not yet built).
      const mainThread = /^CPU\.\d{8}\.\d{6}\.\d+\.0\.\d+\.cpuprofile$/;
      expect(readdirSync(dir).filter((name) => mainThread.test(name))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

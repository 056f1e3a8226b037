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
    expect(command).toContain(`exec node ${COMMAND_NODE_FLAGS.join(' ')} "$entry" "$@"`);
  });

  it('runs the command itself when node needs no flags of the benchmark', () => {
    expect(telesyncInvocation(['backfill', '--days', '90'])).toEqual({
      command: TELESYNC_COMMAND,
      args: ['backfill', '--days', '90'],
    });
  });

  // Node 20 refuses --cpu-prof in NODE_OPTIONS, the only way through the command: benchmark 1's
  // profile failed so until stop 34.
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
      expect(readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

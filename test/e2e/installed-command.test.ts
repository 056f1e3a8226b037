import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TELESYNC_VERSION } from '../../src/version.js';
import { waitFor } from '../support/telesync-process.js';

/**
 * The `telesync` command as npm installs it: package.json's bin, linked from node_modules/.bin. It
 * runs node with a larger young generation (bin/telesync), as one process: the PID npm's link
 * starts is node's, so signals and exit codes reach telesync itself.
 */

const COMMAND = resolve(import.meta.dirname, '../../bin/telesync');
const scratch = mkdtempSync(join(tmpdir(), 'telesync-installed-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** node_modules/.bin/telesync -> ../telesync/bin/telesync, the package itself a link too. */
function linkedAsNpmDoes(): string {
  const modules = join(scratch, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  symlinkSync(dirname(dirname(COMMAND)), join(modules, 'telesync'));
  const link = join(modules, '.bin', 'telesync');
  symlinkSync('../telesync/bin/telesync', link);
  return link;
}

interface Started {
  readonly pid: number;
  readonly stdout: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
}

function start(file: string, args: readonly string[], env: Record<string, string> = {}): Started {
  // The first node on the PATH is the one running the tests (Node 24 in CI's second pass).
  const path = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
  const child = spawn(file, args, {
    cwd: scratch,
    env: { PATH: path, HOME: process.env.HOME ?? scratch, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.resume();
  return {
    pid: child.pid!,
    stdout: () => out,
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    kill: (signal) => child.kill(signal),
  };
}

const waitForOutput = (started: Started, pattern: RegExp): Promise<true> =>
  waitFor(() => pattern.test(started.stdout()), {
    timeoutMs: 20_000,
    intervalMs: 50,
    what: `${String(pattern)} in the output`,
  });

/** The command line of a process, as `ps` shows it. */
const commandLine = (pid: number) =>
  readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

/**
 * No database in these checks: the embedded pass (`npm test`, no TEST_DATABASE_URL) runs them, and
 * the pass on the PostgreSQL of TEST_DATABASE_URL (CI's second) would only run the same commands
 * again.
 */
const repeatsTheEmbeddedPass = Boolean(process.env.TEST_DATABASE_URL);

describe.skipIf(repeatsTheEmbeddedPass)('the installed telesync command', () => {
  const link = linkedAsNpmDoes();

  it("runs through npm's links and answers as telesync", async () => {
    const version = start(link, ['--version']);
    expect(await version.exited).toEqual({ code: 0, signal: null });
    expect(version.stdout().trim()).toBe(TELESYNC_VERSION);
  });

  it.skipIf(process.platform !== 'linux')(
    'is node itself, with the larger young generation, and stops on SIGTERM like telesync',
    async () => {
      const simulator = start(link, ['simulate', '--port', '0', '--calls', '10']);
      await waitForOutput(simulator, /listening on http:/);
      const argv = commandLine(simulator.pid);
      expect(argv[0]).toMatch(/node$/);
      expect(argv).toContain('--max-semi-space-size=32');
      expect(argv[2]).toMatch(/bin\/telesync\.js$/);
      simulator.kill('SIGTERM');
      expect((await simulator.exited).code).toBe(0);
    },
  );

  it.skipIf(process.platform !== 'linux')(
    "leaves an operator's own young generation in NODE_OPTIONS alone",
    async () => {
      const simulator = start(link, ['simulate', '--port', '0', '--calls', '10'], {
        NODE_OPTIONS: '--max-semi-space-size=64',
      });
      await waitForOutput(simulator, /listening on http:/);
      expect(commandLine(simulator.pid).some((arg) => arg.includes('semi-space'))).toBe(false);
      simulator.kill('SIGTERM');
      expect((await simulator.exited).code).toBe(0);
    },
  );
});

import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inheritedFakedClock } from './faked-clock.js';
import { waitFor } from './telesync-process.js';

export const TELESYNC_BIN = resolve(import.meta.dirname, '../../bin/telesync.js');

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A `telesync` command running in the background, to talk to while it runs and then stop. */
export interface TelesyncProcess {
  readonly pid: number | undefined;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches `pattern`; rejects after `timeoutMs` or if the process ends first. */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<void>;
  kill(signal: NodeJS.Signals): void;
  /** How it ended (SIGKILLed after `timeoutMs` of the start options if it never does). */
  readonly exited: Promise<CommandResult>;
  /** Whether it has ended. */
  hasExited(): boolean;
}

/**
 * Starts the real `telesync` command as a child process, in an empty working directory (so no
 * developer's `.env` leaks in) and with only the environment given plus PATH/HOME, without waiting
 * for it to end. A faked clock the suite runs under is passed on (inheritedFakedClock).
 */
export function startTelesync(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  options: { timeoutMs?: number; cwd?: string } = {},
): TelesyncProcess {
  const child = spawn(process.execPath, [TELESYNC_BIN, ...args], {
    cwd: options.cwd ?? mkdtempSync(join(tmpdir(), 'telesync-cwd-')),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...inheritedFakedClock(),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let ended = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const exited = new Promise<CommandResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      ended = true;
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return {
    pid: child.pid,
    stdout: () => stdout,
    stderr: () => stderr,
    waitForStdout: (pattern, timeoutMs = 30_000) =>
      waitFor(() => pattern.test(stdout) || (ended ? 'ended' : false), {
        timeoutMs,
        what: `stdout to match ${String(pattern)}`,
      }).then((outcome) => {
        if (outcome === 'ended')
          throw new Error(`telesync ended before stdout matched ${String(pattern)}:\n${stderr}`);
      }),
    kill: (signal) => {
      if (!ended) child.kill(signal);
    },
    exited,
    hasExited: () => ended,
  };
}

/** Runs `telesync` as startTelesync does and waits for it to end. */
export function runTelesync(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  options: { timeoutMs?: number; cwd?: string } = {},
): Promise<CommandResult> {
  return startTelesync(args, env, options).exited;
}

import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TELESYNC_BIN, type CommandResult } from './run-telesync.js';

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
 * Starts the real `telesync` command as a child process, like runTelesync (empty working
 * directory, only the environment given plus PATH/HOME), without waiting for it to end.
 */
export function startTelesync(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  options: { timeoutMs?: number } = {},
): TelesyncProcess {
  const child = spawn(process.execPath, [TELESYNC_BIN, ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'telesync-cwd-')),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
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

/**
 * Polls `probe` every `intervalMs` until it returns something other than false/undefined, and
 * returns that; rejects after `timeoutMs` with `what` and the last value seen.
 */
export async function waitFor<T>(
  probe: () => T | false | undefined | Promise<T | false | undefined>,
  options: { timeoutMs?: number; intervalMs?: number; what: string },
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== false && value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what}${lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})`}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}

/** A TCP port free on 127.0.0.1 right now (the kernel picks it; it is released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const TELESYNC_BIN = resolve(import.meta.dirname, '../../bin/telesync.js');

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `telesync` command as a child process, in an empty working directory (so no
 * developer's `.env` leaks in) and with only the environment given plus PATH/HOME.
 */
export function runTelesync(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  options: { timeoutMs?: number; cwd?: string } = {},
): Promise<CommandResult> {
  const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'telesync-cwd-'));
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [TELESYNC_BIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

import type { Env } from '../config/load-config.js';

/** What a command may touch of the outside world; tests pass their own. */
export interface CliIo {
  readonly env: Env;
  readonly cwd: string;
  /** Whether stdout is a terminal (progress bars, colours). */
  readonly isTty: boolean;
  /** stderr when it is a terminal: where progress bars draw. */
  readonly terminal?: NodeJS.WriteStream;
  out(text: string): void;
  err(text: string): void;
}

export function processIo(): CliIo {
  return {
    env: process.env,
    cwd: process.cwd(),
    isTty: process.stdout.isTTY === true,
    ...(process.stderr.isTTY ? { terminal: process.stderr } : {}),
    out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  };
}

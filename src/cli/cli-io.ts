import { createInterface } from 'node:readline/promises';
import type { Env } from '../config/config-sources.js';

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
  /**
   * Asks a yes/no question on the terminal and resolves true only on "y" or "yes". Absent when
   * there is no terminal to ask on (a script, a pipe): commands then need `--yes`.
   */
  readonly confirm?: (question: string) => Promise<boolean>;
}

export function processIo(): CliIo {
  return {
    env: process.env,
    cwd: process.cwd(),
    isTty: process.stdout.isTTY === true,
    ...(process.stderr.isTTY ? { terminal: process.stderr } : {}),
    out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    // On a terminal a progress bar may hold the line: clear it first, so a message never runs on
    // from "about 17s left" (the bar draws itself again below).
    err: (text) =>
      process.stderr.write(
        `${process.stderr.isTTY ? '\r\x1b[2K' : ''}${text.endsWith('\n') ? text : `${text}\n`}`,
      ),
    ...(process.stdin.isTTY && process.stderr.isTTY ? { confirm: askOnTerminal } : {}),
  };
}

/**
 * A reader that closed its end of our stdout (`telesync status | head -1`) has what it wanted:
 * the command ends at once, quietly and successfully, like other Unix tools, instead of dying on
 * EPIPE with a stack.
 */
export function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

async function askOnTerminal(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`${question} [y/N] `);
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}

/** The most of PostgreSQL's start-up output kept, and of one line: it is read only on failure. */
const KEPT_LINES = 20;
const KEPT_LINE_LENGTH = 500;

/**
 * Keeps the last lines PostgreSQL wrote while PGlite started it, so that a failed start can say
 * PostgreSQL's own reason: PGlite's error is only "PGlite failed to initialize properly".
 */
export class PostgresStartOutput {
  readonly #lines: string[] = [];

  add(line: string): void {
    this.#lines.push(line.slice(0, KEPT_LINE_LENGTH));
    if (this.#lines.length > KEPT_LINES) this.#lines.shift();
  }

  /** PostgreSQL's reason for refusing to start, with its detail, or undefined if it gave none. */
  reason(): string | undefined {
    return postgresStartFailure(this.#lines);
  }
}

/**
 * The last FATAL or PANIC message among PostgreSQL's log lines (`2026-11-29 12:48:23.101 UTC [42]
 * FATAL:  …`), followed by the DETAIL that comes after it, if any.
 */
export function postgresStartFailure(lines: readonly string[]): string | undefined {
  let fatal: string | undefined;
  let detail: string | undefined;
  for (const line of lines) {
    const fatalMatch = /\b(?:FATAL|PANIC):\s+(.*)$/.exec(line);
    if (fatalMatch !== null) {
      fatal = fatalMatch[1]!.trim();
      detail = undefined;
      continue;
    }
    const detailMatch = /\bDETAIL:\s+(.*)$/.exec(line);
    if (detailMatch !== null && fatal !== undefined && detail === undefined) {
      detail = detailMatch[1]!.trim().replace(/\.$/, '');
    }
  }
  if (fatal === undefined) return undefined;
  return detail === undefined ? fatal : `${fatal} (${detail})`;
}

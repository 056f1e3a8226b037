/** One problem with the configuration, named by the variable (or config-file key) to fix. */
export interface ConfigProblem {
  /** The environment variable or config-file path, e.g. `TELESYNC_MAX_RPS`. */
  key: string;
  /** What is wrong and what is accepted. */
  message: string;
}

/** The configuration cannot be used; lists every problem found, not just the first. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(
      problems.length === 1
        ? `Configuration problem: ${formatProblem(problems[0]!)}`
        : `Configuration problems:\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`,
    );
  }

  /** The first key named, for callers that handle a single setting. */
  get key(): string {
    return this.problems[0]?.key ?? '';
  }
}

function formatProblem(problem: ConfigProblem): string {
  return `${problem.key}: ${problem.message}`;
}

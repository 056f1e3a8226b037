/** Exit codes of the `telesync` command (public interface: scripts depend on them). */
export const EXIT = {
  /** Done. */
  OK: 0,
  /** A run failed (the service, the database); details were printed. */
  FAILED: 1,
  /** Bad usage or configuration; the message says what to fix. */
  USAGE: 2,
  /**
   * `stream start`: the answer was lost after the request was sent and the call's stream list does
   * not show whether the stream started; the message says how to check.
   */
  OUTCOME_UNKNOWN: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A command line that cannot be run as given: bad flag value, unknown stream, bad date. */
export class UsageError extends Error {
  override name = 'UsageError';
}

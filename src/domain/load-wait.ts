/**
 * Whether a run's wait for the database is a share worth acting on (docs/scaling.md, "Which limit
 * a run met": more load connections, or fewer accounts on this process): a second or more, and a
 * tenth or more of the run. The run's line, `status` and the status page say it only then.
 */
export function loadWaitWorthSaying(loadWaitMs: number, durationMs: number): boolean {
  return loadWaitMs >= 1_000 && loadWaitMs >= durationMs / 10;
}

/** A run's length in milliseconds from its ISO start and end, or undefined while it runs. */
export function runDurationMs(startedAt: string, finishedAt: string | null): number | undefined {
  if (finishedAt === null) return undefined;
  const durationMs = Date.parse(finishedAt) - Date.parse(startedAt);
  return Number.isFinite(durationMs) ? durationMs : undefined;
}

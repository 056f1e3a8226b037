import type { SyncResult } from '../sync/sync-runner.js';

const number = new Intl.NumberFormat('en-US');

/** One line per run for people: what it did, what it cost, how it ended. */
export function formatRunLine(result: SyncResult): string {
  const { stats, requests } = result;
  const head = `${result.stream.padEnd(12)} ${result.accountId}  ${result.status}`;
  if (result.status === 'skipped') return `${head}: ${result.error ?? ''}`;
  const parts = [
    `${number.format(stats.recordsFetched)} fetched`,
    `${number.format(stats.recordsUpserted)} stored (${number.format(stats.recordsChanged)} new or changed)`,
    `${number.format(stats.recordsRejected)} rejected`,
    `${number.format(requests.requests)} requests${requests.retries > 0 ? ` (${number.format(requests.retries)} retries)` : ''}`,
    `${(result.durationMs / 1000).toFixed(1)}s`,
  ];
  const tail = result.error !== undefined ? `\n  error: ${result.error}` : '';
  const gap =
    stats.gap !== undefined
      ? '\n  warning: calls older than the 90-day horizon were never synced (see sync_runs.gap_start/gap_end)'
      : '';
  return `${head}: ${parts.join(', ')}${gap}${tail}`;
}

/** The same for scripts (`--json`). */
export function runJson(result: SyncResult): Record<string, unknown> {
  return {
    account: result.accountId,
    stream: result.stream,
    status: result.status,
    run_id: result.runId ?? null,
    records_fetched: result.stats.recordsFetched,
    records_upserted: result.stats.recordsUpserted,
    records_changed: result.stats.recordsChanged,
    records_rejected: result.stats.recordsRejected,
    windows_planned: result.stats.windowsPlanned,
    windows_completed: result.stats.windowsCompleted,
    requests: result.requests.requests,
    retries: result.requests.retries,
    wait_ms: result.requests.waitMs,
    duration_ms: result.durationMs,
    error: result.error ?? null,
  };
}

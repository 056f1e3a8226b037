import { PAGE_SIZE, type RunPreview } from '../sync/run-preview.js';
import { plural } from './plural.js';
import type { SyncResult } from '../sync/run-stream.js';
import { loadWaitWorthSaying } from '../domain/load-wait.js';
import { formatIsoFixed, formatIsoMicros } from '../util/micros.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

const number = new Intl.NumberFormat('en-US');

/** One line per run for people: what it did, what it cost, how it ended. */
export function formatRunLine(result: SyncResult): string {
  const { stats, requests } = result;
  const head = `${result.stream.padEnd(12)} ${result.accountId}  ${result.status}`;
  // The reason starts with the status already in the head ("skipped: another run…").
  if (result.status === 'skipped')
    return `${head}: ${(result.error ?? '').replace(/^skipped: /, '')}`;
  const parts = [
    `${number.format(stats.recordsFetched)} fetched`,
    // "(0 new or changed)" would read as a finding on a run that failed or stopped part way.
    `${number.format(stats.recordsUpserted)} stored${result.status === 'succeeded' || stats.recordsChanged > 0 ? ` (${number.format(stats.recordsChanged)} new or changed)` : ''}`,
    `${number.format(stats.recordsRejected)} rejected`,
    `${plural(requests.requests, 'request')}${requests.retries > 0 ? ` (${number.format(requests.retries)} retries)` : ''}`,
    `${(result.durationMs / 1000).toFixed(1)}s`,
  ];
  if (loadWaitWorthSaying(stats.loadWaitMs, result.durationMs)) {
    parts.push(`${(stats.loadWaitMs / 1000).toFixed(1)}s of it waiting for the database`);
  }
  // A stop asked for (Ctrl-C, SIGTERM) is not a failure: said as it is, not labelled an error.
  const tail =
    result.error === undefined
      ? ''
      : result.status === 'stopped'
        ? `\n  ${result.error}`
        : `\n  error: ${result.error}`;
  const gap =
    stats.gap !== undefined
      ? `\n  warning: calls older than the ${TRUNK_HISTORY_DAYS}-day horizon were never synced (see sync_runs.gap_start/gap_end)`
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
    load_wait_ms: Math.round(result.stats.loadWaitMs),
    duration_ms: result.durationMs,
    error: result.error ?? null,
  };
}

/** `12.5s`, `3m 20s`: the time `requests` take at `maxRps`. */
function durationAtRate(requests: number, maxRps: number): string {
  const seconds = requests / maxRps;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m ${Math.round(seconds - minutes * 60)}s`;
}

/** The plan of one run for people (`--dry-run`): its windows, then what it costs. */
export function formatPreview(preview: RunPreview, maxRps: number): string {
  const head = `${preview.stream.padEnd(12)} ${preview.accountId}  dry run (${preview.mode})`;
  const lines: string[] = [];
  if (preview.stream === 'trunk_calls') {
    lines.push(
      preview.range === undefined
        ? `${head}: nothing to read`
        : `${head}: ${plural(preview.windows.length, 'window')}, ${formatIsoMicros(preview.range.start)} to ${formatIsoMicros(preview.range.end)}`,
    );
    for (const window of preview.windows) {
      const what =
        window.action === 'probe'
          ? 'count (read before)'
          : window.action === 'skip'
            ? 'skip (read by this backfill already)'
            : `read (${window.why ?? 'new'})`;
      const known =
        window.knownCount === null
          ? 'count unknown'
          : `${number.format(window.knownCount)} known from the ledger`;
      const cost =
        window.requests === null ? 'requests unknown' : plural(window.requests, 'request');
      lines.push(
        `  ${formatIsoMicros(window.start)} to ${formatIsoMicros(window.end)}  ${what}, ${known}, ${cost}`,
      );
    }
  } else if (preview.lookupsDue !== null) {
    lines.push(`${head}: ${plural(preview.lookupsDue, 'lookup')} pending in the queue`);
  } else {
    lines.push(`${head}: a full snapshot; its size is known only to the service`);
  }
  lines.push(`  requests: ${formatPreviewRequests(preview, maxRps)}`);
  return lines.join('\n');
}

/** What a previewed run costs in requests, saying what only the service can tell as such. */
function formatPreviewRequests(preview: RunPreview, maxRps: number): string {
  const known = number.format(preview.requestsKnown);
  const atRate = `at ${maxRps} requests/s (the rate set for the account)`;
  if (preview.unknownParts === 0)
    return `${known}; ${atRate}: ${durationAtRate(preview.requestsKnown, maxRps)}`;
  if (preview.stream !== 'trunk_calls' && preview.lookupsDue === null)
    return `1 per page of ${PAGE_SIZE} records; how many pages is known only once read`;
  const rest =
    preview.stream === 'trunk_calls'
      ? `1 per page of ${PAGE_SIZE} in ${plural(preview.unknownParts, 'window')} never counted`
      : 'one per sender pack the new messages reference';
  return (
    `at least ${known}, plus ${rest}; ` +
    `${atRate}: at least ${durationAtRate(preview.requestsKnown, maxRps)}`
  );
}

/** The same for scripts (`--dry-run --json`): snake_case, timestamps with six fraction digits. */
export function previewJson(preview: RunPreview, maxRps: number): Record<string, unknown> {
  const known = preview.unknownParts === 0;
  return {
    dry_run: true,
    account: preview.accountId,
    stream: preview.stream,
    mode: preview.mode,
    from: preview.range ? formatIsoFixed(preview.range.start) : null,
    to: preview.range ? formatIsoFixed(preview.range.end) : null,
    windows: preview.windows.map((window) => ({
      start: formatIsoFixed(window.start),
      end: formatIsoFixed(window.end),
      action: window.action,
      reason: window.why ?? null,
      known_count: window.knownCount,
      requests: window.requests,
    })),
    lookups_due: preview.lookupsDue,
    requests: known ? preview.requestsKnown : null,
    requests_at_least: preview.requestsKnown,
    unknown_parts: preview.unknownParts,
    max_rps: maxRps,
    seconds_at_max_rps: known ? Math.round((preview.requestsKnown / maxRps) * 10) / 10 : null,
  };
}

import type { StreamName } from '../domain/streams.js';
import { parseEpochMicros } from '../util/micros.js';
import type { AccountJob } from './job-queue.js';

/** A job's data that is not a job telesync can run: the reason, for the queue's failed job. */
export interface MalformedJob {
  readonly malformed: string;
}

/** Longest account id or backfill id a job may carry. */
const MAX_ID_LENGTH = 200;

/**
 * A job's data as the queue holds it (anything: another version of telesync, a hand-made row)
 * to a job, or the reason it is none. The one place job data is trusted: a malformed job is
 * failed at once with this reason, and never reaches a run or sync_runs. `streams`: the names a
 * sync job may give (the registry's).
 */
export function parseAccountJob(
  data: unknown,
  streams: readonly StreamName[],
  groupId?: string | null,
): AccountJob | MalformedJob {
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { malformed: `job data is ${describe(data)}, not an object` };
  const record = data as Record<string, unknown>;
  const accountId = record['accountId'];
  if (!isId(accountId))
    return { malformed: `job has no account id (accountId: ${describe(accountId)})` };
  if (groupId != null && groupId !== accountId)
    return { malformed: `job of account ${accountId} is queued in the group of ${groupId}` };
  const kind = record['kind'];
  if (kind === 'sync') {
    const stream = record['stream'];
    const known = streams.find((name) => name === stream);
    if (known === undefined)
      return { malformed: `sync job of ${accountId} names an unknown stream: ${describe(stream)}` };
    return { kind, accountId, stream: known };
  }
  if (kind === 'verify') return { kind, accountId };
  if (kind === 'backfill-window') {
    const { start, end, backfillId } = record;
    const startMicros = typeof start === 'string' ? parseEpochMicros(start) : undefined;
    const endMicros = typeof end === 'string' ? parseEpochMicros(end) : undefined;
    if (startMicros === undefined || endMicros === undefined)
      return {
        malformed: `backfill job of ${accountId} has a bad window: start ${describe(start)}, end ${describe(end)}`,
      };
    if (startMicros >= endMicros)
      return {
        malformed: `backfill job of ${accountId} has an empty window: ${String(start)} to ${String(end)}`,
      };
    if (!isId(backfillId)) return { malformed: `backfill job of ${accountId} has no backfill id` };
    return {
      kind,
      accountId,
      start: start as string,
      end: end as string,
      backfillId,
    };
  }
  return { malformed: `job of ${accountId} is of an unknown kind: ${describe(kind)}` };
}

export function isMalformedJob(job: AccountJob | MalformedJob): job is MalformedJob {
  return 'malformed' in job;
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH;
}

/** A value for a message: short, and never a whole payload. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

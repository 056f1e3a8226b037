import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/connect.js';
import type { Tables } from '../db/schema.js';
import { describeError } from '../util/coerce-error.js';
import type { LatestRuns } from './health.js';

/**
 * The queries behind /healthz and /metrics: what the latest runs were, where the watermarks are,
 * whether the database answers at all.
 */

/** A stream's watermark, for the lag gauge. */
export interface WatermarkRow {
  readonly accountId: string;
  readonly stream: string;
  /** ISO text. */
  readonly watermark: string;
}

/**
 * The latest finished run and the latest success of every account × stream given ("latest" by
 * start). One small query per pair: each is a walk down sync_runs_recent_idx, whatever the
 * table's size.
 */
export async function findLatestRuns(
  db: Kysely<Tables>,
  accountIds: readonly string[],
  streams: readonly string[],
): Promise<LatestRuns[]> {
  const pairs = accountIds.flatMap((accountId) => streams.map((stream) => ({ accountId, stream })));
  return Promise.all(
    pairs.map(async ({ accountId, stream }): Promise<LatestRuns> => {
      const recent = db
        .selectFrom('sync_runs')
        .where('account_id', '=', accountId)
        .where('stream', '=', stream)
        .orderBy('started_at', 'desc')
        .limit(1);
      const [last, success] = await Promise.all([
        recent
          .select(['status', 'finished_at', 'error'])
          .where('status', '!=', 'running')
          .where('finished_at', 'is not', null)
          .executeTakeFirst(),
        recent
          .select('finished_at')
          .where('status', '=', 'succeeded')
          .where('finished_at', 'is not', null)
          .executeTakeFirst(),
      ]);
      return {
        accountId,
        stream,
        last:
          last === undefined || last.finished_at === null
            ? undefined
            : { status: last.status, finishedAt: last.finished_at, error: last.error },
        lastSuccessAt: success?.finished_at ?? undefined,
      };
    }),
  );
}

/** Every watermark set for the given accounts. */
export async function findWatermarks(
  db: Kysely<Tables>,
  accountIds: readonly string[],
): Promise<WatermarkRow[]> {
  if (accountIds.length === 0) return [];
  const rows = await db
    .selectFrom('sync_state')
    .select(['account_id', 'stream', 'watermark'])
    .where('account_id', 'in', accountIds)
    .where('watermark', 'is not', null)
    .orderBy('account_id')
    .orderBy('stream')
    .execute();
  return rows.flatMap((row) =>
    row.watermark === null
      ? []
      : [{ accountId: row.account_id, stream: row.stream, watermark: row.watermark }],
  );
}

/** Whether the database answers `SELECT 1` within `timeoutMs`; the error says why not. */
export async function pingDatabase(
  database: Database,
  timeoutMs: number,
): Promise<{ ok: true } | { ok: false; error: string }> {
  try {
    await withTimeout(sql`SELECT 1`.execute(database.root), timeoutMs, 'SELECT 1');
    return { ok: true };
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
}

/**
 * `work`, or a rejection once `timeoutMs` has passed. The work itself goes on (a query cannot be
 * taken back); only the caller stops waiting, so a hung database cannot hang /healthz.
 */
export function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    timer.unref();
  });
  // A late rejection of the abandoned work must not become an unhandled rejection.
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

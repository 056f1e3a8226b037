import type { Kysely } from 'kysely';
import type { Tables } from '../schema.js';

/**
 * The queries behind /healthz and /metrics: what the latest runs were, where the watermarks are,
 * whether the database answers at all.
 */

/** The latest runs of one account × stream, as the database has them. */
export interface LatestRuns {
  readonly accountId: string;
  readonly stream: string;
  /** The latest finished run; undefined when none. */
  readonly last:
    | {
        readonly status: string;
        /** ISO text. */
        readonly finishedAt: string;
        readonly error: string | null;
      }
    | undefined;
  /** When the latest successful run finished (ISO text); undefined when none ever did. */
  readonly lastSuccessAt: string | undefined;
}

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

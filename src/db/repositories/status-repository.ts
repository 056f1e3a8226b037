import { sql, type Kysely, type NotNull } from 'kysely';
import type { LookupStatus, RunStatus, Tables } from '../schema.js';
import type { LookupQueue } from './lookup-queue-repository.js';

/** What `telesync status` shows of one account × stream. */
export interface StreamStatus {
  accountId: string;
  stream: string;
  watermark: string | null;
  lastRun: {
    id: number;
    command: string;
    status: RunStatus;
    startedAt: string;
    finishedAt: string | null;
    recordsFetched: number;
    recordsChanged: number;
    recordsRejected: number;
    requests: number;
    /** Milliseconds its reading waited for its rows to be written (sync_runs.load_wait_ms). */
    loadWaitMs: number;
    error: string | null;
  } | null;
  lastSuccessAt: string | null;
  /** Rows held: for snapshots, the ones still present at the service. */
  rows: number;
  /** Rows of a snapshot marked deleted. */
  deletedRows: number | null;
  rejected: number;
  /** Lookup queue entries by status (lookup streams only). */
  lookups: Partial<Record<LookupStatus, number>> | null;
  /** Trunk-call windows by ledger status (trunk_calls only). */
  windows: Partial<Record<string, number>> | null;
  /** The latest unrecoverable gap a run recorded (trunk_calls only). */
  gap: { start: string; end: string } | null;
}

/** Where one stream keeps what `status` counts (its definition says; see statusSource). */
export interface StatusSource {
  readonly stream: string;
  /** Its data table. */
  readonly table: string;
  /** A snapshot table: rows marked deleted are counted apart. */
  readonly snapshot: boolean;
  /** Its lookup queue, if it has one. */
  readonly queue: LookupQueue | null;
  /** It keeps a window ledger (sync_windows) and may record gaps. */
  readonly ledger: boolean;
}

/**
 * Accounts the database knows of (from runs, state and data). Those of trunk_calls are found by a
 * skip through its primary key, one index probe an account, so that `status` does not read every
 * call (docs/performance.md, "Short commands read no table whole").
 */
export async function findKnownAccounts(db: Kysely<Tables>): Promise<string[]> {
  const rows = await db
    .withRecursive('stored(account_id)', (start) =>
      start
        .selectFrom('trunk_calls')
        .select((eb) => eb.fn.min<string | null>('account_id').as('account_id'))
        .unionAll((next) =>
          next
            .selectFrom('stored')
            .select((eb) =>
              eb
                .selectFrom('trunk_calls')
                .select((inner) => inner.fn.min('trunk_calls.account_id').as('account_id'))
                .whereRef('trunk_calls.account_id', '>', 'stored.account_id')
                .as('account_id'),
            )
            .where('stored.account_id', 'is not', null),
        ),
    )
    .selectFrom('stored')
    .select('account_id')
    .where('account_id', 'is not', null)
    .$narrowType<{ account_id: NotNull }>()
    .union(db.selectFrom('sync_runs').select('account_id'))
    .union(db.selectFrom('sync_state').select('account_id'))
    .execute();
  return rows.map((row) => row.account_id).sort();
}

/** The status of one account × stream, read in a handful of indexed queries. */
export async function findStreamStatus(
  db: Kysely<Tables>,
  schema: string,
  accountId: string,
  spec: StatusSource,
): Promise<StreamStatus> {
  const { stream } = spec;
  const state = await db
    .selectFrom('sync_state')
    .select('watermark')
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .executeTakeFirst();
  const lastRun = await db
    .selectFrom('sync_runs')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  const lastSuccess = await db
    .selectFrom('sync_runs')
    .select(sql<string | null>`max(finished_at)`.as('at'))
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .where('status', '=', 'succeeded')
    .executeTakeFirst();
  const table = sql.id(schema, spec.table);
  const counts = await sql<{ rows: number; deleted: number }>`
    SELECT count(*) FILTER (WHERE ${spec.snapshot ? sql`deleted_at IS NULL` : sql`true`}) AS rows,
           count(*) FILTER (WHERE ${spec.snapshot ? sql`deleted_at IS NOT NULL` : sql`false`}) AS deleted
      FROM ${table} WHERE account_id = ${accountId}
  `.execute(db);
  const rejected = await db
    .selectFrom('rejected_records')
    .select(sql<number>`count(*)`.as('n'))
    .where('account_id', '=', accountId)
    .where('stream', '=', stream)
    .executeTakeFirst();

  let lookups: StreamStatus['lookups'] = null;
  if (spec.queue !== null) {
    const rows = await sql<{ status: LookupStatus; n: number }>`
      SELECT status, count(*) AS n FROM ${sql.id(schema, spec.queue.table)} WHERE account_id = ${accountId} GROUP BY status
    `.execute(db);
    lookups = Object.fromEntries(rows.rows.map((row) => [row.status, row.n]));
  }
  let windows: StreamStatus['windows'] = null;
  let gap: StreamStatus['gap'] = null;
  if (spec.ledger) {
    const rows = await db
      .selectFrom('sync_windows')
      .select(['status', sql<number>`count(*)`.as('n')])
      .where('account_id', '=', accountId)
      .where('stream', '=', stream)
      .groupBy('status')
      .execute();
    windows = Object.fromEntries(rows.map((row) => [row.status, row.n]));
    const gapRow = await db
      .selectFrom('sync_runs')
      .select(['gap_start', 'gap_end'])
      .where('account_id', '=', accountId)
      .where('stream', '=', stream)
      .where('gap_start', 'is not', null)
      .orderBy('started_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (gapRow?.gap_start && gapRow.gap_end) gap = { start: gapRow.gap_start, end: gapRow.gap_end };
  }

  return {
    accountId,
    stream,
    watermark: state?.watermark ?? null,
    lastRun:
      lastRun === undefined
        ? null
        : {
            id: lastRun.id,
            command: lastRun.command,
            status: lastRun.status,
            startedAt: lastRun.started_at,
            finishedAt: lastRun.finished_at,
            recordsFetched: lastRun.records_fetched,
            recordsChanged: lastRun.records_changed,
            recordsRejected: lastRun.records_rejected,
            requests: lastRun.requests,
            loadWaitMs: lastRun.load_wait_ms,
            error: lastRun.error,
          },
    lastSuccessAt: lastSuccess?.at ?? null,
    rows: counts.rows[0]?.rows ?? 0,
    deletedRows: spec.snapshot ? (counts.rows[0]?.deleted ?? 0) : null,
    rejected: rejected?.n ?? 0,
    lookups,
    windows,
    gap,
  };
}

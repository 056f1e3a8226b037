import { sql, type Kysely } from 'kysely';

/** Jobs of one account in one state, as pg-boss keeps them (its `job` table, the account's group). */
export interface JobStateCount {
  readonly account: string;
  readonly state: string;
  readonly count: number;
}

/**
 * How many jobs each of `accounts` holds in each state in `queue`, read from pg-boss's tables in
 * `jobSchema` (pg-boss counts by queue, not by group). Empty when the schema is not installed.
 */
export async function findJobStateCounts(
  root: Kysely<unknown>,
  jobSchema: string,
  queue: string,
  accounts: readonly string[],
): Promise<JobStateCount[]> {
  if (accounts.length === 0 || !(await tableExists(root, jobSchema, 'job'))) return [];
  const result = await sql<JobStateCount>`
    SELECT group_id AS account, state::text AS state, count(*)::int AS count
    FROM ${sql.id(jobSchema, 'job')}
    WHERE name = ${queue} AND group_id = ANY(${[...accounts]}::text[])
    GROUP BY group_id, state`.execute(root);
  return result.rows;
}

/**
 * Whether a job of `account` in `queue` other than `exceptId` is due and waiting with a priority
 * above `priority`: it would go before a job of that priority put back now.
 */
export async function hasWaitingJobAbove(
  root: Kysely<unknown>,
  jobSchema: string,
  queue: string,
  account: string,
  priority: number,
  exceptId: string,
): Promise<boolean> {
  const result = await sql<{ waiting: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM ${sql.id(jobSchema, 'job')}
      WHERE name = ${queue} AND group_id = ${account} AND id <> ${exceptId}::uuid
        AND state IN ('created', 'retry') AND start_after <= now() AND priority > ${priority}
    ) AS waiting`.execute(root);
  return result.rows[0]?.waiting === true;
}

/** Jobs of one account in one state, by stream (backfill jobs count as trunk_calls). */
export interface StreamJobCount extends JobStateCount {
  readonly stream: string;
}

/** As findJobStateCounts, split by the stream each job is for. */
export async function findStreamJobCounts(
  root: Kysely<unknown>,
  jobSchema: string,
  queue: string,
  accounts: readonly string[],
): Promise<StreamJobCount[]> {
  if (accounts.length === 0 || !(await tableExists(root, jobSchema, 'job'))) return [];
  const result = await sql<StreamJobCount>`
    SELECT group_id AS account, coalesce(data->>'stream', 'trunk_calls') AS stream,
      state::text AS state, count(*)::int AS count
    FROM ${sql.id(jobSchema, 'job')}
    WHERE name = ${queue} AND group_id = ANY(${[...accounts]}::text[])
    GROUP BY 1, 2, 3`.execute(root);
  return result.rows;
}

/** The version of pg-boss's schema in `jobSchema`; undefined when none is installed. */
export async function findJobSchemaVersion(
  root: Kysely<unknown>,
  jobSchema: string,
): Promise<number | undefined> {
  if (!(await tableExists(root, jobSchema, 'version'))) return undefined;
  const result = await sql<{ version: number }>`
    SELECT version::int AS version FROM ${sql.id(jobSchema, 'version')}`.execute(root);
  return result.rows[0]?.version;
}

/**
 * The data of the jobs not yet done in a schema of pg-boss 10, where each account had a queue of
 * its own (`telesync-account-…`), oldest first.
 */
export async function findLegacyPendingJobs(
  root: Kysely<unknown>,
  jobSchema: string,
): Promise<unknown[]> {
  if (!(await tableExists(root, jobSchema, 'job'))) return [];
  const result = await sql<{ data: unknown }>`
    SELECT data FROM ${sql.id(jobSchema, 'job')}
    WHERE name LIKE 'telesync-account-%' AND state::text IN ('created', 'retry', 'active')
    ORDER BY created_on, id`.execute(root);
  return result.rows.map((row) => row.data);
}

/** Drops pg-boss's schema with everything in it. */
export async function dropJobSchema(root: Kysely<unknown>, jobSchema: string): Promise<void> {
  await sql`DROP SCHEMA IF EXISTS ${sql.id(jobSchema)} CASCADE`.execute(root);
}

/** Whether `schema.table` exists (the job schema is installed by `telesync migrate` on PostgreSQL only). */
async function tableExists(root: Kysely<unknown>, schema: string, table: string): Promise<boolean> {
  const found = await sql<{ found: string | null }>`
    SELECT to_regclass(${`${schema}.${table}`}) AS found`.execute(root);
  return found.rows[0]?.found != null;
}

/** A worker as it last reported itself. */
export interface WorkerRow {
  readonly worker_id: string;
  readonly host: string;
  readonly pid: number;
  readonly concurrency: number;
  readonly in_hand: number;
  /** ISO text. */
  readonly started_at: string;
  readonly heartbeat_at: string;
}

/** The table where workers report themselves, beside pg-boss's (created by `telesync migrate`). */
export async function createWorkersTable(root: Kysely<unknown>, jobSchema: string): Promise<void> {
  await sql`
    CREATE TABLE IF NOT EXISTS ${sql.id(jobSchema, 'telesync_workers')} (
      worker_id text PRIMARY KEY,
      host text NOT NULL,
      pid integer NOT NULL,
      concurrency integer NOT NULL,
      in_hand integer NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      heartbeat_at timestamptz NOT NULL DEFAULT now(),
      queues text[] NOT NULL DEFAULT '{}'
    )`.execute(root);
  // Tables made before workers reported their queues (rows of such workers keep '{}': any queue).
  // Checked first: ALTER TABLE locks the table, which every worker's heartbeat writes, even when
  // there is nothing to add.
  const { rows } = await sql<{ missing: boolean }>`
    SELECT NOT EXISTS (
      SELECT 1 FROM information_schema.columns
      WHERE table_schema = ${jobSchema} AND table_name = 'telesync_workers'
        AND column_name = 'queues') AS missing`.execute(root);
  if (rows[0]?.missing === true) {
    await sql`
      ALTER TABLE ${sql.id(jobSchema, 'telesync_workers')}
        ADD COLUMN IF NOT EXISTS queues text[] NOT NULL DEFAULT '{}'`.execute(root);
  }
}

/** A worker's heartbeat: its row, and the accounts it serves (the `queues` column, by its old name). */
export interface WorkerHeartbeat extends Pick<
  WorkerRow,
  'worker_id' | 'host' | 'pid' | 'concurrency' | 'in_hand'
> {
  readonly queues: readonly string[];
}

/**
 * Records a worker's heartbeat (and creates its row on the first). A worker's accounts are its
 * configuration, the same for its whole life (its id is new each start): written with the row,
 * not rewritten by every heartbeat (a thousand accounts' names are kilobytes).
 */
export async function upsertWorkerHeartbeat(
  root: Kysely<unknown>,
  jobSchema: string,
  worker: WorkerHeartbeat,
): Promise<void> {
  await sql`
    INSERT INTO ${sql.id(jobSchema, 'telesync_workers')}
      (worker_id, host, pid, concurrency, in_hand, queues)
    VALUES (${worker.worker_id}, ${worker.host}, ${worker.pid}, ${worker.concurrency},
      ${worker.in_hand}, ${[...worker.queues]}::text[])
    ON CONFLICT (worker_id) DO UPDATE
      SET in_hand = excluded.in_hand, heartbeat_at = now()`.execute(root);
}

/** Removes a worker that stopped; rows of killed workers are removed after a day. */
export async function deleteWorker(
  root: Kysely<unknown>,
  jobSchema: string,
  workerId: string,
): Promise<void> {
  await sql`
    DELETE FROM ${sql.id(jobSchema, 'telesync_workers')}
    WHERE worker_id = ${workerId} OR heartbeat_at < now() - interval '1 day'`.execute(root);
}

/** Every worker that reported in the last `withinSeconds`, newest heartbeat first. */
export async function findLiveWorkers(
  root: Kysely<unknown>,
  jobSchema: string,
  withinSeconds: number,
): Promise<WorkerRow[]> {
  if (!(await tableExists(root, jobSchema, 'telesync_workers'))) return [];
  const result = await sql<WorkerRow>`
    SELECT worker_id, host, pid, concurrency, in_hand,
      to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started_at,
      to_char(heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS heartbeat_at
    FROM ${sql.id(jobSchema, 'telesync_workers')}
    WHERE heartbeat_at > now() - make_interval(secs => ${withinSeconds})
    ORDER BY heartbeat_at DESC`.execute(root);
  return result.rows;
}

/**
 * How many of `accounts` have work in `queue` (a job due now, or active: a retry still in its backoff does not
 * count, so an account whose credentials fail takes no worker's share), and how many workers that
 * could take that work reported in the last `withinSeconds` (those that serve one of those
 * accounts; a worker that reported none, from before workers did, counts as serving any):
 * what a worker's fair share of the accounts is made of. Workers configured with different
 * accounts thus share only what they have in common: a worker whose accounts no other serves
 * takes them all. One statement, asked about once a second by every worker: the worker installed
 * the job schema and created its workers table before it asks (a failure falls back to its
 * concurrency).
 */
export async function findWorkToShare(
  root: Kysely<unknown>,
  jobSchema: string,
  queue: string,
  accounts: readonly string[],
  withinSeconds: number,
): Promise<{ accountsWithWork: number; liveWorkers: number }> {
  if (accounts.length === 0) return { accountsWithWork: 0, liveWorkers: 0 };
  const result = await sql<{ accounts_with_work: number; live_workers: number }>`
    WITH with_work AS (
      SELECT DISTINCT group_id AS name FROM ${sql.id(jobSchema, 'job')}
      WHERE name = ${queue} AND group_id = ANY(${[...accounts]}::text[])
        AND (state = 'active' OR (state IN ('created', 'retry') AND start_after <= now())))
    SELECT
      (SELECT count(*)::int FROM with_work) AS accounts_with_work,
      (SELECT count(*)::int FROM ${sql.id(jobSchema, 'telesync_workers')}
        WHERE heartbeat_at > now() - make_interval(secs => ${withinSeconds})
          AND (queues = '{}' OR queues && ARRAY(SELECT name FROM with_work)))
        AS live_workers`.execute(root);
  const row = result.rows[0];
  return { accountsWithWork: row?.accounts_with_work ?? 0, liveWorkers: row?.live_workers ?? 0 };
}

import { sql, type Kysely } from 'kysely';

/** Jobs of one queue in one state, as pg-boss keeps them (its `job` table). */
export interface JobStateCount {
  readonly queue: string;
  readonly state: string;
  readonly count: number;
}

/**
 * How many jobs each of `queues` holds in each state, read from pg-boss's tables in `jobSchema`
 * (pg-boss 10 has no call that counts failed jobs). Empty when the schema is not installed.
 */
export async function findJobStateCounts(
  root: Kysely<unknown>,
  jobSchema: string,
  queues: readonly string[],
): Promise<JobStateCount[]> {
  if (queues.length === 0 || !(await tableExists(root, jobSchema, 'job'))) return [];
  const result = await sql<{ queue: string; state: string; count: number }>`
    SELECT name AS queue, state::text AS state, count(*)::int AS count
    FROM ${sql.id(jobSchema, 'job')}
    WHERE name IN (${sql.join(queues)})
    GROUP BY name, state`.execute(root);
  return result.rows;
}

/** Jobs of one account's queue in one state, by stream (backfill windows count as trunk_calls). */
export interface StreamJobCount extends JobStateCount {
  readonly stream: string;
}

/** As findJobStateCounts, split by the stream each job is for. */
export async function findStreamJobCounts(
  root: Kysely<unknown>,
  jobSchema: string,
  queues: readonly string[],
): Promise<StreamJobCount[]> {
  if (queues.length === 0 || !(await tableExists(root, jobSchema, 'job'))) return [];
  const result = await sql<StreamJobCount>`
    SELECT name AS queue, coalesce(data->>'stream', 'trunk_calls') AS stream,
      state::text AS state, count(*)::int AS count
    FROM ${sql.id(jobSchema, 'job')}
    WHERE name IN (${sql.join(queues)})
    GROUP BY 1, 2, 3`.execute(root);
  return result.rows;
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

/** A worker's heartbeat: its row, and the queues (accounts) it takes jobs from. */
export interface WorkerHeartbeat extends Pick<
  WorkerRow,
  'worker_id' | 'host' | 'pid' | 'concurrency' | 'in_hand'
> {
  readonly queues: readonly string[];
}

/**
 * Records a worker's heartbeat (and creates its row on the first). A worker's queues are its
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
 * How many of `queues` have work (a job due now, or active: a retry still in its backoff does not
 * count, so an account whose credentials fail takes no worker's share), and how many workers that
 * could take that work reported in the last `withinSeconds` (those that take jobs from one of
 * those queues; a worker that reported no queues, from before workers did, counts as taking any):
 * what a worker's fair share of the accounts is made of. Workers configured with different
 * accounts thus share only what they have in common: a worker whose accounts no other serves
 * takes them all. One statement, asked about once a second by every worker: the worker installed
 * the job schema and created its workers table before it asks (a failure falls back to its
 * concurrency).
 */
export async function findWorkToShare(
  root: Kysely<unknown>,
  jobSchema: string,
  queues: readonly string[],
  withinSeconds: number,
): Promise<{ accountsWithWork: number; liveWorkers: number }> {
  if (queues.length === 0) return { accountsWithWork: 0, liveWorkers: 0 };
  const result = await sql<{ accounts_with_work: number; live_workers: number }>`
    WITH with_work AS (
      SELECT DISTINCT name FROM ${sql.id(jobSchema, 'job')}
      WHERE name IN (${sql.join(queues)})
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

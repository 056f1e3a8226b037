import type { Kysely } from 'kysely';
import {
  PreparedRows,
  rowKey,
  upsertPreparedRows,
  type LoadRow,
  type LoadStrategy,
} from '../db/data-loader.js';
import {
  quarantineRecords,
  type Quarantined,
} from '../db/repositories/rejected-records-repository.js';
import type { Tables } from '../db/schema.js';
import type { DataTableSpec } from '../db/table-specs.js';
import { coerceError } from '../util/coerce-error.js';
import { formatIsoMicros } from '../util/micros.js';
import type { RunContext } from './run-context.js';

/** Extra statements that must commit together with a batch (ledger, watermark, queue state). */
export type CommitHook = (trx: Kysely<Tables>) => Promise<void>;

/**
 * Transactions of one loader in flight at once, each on its own connection. PostgreSQL runs one
 * backend per connection on one core: with one lane the database side of a backfill is one core
 * at most, however idle the other is. Two lanes use both cores of the machines we run on.
 */
export const LOAD_LANES = 2;

/** One lane: a buffer and a chain of transactions, one after the other. */
class Lane {
  rows: PreparedRows;
  rejects: Quarantined[] = [];
  queue: Promise<void> = Promise.resolve();
  queuedRows = 0;

  constructor(
    readonly spec: DataTableSpec,
    readonly strategy: LoadStrategy,
  ) {
    this.rows = new PreparedRows(spec, strategy);
  }
}

/**
 * Buffers normalised rows and rejected records and writes them in batches, in the background: the
 * caller keeps fetching while batches commit. Rows are buffered prepared for the loader (see
 * PreparedRows), so the row objects themselves are garbage as soon as `add` returns. Rows are
 * spread over lanes by a hash of their key, so the same key always goes to the same lane and two
 * lanes' transactions never touch the same row.
 *
 * `queueCommit` closes a unit of work (a window): once every lane's batches of that unit have
 * committed, lane 0's last rows and the hook (ledger, watermark) are written in one transaction,
 * so a window is never marked complete before all its rows are stored.
 *
 * Memory stays bounded: `add` waits while more than two batches per lane are buffered or queued.
 */
export class BatchLoader {
  readonly #lanes: Lane[];
  #failure: unknown;
  readonly #batchSize: number;
  readonly #maxPendingRows: number;

  constructor(
    private readonly context: RunContext,
    private readonly spec: DataTableSpec,
  ) {
    this.#lanes = Array.from({ length: LOAD_LANES }, () => new Lane(spec, context.loadStrategy));
    this.#batchSize = context.settings.batchSize;
    this.#maxPendingRows = this.#batchSize * 2 * LOAD_LANES;
  }

  /** Buffers rows and rejects; starts a lane's batch in the background when it has enough rows. */
  async add(rows: readonly LoadRow[], rejects: readonly Quarantined[]): Promise<void> {
    this.#throwIfFailed();
    for (const row of rows) {
      const key = rowKey(row, this.spec.key);
      this.#laneOf(key).rows.add(row, key);
    }
    // Rejects all go to lane 0: the quarantine is keyed by payload, and one lane never races itself.
    const first = this.#lanes[0]!;
    for (const reject of rejects) first.rejects.push(reject);
    for (const lane of this.#lanes) {
      // Never rejects: a failure is kept and thrown by the next call.
      if (lane.rows.length >= this.#batchSize) void this.#enqueue(lane, undefined);
    }
    while (this.#queuedRows() > this.#maxPendingRows) {
      await Promise.race(this.#lanes.map((lane) => lane.queue));
      this.#throwIfFailed();
    }
  }

  /**
   * Writes everything buffered so far, and `hook` with lane 0's last rows, after every batch
   * already queued, without waiting: the caller goes on fetching while they are written.
   * `onCommitted` runs once that transaction has committed. A failure is kept and thrown by the
   * next `add`, `queueCommit` or `drain`, so it is never lost.
   */
  queueCommit(hook: CommitHook, onCommitted: () => void): void {
    this.#throwIfFailed();
    const [first, ...others] = this.#lanes;
    // The other lanes' last batches of this unit go now; lane 0 writes its own last rows and the
    // hook once they have committed.
    const othersDone = Promise.all(others.map((lane) => this.#enqueue(lane, undefined)));
    void this.#enqueue(first!, hook, othersDone).then(() => {
      if (this.#failure === undefined) onCommitted();
    });
  }

  /** Waits for every queued batch; throws the first failure. */
  async drain(): Promise<void> {
    for (const lane of this.#lanes) {
      if (lane.rows.length > 0 || lane.rejects.length > 0) void this.#enqueue(lane, undefined);
    }
    await Promise.all(this.#lanes.map((lane) => lane.queue));
    this.#throwIfFailed();
  }

  #laneOf(key: string): Lane {
    return this.#lanes[keyHash(key) % this.#lanes.length]!;
  }

  #queuedRows(): number {
    let total = 0;
    for (const lane of this.#lanes) total += lane.queuedRows;
    return total;
  }

  #enqueue(lane: Lane, hook: CommitHook | undefined, after?: Promise<unknown>): Promise<void> {
    const rows = lane.rows;
    const rejects = lane.rejects;
    lane.rows = new PreparedRows(lane.spec, lane.strategy);
    lane.rejects = [];
    lane.queuedRows += rows.length;
    lane.queue = lane.queue.then(async () => {
      try {
        if (after !== undefined) await after;
        if (this.#failure === undefined) await this.#write(rows, rejects, hook);
      } catch (error) {
        this.#failure ??= error;
      } finally {
        lane.queuedRows -= rows.length;
      }
    });
    return lane.queue;
  }

  async #write(
    rows: PreparedRows,
    rejects: Quarantined[],
    hook: CommitHook | undefined,
  ): Promise<void> {
    if (rows.length === 0 && rejects.length === 0 && hook === undefined) return;
    const { database, stats, runId } = this.context;
    const syncedAt = formatIsoMicros(this.context.now());
    const result = await database.db.transaction().execute(async (trx) => {
      const upsert = await upsertPreparedRows(trx, database.schema, rows, syncedAt);
      await quarantineRecords(trx, database.schema, rejects, runId);
      if (hook !== undefined) await hook(trx);
      return upsert;
    });
    stats.recordsUpserted += rows.length;
    stats.recordsChanged += result.written;
    stats.recordsRejected += rejects.length;
  }

  #throwIfFailed(): void {
    if (this.#failure !== undefined) throw coerceError(this.#failure);
  }
}

/** FNV-1a of a row's key: the lane of a key never changes. */
function keyHash(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

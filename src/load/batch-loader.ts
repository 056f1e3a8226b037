import type { Kysely } from 'kysely';
import type { Database } from '../db/connect.js';
import {
  PreparedRows,
  rowKey,
  upsertPreparedRows,
  type LoadRow,
  type UpsertResult,
} from '../db/data-loader.js';
import { loadConnectionOf } from '../db/load-connection.js';
import { quarantineRecords } from '../db/repositories/rejected-records-repository.js';
import type { Tables } from '../db/schema.js';
import type { DataTableSpec } from '../db/table-specs.js';
import type { RejectedRecord } from '../normalize/normalize-result.js';
import { coerceError } from '../util/coerce-error.js';
import { formatIsoMicros, type EpochMicros } from '../util/micros.js';
import type { LoadGate } from './load-gate.js';

/**
 * What must commit together with a unit's last rows: the ledger, the watermark, queue outcomes,
 * deletion marks. `syncedAt` (ISO text) is the stamp the transaction's rows got (their synced_at,
 * and last_seen_at for a snapshot).
 */
export type CommitHook = (trx: Kysely<Tables>, syncedAt: string) => Promise<void>;

/**
 * The commit work of units that is the same statement for each (a window's ledger row): the units
 * of one transaction that share a batch are written by one call, with their items in order.
 */
export interface CommitBatch<T> {
  write(trx: Kysely<Tables>, items: readonly T[], syncedAt: string): Promise<void>;
}

/** A unit waiting to commit: a hook of its own, or an item of a batch. */
type WaitingUnit = { readonly onCommitted: () => void } & (
  { readonly hook: CommitHook } | { readonly batch: CommitBatch<unknown>; readonly item: unknown }
);

/** The counters of a run the loader keeps (RunStats has them). */
export interface LoadCounters {
  /** Rows handed to the upsert. */
  recordsUpserted: number;
  /** Rows inserted or rewritten because their content changed. */
  recordsChanged: number;
  /** Records quarantined in rejected_records. */
  recordsRejected: number;
  /**
   * Milliseconds the run's reading waited in `room` for its rows to be written: the database, not
   * the service, holding the run back.
   */
  loadWaitMs: number;
  /**
   * Batches tried as a plain COPY into the table (UpsertOptions.direct) that met a row stored
   * already, and were upserted instead. Each leaves a unique-violation ERROR in the server's log.
   */
  directConflicts: number;
}

/** What the caller knows of rows it hands to `BatchLoader.buffer`. */
export interface BufferOptions {
  /**
   * Some of the rows may be stored already (their unit was read before): their batch goes through
   * the staging table and upsert without first trying a plain COPY, which would fail on the first
   * stored row, cost the server that COPY and leave an ERROR in its log.
   */
  readonly mayBeStored?: boolean;
}

/** Where and for which run the loader writes (a RunContext is one). */
export interface LoadTarget {
  readonly database: Database;
  readonly runId: number;
  /** The clock, in epoch microseconds: stamps each transaction's rows. */
  now(): EpochMicros;
  readonly stats: LoadCounters;
  /**
   * Aborts when the run's lock is lost: no transaction begins or commits after that, since another
   * run may hold the lock by then.
   */
  readonly lockLost?: AbortSignal | undefined;
  /** The process's way to the database, shared by every loader (none: transactions go at once). */
  readonly loadGate?: LoadGate | undefined;
}

/** How a stream's rows are batched. */
export interface LoadBatching {
  /** Transactions in flight at once, each on its own connection (see loadLanesFor). */
  readonly lanes: number;
  /** A lane writes a batch once it holds this many rows; Infinity: only at the unit's commit. */
  readonly batchSize: number;
  /**
   * How long a committed unit may wait for the units after it, to share one transaction with them
   * (0 or absent: none waits). A trunk-call window of a quiet day is a few pages: alone, each would
   * be a transaction of a hundred rows, and with many accounts at once PostgreSQL spends its time
   * on transactions rather than rows. Units still commit in order, each with all its rows. With a
   * load gate they wait only while its every connection is busy, and go as soon as one is free
   * (LoadGate.whenConnectionFree): a wait beside a free connection only leaves the database idle.
   */
  readonly unitDelayMs?: number;
}

/**
 * Lanes of a run alone, at most. Every index of a data table leads with account_id, so one run's
 * lanes insert into the same leaf pages and contend for them: past two, more lanes cost the server
 * CPU a row rather than add rows (docs/performance.md). And an account read within the service's
 * budget brings at most 1,200 rows a second, which one lane writes many times over.
 */
const MAX_LANES_OF_A_RUN_ALONE = 2;

/**
 * Lanes of each run when `runsAtOnce` runs load side by side through a gate of `connections`: a run
 * alone uses two (PostgreSQL runs one backend per connection on one core, so with one lane the
 * database side of an unthrottled backfill is one core at most); runs side by side already keep
 * the connections busy, and more lanes would only split every transaction.
 */
export function loadLanesFor(runsAtOnce: number, connections: number): number {
  return runsAtOnce > 1 ? 1 : Math.min(connections, MAX_LANES_OF_A_RUN_ALONE);
}

/**
 * Every row and reject of a unit in the one transaction of its commit: for snapshots (the deletion
 * marks need every row of the snapshot) and lookup rounds (a round's rows with its queue outcomes).
 */
export const ONE_TRANSACTION_PER_UNIT: LoadBatching = {
  lanes: 1,
  batchSize: Number.POSITIVE_INFINITY,
};

/** The most batches a lane upserts before trying one directly again (Lane.directSkip). */
const MAX_DIRECT_BACKOFF = 64;

/** One lane: a buffer and a chain of transactions, one after the other. */
class Lane {
  rows: PreparedRows;
  rejects: RejectedRecord[] = [];
  queue: Promise<void> = Promise.resolve();
  queuedRows = 0;
  /**
   * Batches to upsert before trying one directly into the table again (UpsertOptions.direct), and
   * how many the next conflict skips: doubled by each conflict in a row, so a run re-reading rows
   * it holds already soon stops trying, and one that moves on to new rows soon tries again.
   */
  directSkip = 0;
  directBackoff = 1;
  /** A row of `rows` may be stored already (BufferOptions.mayBeStored). */
  rowsMayBeStored = false;

  constructor(readonly spec: DataTableSpec) {
    this.rows = new PreparedRows(spec);
  }
}

/**
 * The one loader of every stream: buffers normalised rows and rejected records and writes them in
 * batches, in the background, so the caller keeps fetching while batches commit. A unit of work (a
 * trunk-call window, a snapshot, a lookup round) ends with a commit: its last rows and rejects and
 * the unit's hook (ledger, watermark, queue outcomes…) in one transaction, after every earlier batch
 * of the unit has committed, so a unit is never recorded as done before all its rows are stored.
 * Counts upserted, changed and rejected records in the run's stats as transactions commit.
 *
 * Rows are buffered prepared for the loader (see PreparedRows), so the row objects themselves are
 * garbage as soon as `buffer` returns. Rows are spread over lanes by a hash of their key, so the same
 * key always goes to the same lane and two lanes' transactions never touch the same row. Memory
 * stays bounded: `room` waits while more than two batches per lane are buffered or queued.
 */
export class BatchLoader {
  readonly #lanes: Lane[];
  #failure: unknown;
  readonly #batchSize: number;
  readonly #maxPendingRows: number;
  readonly #unitDelayMs: number;
  /** Units committed by the caller, waiting (at most unitDelayMs) to go with the next ones. */
  #units: WaitingUnit[] = [];
  #unitTimer: NodeJS.Timeout | undefined;
  /** Withdraws the waiting units from the gate's free connections (LoadGate.whenConnectionFree). */
  #withdrawUnits: (() => void) | undefined;
  /** `room` calls waiting for the next batch of any lane to be written. */
  #waitingForWrite: (() => void)[] = [];

  constructor(
    private readonly target: LoadTarget,
    private readonly spec: DataTableSpec,
    batching: LoadBatching,
  ) {
    this.#lanes = Array.from({ length: batching.lanes }, () => new Lane(spec));
    this.#batchSize = batching.batchSize;
    this.#maxPendingRows = this.#batchSize * 2 * batching.lanes;
    this.#unitDelayMs = batching.unitDelayMs ?? 0;
  }

  /**
   * Buffers rows and rejects (the rows encoded for the loader at once: the row objects are not
   * kept), and starts a lane's batch in the background when it has enough rows. Throws a failure
   * of an earlier batch. A reader then awaits `room` before it fetches more; the two are apart so
   * that it holds nothing while it waits (see bufferRecords).
   */
  buffer(
    rows: readonly LoadRow[],
    rejects: readonly RejectedRecord[],
    options: BufferOptions = {},
  ): void {
    this.#throwIfFailed();
    const mayBeStored = options.mayBeStored === true;
    if (this.#lanes.length === 1) {
      // Every row goes to the one lane: hashing each key to pick it would be work for nothing, and
      // with many accounts side by side each loads on one lane.
      const only = this.#lanes[0]!;
      for (const row of rows) only.rows.add(row);
      if (mayBeStored && rows.length > 0) only.rowsMayBeStored = true;
    } else {
      for (const row of rows) {
        const key = rowKey(row, this.spec.key);
        const lane = this.#laneOf(key);
        lane.rows.add(row, key);
        if (mayBeStored) lane.rowsMayBeStored = true;
      }
    }
    // Rejects all go to lane 0: the quarantine is keyed by payload, and one lane never races itself.
    const first = this.#lanes[0]!;
    for (const reject of rejects) first.rejects.push(reject);
    if (this.#units.length > 0 && this.#bufferedRows() >= this.#batchSize) {
      // A full batch takes the waiting units with it.
      this.#commitUnits();
    } else {
      for (const lane of this.#lanes) {
        // Never rejects: a failure is kept and thrown by the next call.
        if (lane.rows.length >= this.#batchSize) void this.#enqueue(lane, undefined);
      }
    }
  }

  /**
   * Resolves once this loader has at most two batches per lane queued and the process's gate has
   * room: what a reader waits for before it fetches more. Throws a failure of an earlier batch.
   */
  async room(): Promise<void> {
    this.#throwIfFailed();
    let waitingSince: number | undefined;
    try {
      for (let written = this.#nextRoom(); written !== undefined; written = this.#nextRoom()) {
        waitingSince ??= performance.now();
        await written;
        this.#throwIfFailed();
      }
    } finally {
      if (waitingSince !== undefined) {
        this.target.stats.loadWaitMs += performance.now() - waitingSince;
      }
    }
  }

  /**
   * What makes room once written, when there is none: this loader's next batch, or the gate's.
   * The next batch of any lane, not the lanes' queues: a lane with nothing queued has a settled
   * queue, and waiting on it would return at once, again and again, while another lane's batches
   * hold the rows past the bound and the event loop never runs to write them.
   */
  #nextRoom(): Promise<unknown> | undefined {
    if (this.#queuedRows() > this.#maxPendingRows) {
      return new Promise<void>((resolve) => this.#waitingForWrite.push(resolve));
    }
    // Every loader of the process together: another's batch, written, makes the room.
    const gate = this.target.loadGate;
    return gate?.full === true ? gate.room() : undefined;
  }

  /**
   * Commits the unit in hand: everything buffered so far, and `hook` with lane 0's last rows, after
   * every batch already queued, without waiting: the caller goes on fetching while they are
   * written. With `unitDelayMs`, the unit may first wait that long for the next units (or a full
   * batch, or a free connection of the gate) to share its transaction. `onCommitted` runs once
   * that transaction has committed. A failure is kept and thrown by the next `buffer`, `room`,
   * `queueCommit`, `commit` or `drain`, so it is never lost.
   */
  queueCommit(hook: CommitHook, onCommitted: () => void = () => undefined): void {
    this.#queueUnit({ hook, onCommitted });
  }

  /**
   * queueCommit for a unit whose commit work is `item` of `batch`: the items of the units that
   * share a transaction, one after another, go to one `batch.write`.
   */
  queueBatched<T>(batch: CommitBatch<T>, item: T, onCommitted: () => void = () => undefined): void {
    this.#queueUnit({ batch, item, onCommitted });
  }

  #queueUnit(unit: WaitingUnit): void {
    this.#throwIfFailed();
    this.#units.push(unit);
    const gate = this.target.loadGate;
    if (
      this.#unitDelayMs <= 0 ||
      this.#bufferedRows() >= this.#batchSize ||
      gate?.hasFreeConnection === true
    ) {
      this.#commitUnits();
      return;
    }
    if (this.#unitTimer !== undefined) return;
    this.#unitTimer = setTimeout(() => this.#commitUnits(), this.#unitDelayMs);
    this.#unitTimer.unref();
    this.#withdrawUnits = gate?.whenConnectionFree(() => this.#commitUnits());
  }

  /** Writes the waiting units: every lane's buffer, then their hooks with lane 0's last rows. */
  #commitUnits(): void {
    clearTimeout(this.#unitTimer);
    this.#unitTimer = undefined;
    this.#withdrawUnits?.();
    this.#withdrawUnits = undefined;
    const units = this.#units;
    if (units.length === 0) return;
    this.#units = [];
    const [first, ...others] = this.#lanes;
    // The other lanes' last batches of these units go now; lane 0 writes its own last rows and the
    // hooks once they have committed.
    const othersDone = Promise.all(others.map((lane) => this.#enqueue(lane, undefined)));
    const hooks: CommitHook = async (trx, syncedAt) => {
      for (let index = 0; index < units.length;) {
        const unit = units[index]!;
        if ('hook' in unit) {
          await unit.hook(trx, syncedAt);
          index++;
          continue;
        }
        // The units after it of the same batch go with it.
        const items: unknown[] = [];
        for (; index < units.length; index++) {
          const next = units[index]!;
          if (!('batch' in next) || next.batch !== unit.batch) break;
          items.push(next.item);
        }
        await unit.batch.write(trx, items, syncedAt);
      }
    };
    void this.#enqueue(first!, hooks, othersDone).then(() => {
      if (this.#failure === undefined) for (const unit of units) unit.onCommitted();
    });
  }

  /** queueCommit, then waits until that transaction has committed; throws the first failure. */
  async commit(hook: CommitHook): Promise<void> {
    this.queueCommit(hook);
    await this.drain();
  }

  /** Writes what is still buffered and waits for every queued batch; throws the first failure. */
  async drain(): Promise<void> {
    this.#commitUnits();
    for (const lane of this.#lanes) {
      if (lane.rows.length > 0 || lane.rejects.length > 0) void this.#enqueue(lane, undefined);
    }
    await Promise.all(this.#lanes.map((lane) => lane.queue));
    this.#throwIfFailed();
  }

  #laneOf(key: string): Lane {
    return this.#lanes[keyHash(key) % this.#lanes.length]!;
  }

  #bufferedRows(): number {
    let total = 0;
    for (const lane of this.#lanes) total += lane.rows.length;
    return total;
  }

  #queuedRows(): number {
    let total = 0;
    for (const lane of this.#lanes) total += lane.queuedRows;
    return total;
  }

  #enqueue(lane: Lane, hook: CommitHook | undefined, after?: Promise<unknown>): Promise<void> {
    const rows = lane.rows;
    const rejects = lane.rejects;
    const mayBeStored = lane.rowsMayBeStored;
    lane.rows = new PreparedRows(lane.spec);
    lane.rejects = [];
    lane.rowsMayBeStored = false;
    lane.queuedRows += rows.length;
    this.target.loadGate?.enqueued(rows.length);
    lane.queue = lane.queue.then(async () => {
      try {
        if (after !== undefined) await after;
        if (this.#failure === undefined) await this.#write(lane, rows, mayBeStored, rejects, hook);
      } catch (error) {
        this.#failure ??= error;
      } finally {
        lane.queuedRows -= rows.length;
        this.target.loadGate?.dequeued(rows.length);
        const waiting = this.#waitingForWrite;
        this.#waitingForWrite = [];
        for (const wake of waiting) wake();
      }
    });
    return lane.queue;
  }

  async #write(
    lane: Lane,
    rows: PreparedRows,
    mayBeStored: boolean,
    rejects: RejectedRecord[],
    hook: CommitHook | undefined,
  ): Promise<void> {
    if (rows.length === 0 && rejects.length === 0 && hook === undefined) return;
    const { database, stats, runId, lockLost, loadGate } = this.target;
    // A batch that may hold stored rows neither tries the plain COPY nor counts as a skipped try.
    const direct = !mayBeStored && lane.directSkip === 0;
    if (!mayBeStored && !direct) lane.directSkip--;
    const transaction = async (): Promise<UpsertResult> => {
      // Stamped and checked when the transaction begins, after any wait for the gate.
      const syncedAt = formatIsoMicros(this.target.now());
      lockLost?.throwIfAborted();
      return database.db.transaction().execute(async (trx) => {
        // Rows go through the loading port, on the transaction's own connection.
        const load = await loadConnectionOf(trx);
        const upsert = await upsertPreparedRows(load, database.schema, rows, syncedAt, { direct });
        await quarantineRecords(trx, database.schema, rejects, runId);
        if (hook !== undefined) await hook(trx, syncedAt);
        // Checked again last: a lock lost while this transaction ran rolls it back.
        lockLost?.throwIfAborted();
        return upsert;
      });
    };
    const result = await (loadGate === undefined ? transaction() : loadGate.write(transaction));
    if (result.direct === 'conflict') {
      stats.directConflicts++;
      lane.directSkip = lane.directBackoff;
      lane.directBackoff = Math.min(lane.directBackoff * 2, MAX_DIRECT_BACKOFF);
    } else if (result.direct === 'written') {
      lane.directBackoff = 1;
    }
    stats.recordsUpserted += rows.length;
    stats.recordsChanged += result.written;
    stats.recordsRejected += rejects.length;
  }

  #throwIfFailed(): void {
    if (this.#failure !== undefined) throw coerceError(this.#failure);
  }
}

/** FNV-1a of a row's key: the lane of a key (this modulo the lanes) never changes. */
export function keyHash(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

import type { Kysely } from 'kysely';
import { upsertDataRows, type LoadRow } from '../db/data-loader.js';
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
 * Buffers normalised rows and rejected records and writes them in batches, each in its own
 * transaction, one after the other, in the background: the caller keeps fetching while a batch
 * commits. `commit` closes a unit of work (a window): its remaining rows and its bookkeeping go in
 * one transaction, so a window is never marked complete without its rows, nor the reverse.
 *
 * Memory stays bounded: `add` waits while more than `maxPendingRows` rows are buffered or queued.
 */
export class BatchLoader {
  #rows: LoadRow[] = [];
  #rejects: Quarantined[] = [];
  #queue: Promise<void> = Promise.resolve();
  #queuedRows = 0;
  #failure: unknown;
  readonly #maxPendingRows: number;

  constructor(
    private readonly context: RunContext,
    private readonly spec: DataTableSpec,
    private readonly batchSize: number = context.settings.batchSize,
  ) {
    this.#maxPendingRows = batchSize * 3;
  }

  /** Buffers rows and rejects; starts a batch in the background when enough rows are buffered. */
  async add(rows: readonly LoadRow[], rejects: readonly Quarantined[]): Promise<void> {
    this.#throwIfFailed();
    for (const row of rows) this.#rows.push(row);
    for (const reject of rejects) this.#rejects.push(reject);
    // Never rejects: a failure is kept and thrown by the next call.
    if (this.#rows.length >= this.batchSize) void this.#enqueue(undefined);
    while (this.#queuedRows > this.#maxPendingRows) {
      await this.#queue;
      this.#throwIfFailed();
    }
  }

  /**
   * Writes everything buffered so far together with `hook`, in one transaction, after the batches
   * already queued. Resolves when that transaction has committed.
   */
  async commit(hook: CommitHook): Promise<void> {
    this.#throwIfFailed();
    const done = this.#enqueue(hook);
    await done;
    this.#throwIfFailed();
  }

  /**
   * Like `commit`, without waiting: the caller goes on fetching while the batch and its hook are
   * written, in order, after everything queued before. `onCommitted` runs once they are. A failure
   * is kept and thrown by the next `add`, `commit` or `drain`, so it is never lost.
   */
  queueCommit(hook: CommitHook, onCommitted: () => void): void {
    this.#throwIfFailed();
    const done = this.#enqueue(hook);
    void done.then(() => {
      if (this.#failure === undefined) onCommitted();
    });
  }

  /** Waits for every queued batch; throws the first failure. */
  async drain(): Promise<void> {
    if (this.#rows.length > 0 || this.#rejects.length > 0) void this.#enqueue(undefined);
    await this.#queue;
    this.#throwIfFailed();
  }

  #enqueue(hook: CommitHook | undefined): Promise<void> {
    const rows = this.#rows;
    const rejects = this.#rejects;
    this.#rows = [];
    this.#rejects = [];
    this.#queuedRows += rows.length;
    this.#queue = this.#queue.then(async () => {
      try {
        if (this.#failure === undefined) await this.#write(rows, rejects, hook);
      } catch (error) {
        this.#failure ??= error;
      } finally {
        this.#queuedRows -= rows.length;
      }
    });
    return this.#queue;
  }

  async #write(
    rows: LoadRow[],
    rejects: Quarantined[],
    hook: CommitHook | undefined,
  ): Promise<void> {
    const { database, stats, runId, loadStrategy } = this.context;
    const syncedAt = formatIsoMicros(this.context.now());
    const result = await database.db.transaction().execute(async (trx) => {
      const upsert = await upsertDataRows(
        trx,
        database.schema,
        this.spec,
        rows,
        syncedAt,
        loadStrategy,
      );
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

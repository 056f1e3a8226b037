import { ConcurrencyGate } from '../util/concurrency-gate.js';

/**
 * Rows the loaders of one process may have queued together, per connection of its gate: four
 * batches each, enough that a connection always has its next transaction ready.
 */
const QUEUED_BATCHES_PER_CONNECTION = 4;

/**
 * The way of every loader of a process to the database: at most `connections` of their
 * transactions at once, first come first served, and a bound on the rows queued behind them.
 *
 * Why one for the whole process: PostgreSQL spends its time on how many sessions write at once,
 * not on how many transactions they write, whatever the batch size (docs/performance.md, "One load
 * gate per process"). So the runs of a process each keep their own loader (their own transactions,
 * lock checks and failures) but take turns on a few connections.
 */
export class LoadGate {
  readonly #slots: ConcurrencyGate;
  #queuedRows = 0;
  #waitingForRoom: (() => void)[] = [];
  /** Loaders' flushes of committed units waiting to share a transaction, longest waiting first. */
  readonly #waitingUnits = new Set<() => void>();

  constructor(
    /** Transactions at once, each on its own connection. */
    readonly connections: number,
    /**
     * Rows the loaders may have queued for writing, together: past it, a loader's `room` waits.
     * Every run has its own bound too; this one keeps the sum of many runs' in memory. A loader's
     * commit does not wait, so the queue may pass the bound by what each loader had buffered (a
     * batch per lane at most).
     */
    readonly maxQueuedRows: number,
  ) {
    this.#slots = new ConcurrencyGate(connections);
    if (!(maxQueuedRows >= 1)) {
      throw new RangeError(`a load gate's row bound is at least 1, not ${maxQueuedRows}`);
    }
  }

  /**
   * A gate of `connections` whose row bound is QUEUED_BATCHES_PER_CONNECTION batches of
   * `batchSize` per connection.
   */
  static forBatches(connections: number, batchSize: number): LoadGate {
    return new LoadGate(connections, connections * batchSize * QUEUED_BATCHES_PER_CONNECTION);
  }

  /**
   * Runs one transaction once fewer than `connections` others are running; the connection it
   * leaves free, if no other transaction takes it, goes to the units waiting longest.
   */
  write<T>(transaction: () => Promise<T>): Promise<T> {
    return this.#slots.run(transaction).finally(() => this.#offerFreeConnection());
  }

  /** A transaction given now would start at once. */
  get hasFreeConnection(): boolean {
    return this.#slots.hasRoom;
  }

  /**
   * Group commit: a loader's committed units wait to share one transaction only while every
   * connection is busy. `flush` (the loader's write of its waiting units) is called once a
   * connection is free with no transaction waiting for it, so the database never sits idle while
   * units wait, and a busy one gets larger transactions. Returns the way to withdraw `flush` (when
   * the units went otherwise: a full batch, a drain, the loader's own time limit).
   */
  whenConnectionFree(flush: () => void): () => void {
    this.#waitingUnits.add(flush);
    return () => this.#waitingUnits.delete(flush);
  }

  #offerFreeConnection(): void {
    if (!this.hasFreeConnection) return;
    // A Set iterates in insertion order: the first is the loader whose units have waited longest.
    const [flush] = this.#waitingUnits;
    if (flush === undefined) return;
    this.#waitingUnits.delete(flush);
    flush();
  }

  /** Rows queued for writing by every loader of the process. */
  get queuedRows(): number {
    return this.#queuedRows;
  }

  /** The loaders have more rows queued than `maxQueuedRows`. */
  get full(): boolean {
    return this.#queuedRows > this.maxQueuedRows;
  }

  /** `rows` more are queued for writing. */
  enqueued(rows: number): void {
    this.#queuedRows += rows;
  }

  /** `rows` queued earlier are written (or dropped after a failure). */
  dequeued(rows: number): void {
    this.#queuedRows -= rows;
    if (rows > 0 && !this.full) {
      const waiting = this.#waitingForRoom;
      this.#waitingForRoom = [];
      for (const wake of waiting) wake();
    }
  }

  /** Resolves once the queued rows are within the bound (at once when they are). */
  room(): Promise<void> {
    if (!this.full) return Promise.resolve();
    return new Promise((resolve) => this.#waitingForRoom.push(resolve));
  }
}

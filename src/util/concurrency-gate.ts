/**
 * At most `limit` pieces of work at once; the others wait their turn, first come first served.
 */
export class ConcurrencyGate {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`a gate's limit is a whole number of at least 1, not ${limit}`);
    }
  }

  /** Work given now would start at once: fewer than `limit` pieces are running. */
  get hasRoom(): boolean {
    return this.#running < this.limit;
  }

  /** Runs `work` once fewer than `limit` others are running; its outcome is `run`'s. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    try {
      return await work();
    } finally {
      // The slot passes straight to the next in line, so a newcomer cannot take it first.
      const next = this.#waiting.shift();
      if (next === undefined) this.#running--;
      else next();
    }
  }
}

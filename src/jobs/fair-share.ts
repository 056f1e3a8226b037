/**
 * How many accounts a worker should hold at once so that the live workers share them: the
 * accounts with work divided by the live workers, rounded up, at least one. Without it the first
 * workers to poll take every account up to their `--concurrency` (three workers of 24 with fifty
 * accounts held 24, 24 and 2), and a machine added for speed would sit nearly idle.
 *
 * A worker never gives back a job it holds: above its share it takes no new one until its jobs
 * end, and the other workers take what it leaves. The figures are read at most once per
 * `cacheMs`, so a worker taking many jobs in a row asks the database once.
 */
export class FairShare {
  #cached: { at: number; share: number } | undefined;

  constructor(
    private readonly read: () => Promise<{ accountsWithWork: number; liveWorkers: number }>,
    private readonly options: { readonly cacheMs: number; readonly now: () => number },
  ) {}

  /** The share now. */
  async current(): Promise<number> {
    const now = this.options.now();
    if (this.#cached !== undefined && now - this.#cached.at < this.options.cacheMs)
      return this.#cached.share;
    const { accountsWithWork, liveWorkers } = await this.read();
    const share = fairShareOf(accountsWithWork, liveWorkers);
    this.#cached = { at: now, share };
    return share;
  }
}

/** The accounts with work divided among the live workers, rounded up; at least one. */
export function fairShareOf(accountsWithWork: number, liveWorkers: number): number {
  return Math.max(1, Math.ceil(accountsWithWork / Math.max(1, liveWorkers)));
}

/**
 * One fault, said once: a dropped database takes every pooled connection with it, and each says so.
 * The first of a burst of like messages goes through; the rest within `windowMs` are counted and
 * the count rides on the next one that goes through.
 */
export class RepeatFilter {
  readonly #seen = new Map<string, { sinceMs: number; held: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether to say the message with this key now: undefined to hold it back, otherwise how many
   * like it were held back since it was last said.
   */
  pass(key: string): number | undefined {
    const nowMs = this.now();
    const seen = this.#seen.get(key);
    if (seen !== undefined && nowMs - seen.sinceMs < this.windowMs) {
      seen.held++;
      return undefined;
    }
    this.#seen.set(key, { sinceMs: nowMs, held: 0 });
    return seen?.held ?? 0;
  }
}

/** " (N more like it held back)" for a count from RepeatFilter.pass, empty for none. */
export function heldBackNote(held: number): string {
  return held > 0 ? ` (${held} more like it since)` : '';
}

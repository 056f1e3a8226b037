/**
 * How many of `count` runs to work on at once, at most `limit`, so that they go in waves of equal
 * width rather than full waves and a small last one.
 *
 * Runs of similar size started together finish together, so `limit` at once works through `count`
 * in ⌈count ÷ limit⌉ waves, and this width takes as many. What changes is the last: fifty accounts
 * twenty at once end with ten alone, each held to its own request budget, the writer half idle for
 * as long as a whole wave takes; seventeen at once (17, 17, 16) spread the same work evenly
 * (docs/scaling.md, "Even waves"). Runs of unequal size blur the waves; a width a little under the
 * limit then costs little, as the large runs decide the wall time.
 */
export function evenWaveWidth(count: number, limit: number): number {
  const atMost = Math.max(1, Math.floor(limit));
  if (count <= atMost) return Math.max(1, count);
  const waves = Math.ceil(count / atMost);
  return Math.ceil(count / waves);
}

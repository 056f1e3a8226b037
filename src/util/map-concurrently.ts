/**
 * Runs `work` over `items` with at most `limit` at once and returns the results in the order of
 * `items`. Meant for work that returns its failures as values (runStream): a throw rejects the
 * whole, after the work in hand ends, and no new item starts.
 */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await work(items[index]!, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane);
  const settled = await Promise.allSettled(lanes);
  const rejected = settled.find(
    (outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected',
  );
  if (rejected !== undefined) throw rejected.reason;
  return results;
}

import { mapConcurrently } from './map-concurrently.js';

/**
 * Runs `work` over `items` with at most `limit` at once. The first failure stops new work; the work
 * in hand finishes, then that failure is thrown.
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  await mapConcurrently(items, limit, work);
}

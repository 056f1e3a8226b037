/**
 * `read` made to share one call among the callers that ask while it is in flight, as the gauges of
 * one /metrics scrape do; a caller that asks after it settled starts a new call. A rejection is
 * shared the same way, and not kept.
 */
export function shareInFlight<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () =>
    (inFlight ??= read().finally(() => {
      inFlight = undefined;
    }));
}

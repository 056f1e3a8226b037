/**
 * Asked to stop (a shutdown, a lost lock, a lease that ended) before the work was done: not a
 * failure, and never shown as one. The one error that says "stopped", wherever the stop is noticed:
 * a request's turn in the limiter, a pause before a retry, an exchange cancelled, a listing
 * between pages.
 */
export class StoppedError extends Error {
  override name = 'StoppedError';
  constructor(message = 'stopped on request', options?: ErrorOptions) {
    super(message, options);
  }
}

/** Whether `error` is the stop (asked to stop), as opposed to a failure. */
export function isStopped(error: unknown): error is StoppedError {
  return error instanceof StoppedError;
}

/**
 * Throws the stop when `signal` was aborted: for work that checks between its steps. The signal's
 * reason is the cause, so the log can say what asked for the stop.
 */
export function throwIfStopped(signal: AbortSignal | undefined, message?: string): void {
  if (signal?.aborted === true) throw new StoppedError(message, { cause: signal.reason });
}

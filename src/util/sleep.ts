/**
 * Longest delay a Node timer takes: a longer one (or a non-finite one) fires after 1 ms instead, with
 * a warning, which turns a long wait into a busy loop.
 */
export const TIMER_MAX_MS = 2_147_483_647;

/** `ms` made safe for setTimeout, AbortSignal.timeout and the like: 0 to TIMER_MAX_MS. */
export function clampTimerMs(ms: number): number {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  return Math.min(ms, TIMER_MAX_MS);
}

/**
 * Resolves after `ms` milliseconds, or rejects with the signal's reason when it aborts first. A wait
 * longer than a timer can hold is made of several timers, so it never fires early.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    let remainingMs = Number.isNaN(ms) ? 0 : Math.max(0, ms);
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const arm = (): void => {
      const stepMs = Math.min(remainingMs, TIMER_MAX_MS);
      remainingMs -= stepMs;
      timer = setTimeout(() => {
        if (remainingMs > 0) {
          arm();
          return;
        }
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, stepMs);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}

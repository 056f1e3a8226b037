/**
 * How the simulator retries a status callback the receiver did not take (a non-2xx answer, a
 * network error, no answer in time): capped exponential backoff with jitter, a bounded number of
 * attempts. Pure: the random draw is passed in.
 */

export interface CallbackRetryPolicy {
  /** Attempts in all, the first included (1: never retried). */
  readonly attempts: number;
  /** Delay before the first retry, before jitter, milliseconds. */
  readonly baseDelayMs: number;
  /** Longest delay between two attempts, milliseconds. */
  readonly maxDelayMs: number;
  /** How long one attempt may take before it counts as failed, milliseconds. */
  readonly timeoutMs: number;
}

/**
 * Five attempts over about 15 seconds of delays (at most 65 s with every attempt timing out):
 * well inside the 10 minutes in which telesync accepts a callback's Timestamp, so a retried
 * delivery is never refused as stale.
 */
export const DEFAULT_CALLBACK_RETRY: CallbackRetryPolicy = {
  attempts: 5,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  timeoutMs: 10_000,
};

/** Why a policy cannot be used, as messages (empty when it can). */
export function checkCallbackRetryPolicy(policy: CallbackRetryPolicy): string[] {
  const problems: string[] = [];
  if (!Number.isSafeInteger(policy.attempts) || policy.attempts < 1 || policy.attempts > 20)
    problems.push(
      `callbackRetry.attempts must be a whole number from 1 to 20 (got ${policy.attempts})`,
    );
  for (const key of ['baseDelayMs', 'maxDelayMs', 'timeoutMs'] as const) {
    const value = policy[key];
    if (!Number.isFinite(value) || value < 0 || value > 3_600_000)
      problems.push(`callbackRetry.${key} must be milliseconds from 0 to 3600000 (got ${value})`);
  }
  if (policy.timeoutMs === 0) problems.push('callbackRetry.timeoutMs must be more than 0');
  return problems;
}

/**
 * The wait before retry number `retry` (1 for the first retry), milliseconds: the exponential
 * ceiling `baseDelayMs × 2^(retry−1)`, capped at `maxDelayMs`, of which the upper half is drawn
 * by `random` in [0, 1) ("equal jitter": never less than half the ceiling, so retries from many
 * streams spread out without ever coming back at once).
 */
export function planCallbackRetryDelayMs(
  retry: number,
  policy: CallbackRetryPolicy,
  random: number,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}

import { MICROS_PER_SECOND, type EpochMicros } from '../util/micros.js';

/**
 * Replay protection for signed callbacks. The V3 signature proves who sent a request, not when: a
 * captured request can be sent again verbatim and its signature still matches. Two rules close
 * that gap, with the event's own signed `Timestamp` as the clock of the request:
 *
 * - stale: an event older than the window (or further in the future than the window, a clock that
 *   cannot be trusted) is refused;
 * - seen before: a nonce accepted within the window is refused the second time.
 *
 * A nonce needs remembering only while its event is inside the window: after that the stale rule
 * refuses it anyway, so memory stays bounded by the traffic of one window.
 *
 * The verdict is a pure function of its inputs; `CallbackNonceLedger` keeps the nonces seen, with
 * the clock passed in. A nonce should be remembered only after the callback was stored, so that a
 * delivery telesync failed to store can be retried by the service with the same nonce.
 */

/** How far an event's time may be from now: 10 minutes, covering the service's retries. */
export const CALLBACK_REPLAY_WINDOW_SECONDS = 600;

export type CallbackReplayRefusal = 'stale' | 'future' | 'replayed';

export type CallbackReplayVerdict =
  | {
      readonly accept: true;
      /** Remember the nonce until then (the moment the event leaves the window). */
      readonly rememberUntil: EpochMicros;
    }
  | { readonly accept: false; readonly reason: CallbackReplayRefusal; readonly message: string };

export interface CallbackReplayInput {
  readonly nonce: string;
  /** The event's time, from its signed fields. */
  readonly eventTime: EpochMicros;
  readonly now: EpochMicros;
  /** When a previous acceptance of this nonce stops counting; undefined if never seen. */
  readonly seenUntil: EpochMicros | undefined;
  readonly windowSeconds?: number;
}

/** Decides whether a verified callback is fresh and new. Pure. */
export function judgeCallbackReplay(input: CallbackReplayInput): CallbackReplayVerdict {
  const windowSeconds = input.windowSeconds ?? CALLBACK_REPLAY_WINDOW_SECONDS;
  const window = windowSeconds * MICROS_PER_SECOND;
  const age = input.now - input.eventTime;
  if (age > window)
    return {
      accept: false,
      reason: 'stale',
      message: `the event is ${Math.floor(age / MICROS_PER_SECOND)} s old, more than the ${windowSeconds} s a callback is accepted for`,
    };
  if (-age > window)
    return {
      accept: false,
      reason: 'future',
      message: `the event is dated ${Math.floor(-age / MICROS_PER_SECOND)} s in the future, more than the ${windowSeconds} s allowed for clock differences`,
    };
  if (input.seenUntil !== undefined && input.seenUntil >= input.now)
    return {
      accept: false,
      reason: 'replayed',
      message: 'this nonce was already accepted: the request is a replay',
    };
  return { accept: true, rememberUntil: input.eventTime + window };
}

/**
 * The nonces accepted recently, for one process. Bounded: entries leave when their event leaves
 * the window, and beyond `maxEntries` the oldest go first (a flood cannot grow memory).
 */
export class CallbackNonceLedger {
  private readonly seen = new Map<string, EpochMicros>();

  constructor(private readonly options: { windowSeconds?: number; maxEntries?: number } = {}) {}

  /** The verdict for a callback, without remembering it. */
  check(nonce: string, eventTime: EpochMicros, now: EpochMicros): CallbackReplayVerdict {
    return judgeCallbackReplay({
      nonce,
      eventTime,
      now,
      seenUntil: this.seen.get(nonce),
      windowSeconds: this.options.windowSeconds,
    });
  }

  /** Records an accepted nonce (call once the callback is stored). */
  remember(nonce: string, until: EpochMicros, now: EpochMicros): void {
    this.prune(now);
    this.seen.delete(nonce);
    this.seen.set(nonce, until);
    const maxEntries = this.options.maxEntries ?? 100_000;
    while (this.seen.size > maxEntries) {
      const oldest = this.seen.keys().next().value;
      if (oldest === undefined) break;
      this.seen.delete(oldest);
    }
  }

  /** Nonces still remembered. */
  get size(): number {
    return this.seen.size;
  }

  private prune(now: EpochMicros): void {
    for (const [nonce, until] of this.seen) if (until < now) this.seen.delete(nonce);
  }
}

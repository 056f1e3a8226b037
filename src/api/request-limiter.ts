import { clampTimerMs } from '../util/sleep.js';

/**
 * Limits requests to the service: at most `maxConcurrent` in flight, and starts spaced so that no
 * window of `windowSeconds` holds more than `maxPerSecond × windowSeconds` of them (no second more
 * than `maxPerSecond`, by default). First come, first served.
 *
 * Why not bottleneck: its local datastore yields a macrotask (setTimeout 0) in each of its
 * serialised bookkeeping steps, which caps it near 430 jobs/s on our 2-core machines whatever its
 * settings (measured); an unthrottled backfill needs several times that. This one costs a few
 * microseconds a request and sleeps only when the spacing requires it.
 *
 * The guarantee. Each start is given a slot: the later of (the previous slot + spacing) and
 * (now − catch-up), and may start once its slot has come. Slots are at least `spacing` apart and a
 * start lags its slot by at most the catch-up, so the starts in any window of length W have slots in
 * a window of length W + catch-up. With N = maxPerSecond × windowSeconds and W = windowSeconds, and
 * spacing = (W + allowance) / N, a window W holds at most ceil((W + catch-up) / (W + allowance) × N)
 * ≤ N starts; what the catch-up leaves of the allowance absorbs the lag of arrivals behind starts
 * (see below). The allowance is the same whatever the window, so a service that counts over 5 s
 * (300 per 5 s) can be read at 99.0% of its rate where a one-second window gives 95.2%.
 *
 * The catch-up exists because timers are late: one asked for 3.4 ms fires after 4 or 5, and without
 * it every later slot would move back by that much (300/s would become 250/s). Below a millisecond
 * of spacing it also lets one wake-up start the several requests that came due meanwhile.
 */

/**
 * Starts are spaced so that a window's worth of them span this much more than the window. The service
 * counts arrivals, not starts, and an arrival can lag its start (a new connection, the network,
 * scheduling on either side): with exact 1000/N spacing, a late first request and a prompt N+1-th
 * fall in one second about half the time. The allowance absorbs that lag at a cost of 4.8% of the
 * rate over a one-second window, 1.0% over five seconds. While telesync's code is cold a request can
 * reach the socket up to 30 ms after its start, so 45 ms are left for arrivals (docs/performance.md,
 * "The limiter's allowance").
 */
const ARRIVAL_JITTER_ALLOWANCE_MS = 50;

/**
 * How late a start may be against its slot without moving later slots: timers fire on whole
 * milliseconds and a few late. It must stay below the allowance (here it takes 5 of the 50 ms, and
 * 45 remain for arrivals lagging their starts).
 */
const CATCH_UP_MS = 5;

export interface RequestLimiterOptions {
  maxPerSecond: number;
  /**
   * The window the service counts requests over, in seconds (default 1): at most
   * maxPerSecond × windowSeconds starts in any such window.
   */
  windowSeconds?: number;
  maxConcurrent: number;
  /** Monotonic milliseconds; performance.now unless a test pins it. */
  now?: () => number;
  /** Runs `run` after `ms`; setTimeout unless a test drives time itself. */
  setTimer?: (run: () => void, ms: number) => void;
}

/** Thrown to a queued request whose signal aborted before it started. */
export class LimiterAbortedError extends Error {
  override name = 'LimiterAbortedError';
}

interface Waiter {
  start: () => void;
  cancelled: boolean;
}

export class RequestLimiter {
  readonly spacingMs: number;
  readonly #catchUpMs: number;
  readonly #maxConcurrent: number;
  readonly #now: () => number;
  readonly #setTimer: (run: () => void, ms: number) => void;
  readonly #queue: (Waiter | undefined)[] = [];
  #head = 0;
  #inFlight = 0;
  #lastSlot = Number.NEGATIVE_INFINITY;
  #timerArmed = false;

  constructor(options: RequestLimiterOptions) {
    const windowSeconds = options.windowSeconds ?? 1;
    if (!(options.maxPerSecond > 0) || !(options.maxConcurrent >= 1) || !(windowSeconds >= 1)) {
      throw new RangeError(
        'a request limiter needs maxPerSecond > 0, maxConcurrent >= 1 and windowSeconds >= 1',
      );
    }
    this.spacingMs =
      (windowSeconds * 1000 + ARRIVAL_JITTER_ALLOWANCE_MS) / (options.maxPerSecond * windowSeconds);
    this.#catchUpMs = CATCH_UP_MS;
    this.#maxConcurrent = Math.floor(options.maxConcurrent);
    this.#now = options.now ?? (() => performance.now());
    this.#setTimer =
      options.setTimer ??
      ((run, ms) => {
        setTimeout(run, clampTimerMs(ms));
      });
  }

  /** Requests started and not yet finished. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Requests waiting for their turn. */
  get waiting(): number {
    return this.#queue.length - this.#head;
  }

  /** Runs `task` when the limits allow, and frees its place when it settles. */
  async schedule<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.#acquire(signal);
    try {
      return await task();
    } finally {
      this.#inFlight--;
      this.#pump();
    }
  }

  #acquire(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted)
      return Promise.reject(new LimiterAbortedError('cancelled before it started'));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { start: resolve, cancelled: false };
      const onAbort = (): void => {
        waiter.cancelled = true;
        reject(new LimiterAbortedError('cancelled before it started'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiter.start = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#head < this.#queue.length && this.#inFlight < this.#maxConcurrent) {
      const waiter = this.#queue[this.#head]!;
      if (waiter.cancelled) {
        this.#dequeue();
        continue;
      }
      const now = this.#now();
      const slot = Math.max(this.#lastSlot + this.spacingMs, now - this.#catchUpMs);
      if (slot > now) {
        this.#armTimer(slot - now);
        return;
      }
      this.#lastSlot = slot;
      this.#dequeue();
      this.#inFlight++;
      waiter.start();
    }
  }

  #dequeue(): void {
    // Let go of the waiter at once: kept until the next compaction, every waiter (its closures and
    // the request's abort listener) would outlive a few young-generation collections and be moved
    // to the old generation, for nothing.
    this.#queue[this.#head] = undefined;
    this.#head++;
    // Compact now and then so a long backfill does not keep every finished waiter alive.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }

  #armTimer(ms: number): void {
    if (this.#timerArmed) return;
    this.#timerArmed = true;
    this.#setTimer(() => {
      this.#timerArmed = false;
      this.#pump();
    }, Math.ceil(ms));
  }
}

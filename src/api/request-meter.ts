/**
 * Counts what requests cost: a run passes its own meter with its requests, so its `sync_runs` row
 * gets exactly its own numbers even when other runs share the transport.
 */
export class RequestMeter {
  /** HTTP exchanges attempted (first tries and retries). */
  requests = 0;
  /** Attempts that were retries. */
  retries = 0;
  /** Bytes of response bodies received. */
  bytesReceived = 0;
  /** Time spent waiting before retries (backoff and Retry-After), in milliseconds. */
  waitMs = 0;
  /** Answers by HTTP status, and failures without one by kind (`network`, `timeout`, …). */
  readonly outcomes = new Map<string, number>();

  recordOutcome(outcome: string): void {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
  }

  /** A plain copy, for logs and tests. */
  snapshot(): RequestMeterSnapshot {
    return {
      requests: this.requests,
      retries: this.retries,
      bytesReceived: this.bytesReceived,
      waitMs: this.waitMs,
      outcomes: Object.fromEntries(this.outcomes),
    };
  }
}

export interface RequestMeterSnapshot {
  requests: number;
  retries: number;
  bytesReceived: number;
  waitMs: number;
  outcomes: Record<string, number>;
}

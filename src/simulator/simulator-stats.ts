/**
 * Counters of what the simulator served and injected, read through GET /__admin/stats. Tests use
 * them to assert what happened (how many 429s, how many records a page generated) without timers.
 */

/** Kinds of injected faults, as counted. */
export type FaultKind =
  | 'down'
  | 'tooManyRequests'
  | 'serverErrors'
  | 'resets'
  | 'truncations'
  | 'spikes'
  | 'malformed'
  | 'lateWithheld'
  | 'insertedDuringPaging';

export interface SimulatorStatsSnapshot {
  requests: {
    /** API requests (the admin API is not counted). */
    total: number;
    /** By route name, e.g. `GET Trunk/Call`. */
    byRoute: Record<string, number>;
    /** By HTTP status; `dropped` for connections closed without an answer. */
    byStatus: Record<string, number>;
  };
  /** Injected faults by kind: requests for the request faults, records for malformed and late. */
  faults: Record<FaultKind, number>;
  /** Requests refused by the rate limit (not counting injected 429s). */
  rateLimited: number;
  /** Trunk call records generated, for lists and lookups (a page without field filters makes ≤ limit). */
  recordsGenerated: number;
}

function emptyFaults(): Record<FaultKind, number> {
  return {
    down: 0,
    tooManyRequests: 0,
    serverErrors: 0,
    resets: 0,
    truncations: 0,
    spikes: 0,
    malformed: 0,
    lateWithheld: 0,
    insertedDuringPaging: 0,
  };
}

/** The counters of one running simulator. */
export class SimulatorStats {
  private total = 0;
  private byRoute: Record<string, number> = {};
  private byStatus: Record<string, number> = {};
  private faults = emptyFaults();
  private rateLimited = 0;
  private recordsGenerated = 0;

  /** Counts one API request by its route and the status it got (or `dropped`). */
  countRequest(route: string, status: number | 'dropped'): void {
    this.total++;
    this.byRoute[route] = (this.byRoute[route] ?? 0) + 1;
    const key = String(status);
    this.byStatus[key] = (this.byStatus[key] ?? 0) + 1;
  }

  countFault(kind: FaultKind, count = 1): void {
    this.faults[kind] += count;
  }

  countRateLimited(): void {
    this.rateLimited++;
  }

  countRecords(count: number): void {
    this.recordsGenerated += count;
  }

  snapshot(): SimulatorStatsSnapshot {
    return {
      requests: { total: this.total, byRoute: { ...this.byRoute }, byStatus: { ...this.byStatus } },
      faults: { ...this.faults },
      rateLimited: this.rateLimited,
      recordsGenerated: this.recordsGenerated,
    };
  }

  reset(): void {
    this.total = 0;
    this.byRoute = {};
    this.byStatus = {};
    this.faults = emptyFaults();
    this.rateLimited = 0;
    this.recordsGenerated = 0;
  }
}

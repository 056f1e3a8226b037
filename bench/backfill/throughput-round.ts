import type { CpuBreakdown } from '../support/process-monitor.js';
import type { ProfileSummary } from '../support/cpu-profile.js';

/**
 * What one round of the backfill-throughput benchmark measures: telesync end to end and the two
 * limits beside it (fetch only, COPY only), in the order the round ran them.
 */

/** The days every backfill of the benchmark covers. */
export const BACKFILL_DAYS = 90;

export type Step = 'telesync' | 'fetch' | 'copy';

export interface EndToEndRun {
  readonly rows: number;
  readonly wallMs: number;
  readonly rowsPerSecond: number;
  /** Inside the command (its own duration_ms), without process start-up. */
  readonly telesyncDurationMs: number;
  readonly requests: number;
  readonly simulatorRequests: number;
  readonly retries: number;
  readonly windows: number;
  readonly peakRssBytes: number | null;
  readonly rssQuarterPeaksBytes: readonly (number | null)[];
  /** Peak of the last quarter over peak of the second quarter of the run. */
  readonly rssGrowth: number | null;
  readonly cpu: CpuBreakdown | null;
  readonly coveredFrom: string;
  readonly coveredTo: string;
}

export interface FetchLimitRun {
  readonly records: number;
  readonly elapsedMs: number;
  readonly rowsPerSecond: number;
  readonly requests: number;
  readonly simulatorRequests: number;
  readonly retries: number;
  readonly peakRssBytes: number | null;
  readonly cpu: CpuBreakdown | null;
}

export interface CopyLoad {
  readonly lanes: number;
  readonly loadMs: number;
  readonly rowsPerSecond: number;
  readonly gcMs: number;
}

export interface CopyLimitRun {
  readonly rows: number;
  /** The best of `loads`: the limit. */
  readonly rowsPerSecond: number;
  readonly bestLanes: number;
  readonly loads: readonly CopyLoad[];
  readonly prepareMs: number;
  readonly batches: number;
}

export interface ThroughputRound {
  readonly round: number;
  readonly order: readonly Step[];
  readonly endToEnd: EndToEndRun;
  readonly fetchLimit: FetchLimitRun;
  readonly copyLimit: CopyLimitRun;
  readonly slowerLimit: 'fetch' | 'copy';
  /** End-to-end rows/s over the slower limit's rows/s, in this round. */
  readonly ratio: number;
}

/** The extra, CPU-profiled backfill of telesync and its simulator. */
export interface BackfillProfile {
  readonly telesync: ProfileSummary;
  readonly simulator: ProfileSummary | null;
  readonly rows: number;
  readonly wallMs: number;
}

/** How the streams are synced: the settings a run takes (config assembles them). */
export interface SyncSettings {
  /** Width of a trunk-call window (a slot of the UTC grid), in hours; at most 720 (TELESYNC_SLICE_HOURS). */
  readonly sliceHours: number;
  /** First sync with no watermark starts this many days back (TELESYNC_INITIAL_DAYS). */
  readonly initialDays: number;
  /** Each incremental sync re-checks this far behind its watermark (TELESYNC_LOOKBACK_HOURS). */
  readonly lookbackHours: number;
  /** Calls that ended less than this long ago are left for the next run (TELESYNC_SETTLE_LAG_MINUTES). */
  readonly settleLagMinutes: number;
  /** Once a UTC day, re-read this many previous UTC days in full; 0 turns it off (TELESYNC_DEEP_RECHECK_DAYS). */
  readonly deepRecheckDays: number;
  /** Rows per upsert batch (TELESYNC_BATCH_SIZE). */
  readonly batchSize: number;
  /**
   * Batches the process writes at once, each on a database connection of its own, whatever the
   * number of runs (TELESYNC_LOAD_CONNECTIONS).
   */
  readonly loadConnections: number;
  /** A snapshot that would mark more than this share of rows deleted is refused (TELESYNC_SNAPSHOT_DELETE_GUARD). */
  readonly snapshotDeleteGuard: number;
  /** Lookups of one UUID give up after this many failed attempts (TELESYNC_LOOKUP_MAX_ATTEMPTS). */
  readonly lookupMaxAttempts: number;
  /** A stored sender pack is fetched again when older than this (TELESYNC_POWERPACK_REFRESH_HOURS). */
  readonly powerpackRefreshHours: number;
  /**
   * Pages one listing (a trunk-call window, a snapshot) may take before it fails: what the service
   * says (total_count, meta.next) is bounded by it (TELESYNC_MAX_PAGES_PER_WINDOW).
   */
  readonly maxPagesPerWindow: number;
}

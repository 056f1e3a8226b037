/** How workers take and hold jobs: the settings the queue takes (config assembles them). */
export interface JobSettings {
  /**
   * How long a worker holds a job before another may take it (TELESYNC_JOB_LEASE_SECONDS, default
   * 60): a killed worker's job is retried by another after this. A job stops itself well before.
   */
  readonly leaseSeconds: number;
  /** Retries of a failed job, with exponential backoff (TELESYNC_JOB_RETRY_LIMIT). */
  readonly retryLimit: number;
  /** First retry delay; doubled each retry (TELESYNC_JOB_RETRY_DELAY_SECONDS). */
  readonly retryDelaySeconds: number;
  /** How often an idle worker looks for work (TELESYNC_JOB_POLL_MS). */
  readonly pollMs: number;
}

/** The schema of the job queue's tables, beside telesync's own. */
export function jobSchemaName(schema: string): string {
  return `${schema}_jobs`;
}

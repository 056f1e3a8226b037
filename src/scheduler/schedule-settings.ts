import type { StreamName } from '../domain/streams.js';

/** The value of TELESYNC_SCHEDULE_<STREAM> that leaves a stream out of the schedule. */
export const SCHEDULE_OFF = 'off';

/** When the scheduler runs each stream, and how it is watched (config assembles them). */
export interface ScheduleSettings {
  /** Time zone of the cron expressions (TELESYNC_SCHEDULE_TIMEZONE, default UTC). */
  readonly timezone: string;
  /** A cron expression per stream, or "off" (TELESYNC_SCHEDULE_<STREAM>). */
  readonly crons: Readonly<Record<StreamName, string>>;
  /**
   * When `telesync verify` runs over every account's 90 days, or "off" (TELESYNC_VERIFY_CRON;
   * default daily at 06:00, after the night's syncs).
   */
  readonly verifyCron: string;
  /** On SIGTERM, runs in hand get this long to finish their batch (TELESYNC_SHUTDOWN_TIMEOUT_SECONDS). */
  readonly shutdownTimeoutSeconds: number;
  /** /healthz fails when a stream's last successful run is older (TELESYNC_HEALTH_MAX_AGE_MINUTES). */
  readonly healthMaxAgeMinutes: number;
}

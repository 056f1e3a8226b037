import type { StreamName } from '../domain/streams.js';

/** The value of TELESYNC_SCHEDULE_<STREAM> that leaves a stream out of the schedule. */
export const SCHEDULE_OFF = 'off';

/** What the schedule needs of a stream's definition: its name and its cron when none is set. */
export interface StreamScheduleDefault {
  readonly name: StreamName;
  readonly defaultSchedule: string;
}

/** When the scheduler runs each stream, and how it is watched (config assembles them). */
export interface ScheduleSettings {
  /** Time zone of the cron expressions (TELESYNC_SCHEDULE_TIMEZONE, default UTC). */
  readonly timezone: string;
  /**
   * A cron expression or "off" for each stream loadConfig was given (TELESYNC_SCHEDULE_<STREAM>,
   * else the definition's default), by stream name.
   */
  readonly crons: Readonly<Partial<Record<string, string>>>;
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

import type { ApiSettings } from '../api/api-settings.js';
import type { DatabaseSettings } from '../db/database-settings.js';
import type { StreamCallbackSettings } from '../http/http-settings.js';
import type { HorizonAlarmSettings } from '../scheduler/horizon-alarm-settings.js';
import type { JobSettings } from '../jobs/job-settings.js';
import type { ScheduleSettings } from '../scheduler/schedule-settings.js';
import type { SyncSettings } from '../sync/sync-settings.js';
import type { LogLevel } from '../util/logger.js';

export type {
  ApiSettings,
  DatabaseSettings,
  HorizonAlarmSettings,
  LogLevel,
  ScheduleSettings,
  StreamCallbackSettings,
  SyncSettings,
};

/** One account of the service. */
export interface AccountConfig {
  readonly authId: string;
  readonly authToken: string;
}

/**
 * The `schedule` part of the configuration: the scheduler's settings, and where its HTTP server
 * listens (TELESYNC_HTTP_HOST, TELESYNC_HTTP_PORT; `schedule.http_*` in the config file, so they
 * stay here; the app hands them to src/http as HttpSettings).
 */
export interface ScheduleConfig extends ScheduleSettings {
  readonly httpHost: string;
  /** 0: no HTTP server. */
  readonly httpPort: number;
  /** Whether TELESYNC_HTTP_PORT was given; when not, a worker whose port is taken moves to a free one. */
  readonly httpPortGiven: boolean;
}

/** Everything telesync reads from its environment, validated and frozen. */
export interface TelesyncConfig {
  readonly database: DatabaseSettings;
  /** Accounts to sync; empty when no credentials are configured (fine for `migrate`, `status`). */
  readonly accounts: readonly AccountConfig[];
  readonly api: ApiSettings;
  /**
   * Accounts worked on at once in one process: TELESYNC_ACCOUNT_CONCURRENCY, or when it is `auto`
   * (the default) autoAccountConcurrency's choice for the accounts configured.
   */
  readonly accountConcurrency: number;
  readonly sync: SyncSettings;
  /** How workers take and hold jobs (TELESYNC_JOB_*). */
  readonly jobs: JobSettings;
  readonly schedule: ScheduleConfig;
  /** Stream status callbacks: where the service reaches telesync (TELESYNC_PUBLIC_URL) and the route. */
  readonly callbacks: StreamCallbackSettings;
  /** The horizon alarm of /metrics and /healthz (TELESYNC_HORIZON_ALARM_DAYS). */
  readonly horizonAlarm: HorizonAlarmSettings;
  readonly logLevel: LogLevel;
  /** The config file that was read (TELESYNC_CONFIG), if any. */
  readonly configFile: string | undefined;
}

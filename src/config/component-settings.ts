import { IANAZone } from 'luxon';
import { validate as isValidCron } from 'node-cron';
import { SERVICE_REQUEST_BUDGET, type ApiSettings } from '../api/api-settings.js';
import type { DatabaseSettings } from '../db/database-settings.js';
import type { JobSettings } from '../jobs/job-settings.js';
import { TRUNK_HISTORY_DAYS, TRUNK_MAX_RANGE_DAYS } from '../domain/service-rules.js';
import type { StreamCallbackSettings } from '../http/http-settings.js';
import { checkCronExpression } from '../scheduler/cron-expression.js';
import { SCHEDULE_OFF, type StreamScheduleDefault } from '../scheduler/schedule-settings.js';
import type { SyncSettings } from '../sync/sync-settings.js';
import type { LogLevel } from '../util/logger.js';
import { TIMER_MAX_MS } from '../util/sleep.js';
import { autoAccountConcurrency } from './auto-account-concurrency.js';
import { CONFIG_DEFAULTS, scheduleVariable } from './config-defaults.js';
import type { HorizonAlarmSettings, ScheduleConfig } from './config-types.js';
import type { EnvReader } from './env-reader.js';
import { parseRequestBudget, parseRequestShare, requestsAtShare } from './parse-request-budget.js';

/**
 * One reader per component: each assembles the settings type its component declares, from the
 * variables, with the rules and messages of each variable.
 */

/** A slice is one range of a trunk list; no setting reaches back past the service's history. */
const MAX_SLICE_HOURS = TRUNK_MAX_RANGE_DAYS * 24;
const MAX_HISTORY_DAYS = TRUNK_HISTORY_DAYS;
/** A body past 1 GiB is never a page; the cap exists to keep memory bounded. */
const MAX_BODY_BYTES_LIMIT = 1024 * 1024 * 1024;
/**
 * Each account in hand uses about one database connection (databasePoolSize); PostgreSQL's default
 * allows 100.
 */
export const MAX_ACCOUNT_CONCURRENCY = 64;
/** More writers than a database server's cores only make them wait on each other. */
const MAX_LOAD_CONNECTIONS = 64;

const LOG_LEVELS: readonly LogLevel[] = [
  'trace',
  'debug',
  'info',
  'warn',
  'error',
  'fatal',
  'silent',
];

/** DATABASE_URL, TELESYNC_DATA_DIR, TELESYNC_SCHEMA. */
export function readDatabaseSettings(reader: EnvReader): DatabaseSettings {
  const url = reader.optionalString('DATABASE_URL');
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) {
    reader.problem(
      'DATABASE_URL',
      'expected a PostgreSQL URL such as postgres://user:password@host:5432/dbname (leave it unset to use the embedded database)',
    );
  }
  const schema = reader.string('TELESYNC_SCHEMA', CONFIG_DEFAULTS.schema);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    reader.problem(
      'TELESYNC_SCHEMA',
      `"${schema}" is not a plain lower-case identifier (letters, digits, underscores; at most 63)`,
    );
  } else if (isSystemSchema(schema)) {
    reader.problem(
      'TELESYNC_SCHEMA',
      `"${schema}" is a PostgreSQL system schema (information_schema, pg_*); choose a schema of your own such as ${CONFIG_DEFAULTS.schema}`,
    );
  }
  return { url, dataDir: reader.string('TELESYNC_DATA_DIR', CONFIG_DEFAULTS.dataDir), schema };
}

/**
 * Schemas PostgreSQL owns: information_schema, and every name starting pg_ (reserved for system
 * schemas, pg_catalog and pg_toast among them).
 */
export function isSystemSchema(schema: string): boolean {
  return schema === 'information_schema' || schema.startsWith('pg_');
}

/** TELESYNC_LOG_LEVEL. */
export function readLogLevel(reader: EnvReader): LogLevel {
  const logLevel = reader.string('TELESYNC_LOG_LEVEL', CONFIG_DEFAULTS.logLevel) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    reader.problem('TELESYNC_LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}`);
  }
  return logLevel;
}

/**
 * TELESYNC_BASE_URL, TELESYNC_REQUEST_BUDGET, TELESYNC_REQUEST_SHARE (or the older TELESYNC_MAX_RPS,
 * TELESYNC_RATE_WINDOW_SECONDS), TELESYNC_CONCURRENCY, TELESYNC_HTTP_TIMEOUT_MS, TELESYNC_MAX_RETRIES.
 */
export function readApiSettings(reader: EnvReader): ApiSettings {
  const D = CONFIG_DEFAULTS;
  const baseUrl = reader.string('TELESYNC_BASE_URL', D.baseUrl).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(baseUrl)) {
    reader.problem(
      'TELESYNC_BASE_URL',
      `"${baseUrl}" is not an http(s) URL such as https://api.example.com`,
    );
  }
  return {
    baseUrl,
    ...readRequestRate(reader),
    concurrency: reader.positiveInteger('TELESYNC_CONCURRENCY', D.concurrency),
    // A timer cannot hold more; past it every request would time out at once.
    timeoutMs: reader.integerIn('TELESYNC_HTTP_TIMEOUT_MS', D.timeoutMs, 1, TIMER_MAX_MS),
    maxRetries: reader.nonNegativeInteger('TELESYNC_MAX_RETRIES', D.maxRetries),
    retryAfterMaxSeconds: reader.integerIn(
      'TELESYNC_RETRY_AFTER_MAX_SECONDS',
      D.retryAfterMaxSeconds,
      0,
      Math.floor(TIMER_MAX_MS / 1000),
    ),
    maxBodyBytes: reader.integerIn(
      'TELESYNC_MAX_BODY_BYTES',
      D.maxBodyBytes,
      1024,
      MAX_BODY_BYTES_LIMIT,
    ),
  };
}

/**
 * The rate each account's limiter holds: TELESYNC_REQUEST_SHARE of TELESYNC_REQUEST_BUDGET, over
 * the budget's own window (a limiter counting over the service's window can go nearer its rate:
 * RequestLimiter). The older TELESYNC_MAX_RPS and TELESYNC_RATE_WINDOW_SECONDS still set it as
 * before when given, and may not be mixed with the new ones.
 */
function readRequestRate(
  reader: EnvReader,
): Pick<ApiSettings, 'serviceBudget' | 'maxRps' | 'rateWindowSeconds' | 'legacyRateVariables'> {
  const D = CONFIG_DEFAULTS;
  const budgetText = reader.string('TELESYNC_REQUEST_BUDGET', D.requestBudget);
  const parsedBudget = parseRequestBudget(budgetText);
  let serviceBudget = SERVICE_REQUEST_BUDGET;
  if ('problem' in parsedBudget) {
    reader.problem(
      'TELESYNC_REQUEST_BUDGET',
      `${parsedBudget.problem}; give the service's budget per account as it states it (default "${D.requestBudget}")`,
    );
  } else {
    serviceBudget = parsedBudget;
  }
  const shareText = reader.optionalString('TELESYNC_REQUEST_SHARE');
  let share: number = D.requestShare;
  if (shareText !== undefined) {
    const parsed = parseRequestShare(shareText);
    if (typeof parsed === 'number') share = parsed;
    else
      reader.problem(
        'TELESYNC_REQUEST_SHARE',
        `${parsed.problem} (default ${D.requestShare * 100}%)`,
      );
  }

  const legacyRateVariables = LEGACY_RATE_VARIABLES.filter(
    (key) => reader.optionalString(key) !== undefined,
  );
  if (legacyRateVariables.length > 0) {
    const mixed = ['TELESYNC_REQUEST_BUDGET', 'TELESYNC_REQUEST_SHARE'].filter(
      (key) => reader.optionalString(key) !== undefined,
    );
    if (mixed.length > 0) {
      reader.problem(
        legacyRateVariables[0]!,
        `is set with ${mixed.join(' and ')}, which replace${mixed.length === 1 ? 's' : ''} it: unset ${legacyRateVariables.join(' and ')} and give the share of the service's budget telesync may use in TELESYNC_REQUEST_SHARE (100% for all of it)`,
      );
    }
    return {
      serviceBudget,
      maxRps: reader.positiveNumber('TELESYNC_MAX_RPS', D.legacyMaxRps),
      rateWindowSeconds: reader.integerIn('TELESYNC_RATE_WINDOW_SECONDS', 1, 1, 60),
      legacyRateVariables,
    };
  }
  return {
    serviceBudget,
    maxRps: requestsAtShare(serviceBudget, share) / serviceBudget.windowSeconds,
    rateWindowSeconds: serviceBudget.windowSeconds,
    legacyRateVariables,
  };
}

/** The variables that set the rate before TELESYNC_REQUEST_BUDGET and TELESYNC_REQUEST_SHARE. */
const LEGACY_RATE_VARIABLES = ['TELESYNC_MAX_RPS', 'TELESYNC_RATE_WINDOW_SECONDS'] as const;

/**
 * TELESYNC_ACCOUNT_CONCURRENCY: accounts worked on at once in one process, `auto` (the default:
 * autoAccountConcurrency, from the `accounts` configured and the batch size) or a number. Each
 * account has its own transport and budget, so this bounds database connections and memory, not
 * the service's rate.
 */
export function readAccountConcurrency(
  reader: EnvReader,
  accounts: number,
  batchSize: number,
): number {
  const raw = reader.optionalString('TELESYNC_ACCOUNT_CONCURRENCY');
  const automatic = autoAccountConcurrency({
    accounts,
    batchSize,
    maxAccounts: MAX_ACCOUNT_CONCURRENCY,
  });
  if (raw === undefined || raw.toLowerCase() === AUTO) return automatic;
  const value = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1 && value <= MAX_ACCOUNT_CONCURRENCY)) {
    reader.problem(
      'TELESYNC_ACCOUNT_CONCURRENCY',
      `"${raw}" is not "${AUTO}" or a whole number from 1 to ${MAX_ACCOUNT_CONCURRENCY}; leave it unset (or "${AUTO}") to let telesync choose`,
    );
    return automatic;
  }
  return value;
}

/** TELESYNC_ACCOUNT_CONCURRENCY's value for the automatic choice (also its default). */
const AUTO = 'auto';

/** The TELESYNC_JOB_* variables of src/jobs/job-settings.ts (workers and `backfill --queue`). */
export function readJobSettings(reader: EnvReader): JobSettings {
  const D = CONFIG_DEFAULTS;
  return {
    // pg-boss's own lower bound is 1 s; under 10 s a batch could outlive its lease.
    leaseSeconds: reader.integerIn('TELESYNC_JOB_LEASE_SECONDS', D.jobLeaseSeconds, 10, 3600),
    retryLimit: reader.integerIn('TELESYNC_JOB_RETRY_LIMIT', D.jobRetryLimit, 0, 100),
    retryDelaySeconds: reader.integerIn(
      'TELESYNC_JOB_RETRY_DELAY_SECONDS',
      D.jobRetryDelaySeconds,
      1,
      3600,
    ),
    pollMs: reader.integerIn('TELESYNC_JOB_POLL_MS', D.jobPollMs, 100, 60_000),
  };
}

/** The TELESYNC_* variables of src/sync/sync-settings.ts. */
export function readSyncSettings(reader: EnvReader): SyncSettings {
  const D = CONFIG_DEFAULTS;
  return {
    sliceHours: reader.integerIn('TELESYNC_SLICE_HOURS', D.sliceHours, 1, MAX_SLICE_HOURS),
    initialDays: reader.integerIn('TELESYNC_INITIAL_DAYS', D.initialDays, 1, MAX_HISTORY_DAYS),
    lookbackHours: reader.integerIn(
      'TELESYNC_LOOKBACK_HOURS',
      D.lookbackHours,
      0,
      MAX_HISTORY_DAYS * 24,
    ),
    settleLagMinutes: reader.integerIn(
      'TELESYNC_SETTLE_LAG_MINUTES',
      D.settleLagMinutes,
      0,
      24 * 60,
    ),
    deepRecheckDays: reader.integerIn(
      'TELESYNC_DEEP_RECHECK_DAYS',
      D.deepRecheckDays,
      0,
      MAX_HISTORY_DAYS,
    ),
    batchSize: reader.integerIn('TELESYNC_BATCH_SIZE', D.batchSize, 1, 20_000),
    loadConnections: reader.integerIn(
      'TELESYNC_LOAD_CONNECTIONS',
      D.loadConnections,
      1,
      MAX_LOAD_CONNECTIONS,
    ),
    snapshotDeleteGuard: reader.number(
      'TELESYNC_SNAPSHOT_DELETE_GUARD',
      D.snapshotDeleteGuard,
      (n) => n >= 0 && n <= 1,
      'a share between 0 and 1',
    ),
    lookupMaxAttempts: reader.integerIn(
      'TELESYNC_LOOKUP_MAX_ATTEMPTS',
      D.lookupMaxAttempts,
      1,
      100,
    ),
    powerpackRefreshHours: reader.integerIn(
      'TELESYNC_POWERPACK_REFRESH_HOURS',
      D.powerpackRefreshHours,
      0,
      24 * 365,
    ),
    maxPagesPerWindow: reader.integerIn(
      'TELESYNC_MAX_PAGES_PER_WINDOW',
      D.maxPagesPerWindow,
      1,
      10_000_000,
    ),
  };
}

/**
 * The scheduler's settings (TELESYNC_SCHEDULE_<STREAM> for each of `streams`, TELESYNC_SHUTDOWN_TIMEOUT_SECONDS,
 * TELESYNC_HEALTH_MAX_AGE_MINUTES) and its HTTP server's (TELESYNC_HTTP_HOST, TELESYNC_HTTP_PORT).
 */
export function readScheduleConfig(
  reader: EnvReader,
  streams: readonly StreamScheduleDefault[],
): ScheduleConfig {
  const D = CONFIG_DEFAULTS;
  const timezone = reader.string('TELESYNC_SCHEDULE_TIMEZONE', D.scheduleTimezone);
  if (!IANAZone.isValidZone(timezone)) {
    reader.problem(
      'TELESYNC_SCHEDULE_TIMEZONE',
      `"${timezone}" is not a time zone; use an IANA name such as UTC or Europe/Paris`,
    );
  }
  const crons: Record<string, string> = {};
  for (const { name: stream, defaultSchedule } of streams) {
    const variable = scheduleVariable(stream);
    const cron = reader.string(variable, defaultSchedule);
    const problem = cron === SCHEDULE_OFF ? undefined : checkCronExpression(cron);
    if (problem !== undefined) {
      reader.problem(
        variable,
        `"${cron}" is not a cron expression such as "${defaultSchedule}" (minute hour day month weekday), or "off": ${problem}`,
      );
    } else if (cron !== SCHEDULE_OFF && !isValidCron(cron)) {
      reader.problem(
        variable,
        `"${cron}" is not a cron expression such as "${defaultSchedule}" (minute hour day month weekday), or "off"`,
      );
    }
    crons[stream] = cron;
  }
  const verifyCron = reader.string('TELESYNC_VERIFY_CRON', D.verifyCron);
  const verifyProblem =
    verifyCron === SCHEDULE_OFF
      ? undefined
      : (checkCronExpression(verifyCron) ??
        (isValidCron(verifyCron) ? undefined : 'node-cron cannot read it'));
  if (verifyProblem !== undefined)
    reader.problem(
      'TELESYNC_VERIFY_CRON',
      `"${verifyCron}" is not a cron expression such as "${D.verifyCron}" (minute hour day month weekday), or "off": ${verifyProblem}`,
    );
  return {
    timezone,
    crons,
    verifyCron,
    httpHost: reader.string('TELESYNC_HTTP_HOST', D.httpHost),
    httpPort: reader.integerIn('TELESYNC_HTTP_PORT', D.httpPort, 0, 65_535),
    httpPortGiven: reader.optionalString('TELESYNC_HTTP_PORT') !== undefined,
    shutdownTimeoutSeconds: reader.integerIn(
      'TELESYNC_SHUTDOWN_TIMEOUT_SECONDS',
      D.shutdownTimeoutSeconds,
      1,
      3600,
    ),
    healthMaxAgeMinutes: reader.integerIn(
      'TELESYNC_HEALTH_MAX_AGE_MINUTES',
      D.healthMaxAgeMinutes,
      1,
      7 * 24 * 60,
    ),
  };
}

/** Paths the HTTP server answers already: a callback route there would hide them. */
const RESERVED_PATHS = ['/', '/healthz', '/metrics'];

/**
 * Where the service reaches telesync for stream callbacks: TELESYNC_PUBLIC_URL (an absolute http(s)
 * URL, kept as written but for trailing slashes, since the service signs the very text it calls)
 * and TELESYNC_STREAM_CALLBACK_PATH; their own listener when TELESYNC_CALLBACK_PORT is set (on
 * TELESYNC_CALLBACK_HOST, default that of TELESYNC_HTTP_HOST's default).
 */
export function readStreamCallbackSettings(reader: EnvReader): StreamCallbackSettings {
  const raw = reader.optionalString('TELESYNC_PUBLIC_URL');
  let publicUrl: string | undefined;
  if (raw !== undefined) {
    const trimmed = raw.replace(/\/+$/, '');
    if (isPublicUrl(trimmed)) {
      publicUrl = trimmed;
    } else {
      reader.problem(
        'TELESYNC_PUBLIC_URL',
        `"${withoutUserInfo(raw)}" is not an absolute http(s) URL; give the address the service reaches telesync's HTTP server at, ` +
          'such as https://telesync.example.com (no user, query or fragment), or leave it unset to receive no stream callbacks',
      );
    }
  }
  const path = reader.string('TELESYNC_STREAM_CALLBACK_PATH', CONFIG_DEFAULTS.streamCallbackPath);
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(path) || RESERVED_PATHS.includes(path)) {
    reader.problem(
      'TELESYNC_STREAM_CALLBACK_PATH',
      `"${path}" is not a free path such as ${CONFIG_DEFAULTS.streamCallbackPath} (segments of letters, digits, ".", "_", "~", "-"; not ${RESERVED_PATHS.join(', ')})`,
    );
  }
  const callbackPort = reader.optionalString('TELESYNC_CALLBACK_PORT');
  const callbackHost = reader.optionalString('TELESYNC_CALLBACK_HOST');
  let listen: StreamCallbackSettings['listen'];
  if (callbackPort !== undefined) {
    const port = reader.integerIn('TELESYNC_CALLBACK_PORT', 0, 1, 65_535);
    if (port !== 0) listen = { host: callbackHost ?? CONFIG_DEFAULTS.httpHost, port };
  } else if (callbackHost !== undefined) {
    reader.problem(
      'TELESYNC_CALLBACK_HOST',
      "is set without TELESYNC_CALLBACK_PORT; set the port of the callbacks' own listener too, or unset both to serve callbacks on TELESYNC_HTTP_PORT",
    );
  }
  return listen === undefined ? { publicUrl, path } : { publicUrl, path, listen };
}

/** The text with any `user:password@` hidden: a value that is refused is still echoed back. */
function withoutUserInfo(text: string): string {
  return text.replace(/^([^:/?#]*:\/\/)[^/?#]*@/, '$1…@');
}

function isPublicUrl(text: string): boolean {
  // scheme, an authority without user info, then an optional path: nothing the signature would drop.
  if (!/^https?:\/\/[^/?#@\s]+(\/[^?#\s]*)?$/i.test(text)) return false;
  try {
    return new URL(text).hostname !== '';
  } catch {
    return false;
  }
}

/** The horizon alarm's setting (TELESYNC_HORIZON_ALARM_DAYS; config file: schedule.horizon_alarm_days). */
export function readHorizonAlarmSettings(reader: EnvReader): HorizonAlarmSettings {
  return {
    // Up to 89: a wider alarm would span the whole horizon and say nothing more.
    alarmDays: reader.integerIn(
      'TELESYNC_HORIZON_ALARM_DAYS',
      CONFIG_DEFAULTS.horizonAlarmDays,
      0,
      89,
    ),
  };
}

import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { ConfigError, type ConfigProblem } from './config-errors.js';
import type { AccountConfig, LogLevel, SyncConfig, TelesyncConfig } from './config-types.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Defaults, one place. */
export const CONFIG_DEFAULTS = {
  dataDir: './.telesync',
  schema: 'telephony',
  // The service this spec describes publishes its API at this address; override for a proxy,
  // a regional endpoint or the simulator.
  baseUrl: 'https://api.plivo.com',
  maxRps: 50,
  concurrency: 8,
  timeoutMs: 30_000,
  maxRetries: 8,
  logLevel: 'info' as LogLevel,
  sliceHours: 24,
  initialDays: 7,
  lookbackHours: 6,
  settleLagMinutes: 5,
  deepRecheckDays: 1,
  batchSize: 2000,
  snapshotDeleteGuard: 0.5,
  lookupMaxAttempts: 5,
  powerpackRefreshHours: 24,
} as const;

/** The service keeps 90 days of calls and a range may span at most 30 (spec 4.6). */
const MAX_SLICE_HOURS = 30 * 24;
const MAX_HISTORY_DAYS = 90;

const LOG_LEVELS: readonly LogLevel[] = [
  'trace',
  'debug',
  'info',
  'warn',
  'error',
  'fatal',
  'silent',
];

/**
 * Reads `.env` in `cwd` when present. Variables already set in the environment win over the file,
 * as with every common dotenv loader.
 */
export function readDotEnv(env: Env, cwd: string): Env {
  let content: string;
  try {
    content = readFileSync(`${cwd}/.env`, 'utf8');
  } catch {
    return env;
  }
  return { ...parseEnv(content), ...definedOnly(env) };
}

function definedOnly(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Builds telesync's configuration from environment variables. The only reader of the
 * environment: everything else receives its part of the result. Every problem is collected and
 * reported together in one `ConfigError`.
 */
export function loadConfig(env: Env): TelesyncConfig {
  const problems: ConfigProblem[] = [];
  const reader = new EnvReader(env, problems);

  const url = reader.optionalString('DATABASE_URL');
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) {
    problems.push({
      key: 'DATABASE_URL',
      message:
        'expected a PostgreSQL URL such as postgres://user:password@host:5432/dbname ' +
        '(leave it unset to use the embedded database)',
    });
  }
  const schema = reader.string('TELESYNC_SCHEMA', CONFIG_DEFAULTS.schema);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    problems.push({
      key: 'TELESYNC_SCHEMA',
      message: `"${schema}" is not a plain lower-case identifier (letters, digits, underscores; at most 63)`,
    });
  }

  const baseUrl = reader.string('TELESYNC_BASE_URL', CONFIG_DEFAULTS.baseUrl).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(baseUrl)) {
    problems.push({
      key: 'TELESYNC_BASE_URL',
      message: `"${baseUrl}" is not an http(s) URL such as https://api.example.com`,
    });
  }

  const logLevel = reader.string('TELESYNC_LOG_LEVEL', CONFIG_DEFAULTS.logLevel) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push({
      key: 'TELESYNC_LOG_LEVEL',
      message: `expected one of ${LOG_LEVELS.join(', ')}`,
    });
  }

  const config: TelesyncConfig = {
    database: {
      url,
      dataDir: reader.string('TELESYNC_DATA_DIR', CONFIG_DEFAULTS.dataDir),
      schema,
    },
    accounts: readAccounts(reader, problems),
    api: {
      baseUrl,
      maxRps: reader.positiveNumber('TELESYNC_MAX_RPS', CONFIG_DEFAULTS.maxRps),
      concurrency: reader.positiveInteger('TELESYNC_CONCURRENCY', CONFIG_DEFAULTS.concurrency),
      timeoutMs: reader.positiveInteger('TELESYNC_HTTP_TIMEOUT_MS', CONFIG_DEFAULTS.timeoutMs),
      maxRetries: reader.nonNegativeInteger('TELESYNC_MAX_RETRIES', CONFIG_DEFAULTS.maxRetries),
    },
    sync: readSyncConfig(reader),
    logLevel,
  };

  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(config);
}

function readSyncConfig(reader: EnvReader): SyncConfig {
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
  };
}

function readAccounts(reader: EnvReader, problems: ConfigProblem[]): AccountConfig[] {
  const authId = reader.optionalString('TELESYNC_AUTH_ID');
  const authToken = reader.optionalString('TELESYNC_AUTH_TOKEN');
  if (authId === undefined && authToken === undefined) return [];
  if (authId === undefined) {
    problems.push({ key: 'TELESYNC_AUTH_ID', message: 'is not set, but TELESYNC_AUTH_TOKEN is' });
    return [];
  }
  if (authToken === undefined) {
    problems.push({ key: 'TELESYNC_AUTH_TOKEN', message: 'is not set, but TELESYNC_AUTH_ID is' });
    return [];
  }
  if (!/^[A-Za-z0-9_-]+$/.test(authId)) {
    problems.push({
      key: 'TELESYNC_AUTH_ID',
      message: 'expected letters, digits, "_" or "-" only (it becomes a path segment)',
    });
  }
  return [{ authId, authToken }];
}

/** Typed reads of environment variables that record problems instead of throwing. */
class EnvReader {
  constructor(
    private readonly env: Env,
    private readonly problems: ConfigProblem[],
  ) {}

  optionalString(key: string): string | undefined {
    const value = this.env[key]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  string(key: string, fallback: string): string {
    return this.optionalString(key) ?? fallback;
  }

  positiveNumber(key: string, fallback: number): number {
    return this.number(key, fallback, (n) => n > 0, 'a number greater than 0');
  }

  positiveInteger(key: string, fallback: number): number {
    return this.number(
      key,
      fallback,
      (n) => Number.isInteger(n) && n > 0,
      'a whole number of 1 or more',
    );
  }

  nonNegativeInteger(key: string, fallback: number): number {
    return this.number(
      key,
      fallback,
      (n) => Number.isInteger(n) && n >= 0,
      'a whole number of 0 or more',
    );
  }

  integerIn(key: string, fallback: number, min: number, max: number): number {
    return this.number(
      key,
      fallback,
      (n) => Number.isInteger(n) && n >= min && n <= max,
      `a whole number from ${min} to ${max}`,
    );
  }

  number(key: string, fallback: number, valid: (n: number) => boolean, expected: string): number {
    const raw = this.optionalString(key);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || !valid(value)) {
      this.problems.push({ key, message: `"${raw}" is not ${expected} (default ${fallback})` });
      return fallback;
    }
    return value;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

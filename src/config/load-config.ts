import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { IANAZone } from 'luxon';
import { validate as isValidCron } from 'node-cron';
import { STREAM_NAMES, type StreamName } from '../sync/streams.js';
import { ConfigError, type ConfigProblem } from './config-errors.js';
import {
  SCHEDULE_OFF,
  type AccountConfig,
  type LogLevel,
  type ScheduleConfig,
  type SyncConfig,
  type TelesyncConfig,
} from './config-types.js';

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
  scheduleTimezone: 'UTC',
  httpHost: '127.0.0.1',
  httpPort: 9464,
  shutdownTimeoutSeconds: 60,
  healthMaxAgeMinutes: 180,
  crons: {
    trunk_calls: '*/15 * * * *',
    endpoints: '0 * * * *',
    caller_ids: '0 * * * *',
    messages: '*/5 * * * *',
    powerpacks: '*/5 * * * *',
    call_streams: '*/5 * * * *',
  } satisfies Record<StreamName, string>,
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

/** The environment variable of each stream's cron expression. */
export function scheduleVariable(stream: StreamName): string {
  return `TELESYNC_SCHEDULE_${stream.toUpperCase()}`;
}

/**
 * Keys of the optional JSON config file (TELESYNC_CONFIG) and the variable each one sets. The file
 * is read first and the environment overrides it, so one validation covers both.
 */
const FILE_KEYS: Readonly<Record<string, string>> = {
  'database.url': 'DATABASE_URL',
  'database.data_dir': 'TELESYNC_DATA_DIR',
  'database.schema': 'TELESYNC_SCHEMA',
  'api.base_url': 'TELESYNC_BASE_URL',
  'api.max_rps': 'TELESYNC_MAX_RPS',
  'api.concurrency': 'TELESYNC_CONCURRENCY',
  'api.timeout_ms': 'TELESYNC_HTTP_TIMEOUT_MS',
  'api.max_retries': 'TELESYNC_MAX_RETRIES',
  'sync.slice_hours': 'TELESYNC_SLICE_HOURS',
  'sync.initial_days': 'TELESYNC_INITIAL_DAYS',
  'sync.lookback_hours': 'TELESYNC_LOOKBACK_HOURS',
  'sync.settle_lag_minutes': 'TELESYNC_SETTLE_LAG_MINUTES',
  'sync.deep_recheck_days': 'TELESYNC_DEEP_RECHECK_DAYS',
  'sync.batch_size': 'TELESYNC_BATCH_SIZE',
  'sync.snapshot_delete_guard': 'TELESYNC_SNAPSHOT_DELETE_GUARD',
  'sync.lookup_max_attempts': 'TELESYNC_LOOKUP_MAX_ATTEMPTS',
  'sync.powerpack_refresh_hours': 'TELESYNC_POWERPACK_REFRESH_HOURS',
  'schedule.timezone': 'TELESYNC_SCHEDULE_TIMEZONE',
  'schedule.http_host': 'TELESYNC_HTTP_HOST',
  'schedule.http_port': 'TELESYNC_HTTP_PORT',
  'schedule.shutdown_timeout_seconds': 'TELESYNC_SHUTDOWN_TIMEOUT_SECONDS',
  'schedule.health_max_age_minutes': 'TELESYNC_HEALTH_MAX_AGE_MINUTES',
  ...Object.fromEntries(
    STREAM_NAMES.map((stream) => [`schedule.${stream}`, scheduleVariable(stream)]),
  ),
  log_level: 'TELESYNC_LOG_LEVEL',
};

/** The config file as the command read it. */
export interface ConfigFile {
  readonly path: string;
  readonly text: string;
}

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

/** Reads the file TELESYNC_CONFIG names, if any; an unreadable file is a configuration problem. */
export function readConfigFile(env: Env, cwd: string): ConfigFile | undefined {
  const path = env.TELESYNC_CONFIG?.trim();
  if (path === undefined || path === '') return undefined;
  const absolute = resolve(cwd, path);
  try {
    return { path: absolute, text: readFileSync(absolute, 'utf8') };
  } catch (error) {
    throw new ConfigError([
      {
        key: 'TELESYNC_CONFIG',
        message: `cannot read ${absolute}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      },
    ]);
  }
}

function definedOnly(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Builds telesync's configuration from environment variables and, when given, the JSON config
 * file (the environment wins over the file). The only reader of the environment: everything else
 * receives its part of the result. Every problem is collected and reported together.
 */
export function loadConfig(env: Env, file?: ConfigFile): TelesyncConfig {
  const problems: ConfigProblem[] = [];
  const parsed = file === undefined ? undefined : parseConfigFile(file, problems);
  const merged: Env = { ...(parsed?.variables ?? {}), ...definedOnly(env) };
  const reader = new EnvReader(merged, problems, parsed?.origins ?? new Map());

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
  }

  const baseUrl = reader.string('TELESYNC_BASE_URL', CONFIG_DEFAULTS.baseUrl).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(baseUrl)) {
    reader.problem(
      'TELESYNC_BASE_URL',
      `"${baseUrl}" is not an http(s) URL such as https://api.example.com`,
    );
  }

  const logLevel = reader.string('TELESYNC_LOG_LEVEL', CONFIG_DEFAULTS.logLevel) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    reader.problem('TELESYNC_LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}`);
  }

  const config: TelesyncConfig = {
    database: {
      url,
      dataDir: reader.string('TELESYNC_DATA_DIR', CONFIG_DEFAULTS.dataDir),
      schema,
    },
    accounts: readAccounts(reader, parsed?.accounts ?? [], problems),
    api: {
      baseUrl,
      maxRps: reader.positiveNumber('TELESYNC_MAX_RPS', CONFIG_DEFAULTS.maxRps),
      concurrency: reader.positiveInteger('TELESYNC_CONCURRENCY', CONFIG_DEFAULTS.concurrency),
      timeoutMs: reader.positiveInteger('TELESYNC_HTTP_TIMEOUT_MS', CONFIG_DEFAULTS.timeoutMs),
      maxRetries: reader.nonNegativeInteger('TELESYNC_MAX_RETRIES', CONFIG_DEFAULTS.maxRetries),
    },
    sync: readSyncConfig(reader),
    schedule: readScheduleConfig(reader),
    logLevel,
    configFile: file?.path,
  };

  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(config);
}

interface ParsedConfigFile {
  variables: Record<string, string>;
  /** Where in the file each variable came from, for messages. */
  origins: Map<string, string>;
  accounts: { authId: unknown; authToken: unknown; tokenEnv: unknown; where: string }[];
}

function parseConfigFile(
  file: ConfigFile,
  problems: ConfigProblem[],
): ParsedConfigFile | undefined {
  const where = (path: string) => `${file.path}: ${path}`;
  let root: unknown;
  try {
    root = JSON.parse(file.text);
  } catch (error) {
    problems.push({
      key: 'TELESYNC_CONFIG',
      message: `${file.path} is not valid JSON: ${(error as Error).message}`,
    });
    return undefined;
  }
  if (root === null || typeof root !== 'object' || Array.isArray(root)) {
    problems.push({ key: 'TELESYNC_CONFIG', message: `${file.path} must hold a JSON object` });
    return undefined;
  }
  const variables: Record<string, string> = {};
  const origins = new Map<string, string>();
  const accounts: ParsedConfigFile['accounts'] = [];
  const visit = (value: unknown, path: string): void => {
    if (path === 'accounts') {
      if (!Array.isArray(value)) {
        problems.push({
          key: where('accounts'),
          message: 'must be a list of {"auth_id", "auth_token" or "auth_token_env"}',
        });
        return;
      }
      value.forEach((entry: unknown, index) => {
        const account = (entry ?? {}) as Record<string, unknown>;
        accounts.push({
          authId: account.auth_id,
          authToken: account.auth_token,
          tokenEnv: account.auth_token_env,
          where: where(`accounts[${index}]`),
        });
      });
      return;
    }
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value))
        visit(inner, path === '' ? key : `${path}.${key}`);
      return;
    }
    const variable = FILE_KEYS[path];
    if (variable === undefined) {
      problems.push({
        key: where(path),
        message: `unknown setting; known: accounts, ${Object.keys(FILE_KEYS).join(', ')}`,
      });
    } else if (
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean'
    ) {
      variables[variable] = String(value);
      origins.set(variable, where(path));
    } else {
      problems.push({ key: where(path), message: 'must be text, a number or a boolean' });
    }
  };
  visit(root, '');
  return { variables, origins, accounts };
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

function readScheduleConfig(reader: EnvReader): ScheduleConfig {
  const D = CONFIG_DEFAULTS;
  const timezone = reader.string('TELESYNC_SCHEDULE_TIMEZONE', D.scheduleTimezone);
  if (!IANAZone.isValidZone(timezone)) {
    reader.problem(
      'TELESYNC_SCHEDULE_TIMEZONE',
      `"${timezone}" is not a time zone; use an IANA name such as UTC or Europe/Paris`,
    );
  }
  const crons = {} as Record<StreamName, string>;
  for (const stream of STREAM_NAMES) {
    const variable = scheduleVariable(stream);
    const cron = reader.string(variable, D.crons[stream]);
    if (cron !== SCHEDULE_OFF && !isValidCron(cron)) {
      reader.problem(
        variable,
        `"${cron}" is not a cron expression such as "${D.crons[stream]}" (minute hour day month weekday), or "off"`,
      );
    }
    crons[stream] = cron;
  }
  return {
    timezone,
    crons,
    httpHost: reader.string('TELESYNC_HTTP_HOST', D.httpHost),
    httpPort: reader.integerIn('TELESYNC_HTTP_PORT', D.httpPort, 0, 65_535),
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

/**
 * Accounts: TELESYNC_AUTH_ID/TELESYNC_AUTH_TOKEN name one, the config file's `accounts` more. A
 * file entry may name its token through another variable (`auth_token_env`) so the file holds no
 * secret.
 */
function readAccounts(
  reader: EnvReader,
  fileAccounts: ParsedConfigFile['accounts'],
  problems: ConfigProblem[],
): AccountConfig[] {
  const accounts: AccountConfig[] = [];
  const add = (authId: string, authToken: string, key: string): void => {
    if (!/^[A-Za-z0-9_-]+$/.test(authId)) {
      problems.push({
        key,
        message: `auth_id "${authId}" may hold only letters, digits, "_" and "-" (it becomes a path segment)`,
      });
    } else if (accounts.some((account) => account.authId === authId)) {
      problems.push({ key, message: `account ${authId} is configured twice` });
    } else {
      accounts.push({ authId, authToken });
    }
  };

  const authId = reader.optionalString('TELESYNC_AUTH_ID');
  const authToken = reader.optionalString('TELESYNC_AUTH_TOKEN');
  if (authId !== undefined && authToken === undefined) {
    reader.problem('TELESYNC_AUTH_TOKEN', 'is not set, but TELESYNC_AUTH_ID is');
  } else if (authId === undefined && authToken !== undefined) {
    reader.problem('TELESYNC_AUTH_ID', 'is not set, but TELESYNC_AUTH_TOKEN is');
  } else if (authId !== undefined && authToken !== undefined) {
    add(authId, authToken, 'TELESYNC_AUTH_ID');
  }

  for (const entry of fileAccounts) {
    if (typeof entry.authId !== 'string' || entry.authId === '') {
      problems.push({ key: entry.where, message: 'needs "auth_id" (text)' });
      continue;
    }
    let token: string | undefined;
    if (typeof entry.tokenEnv === 'string') {
      token = reader.optionalString(entry.tokenEnv);
      if (token === undefined) {
        problems.push({
          key: entry.where,
          message: `auth_token_env names ${entry.tokenEnv}, which is not set`,
        });
        continue;
      }
    } else if (typeof entry.authToken === 'string' && entry.authToken !== '') {
      token = entry.authToken;
    } else {
      problems.push({
        key: entry.where,
        message:
          'needs "auth_token" or "auth_token_env" (the name of a variable holding the token)',
      });
      continue;
    }
    add(entry.authId, token, entry.where);
  }
  return accounts;
}

/** Typed reads of variables that record problems instead of throwing. */
class EnvReader {
  constructor(
    private readonly env: Env,
    private readonly problems: ConfigProblem[],
    private readonly origins: ReadonlyMap<string, string>,
  ) {}

  /** Records a problem with `key`, naming the config-file entry when the value came from there. */
  problem(key: string, message: string): void {
    const origin = this.origins.get(key);
    this.problems.push({ key: origin === undefined ? key : `${key} (from ${origin})`, message });
  }

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
      this.problem(key, `"${raw}" is not ${expected} (default ${fallback})`);
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

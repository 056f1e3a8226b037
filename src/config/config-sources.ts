import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { scheduleVariable } from './config-defaults.js';
import { ConfigError, type ConfigProblem } from './config-errors.js';

/**
 * Where settings come from: the process environment, a `.env` file and the JSON config file
 * (TELESYNC_CONFIG). Nothing here validates a value; this only gathers them, as variables.
 */

export type Env = Readonly<Record<string, string | undefined>>;

/** The config file as the command read it. */
export interface ConfigFile {
  readonly path: string;
  readonly text: string;
}

/** An entry of the config file's `accounts`, as written (checked by readAccounts). */
export interface FileAccount {
  readonly authId: unknown;
  readonly authToken: unknown;
  readonly tokenEnv: unknown;
  /** Where in the file it is, for messages. */
  readonly where: string;
}

/** Every source merged: variables (the environment over the file) and the file's accounts. */
export interface ConfigSources {
  readonly variables: Env;
  /** Where in the file each variable that came from it was set, for messages. */
  readonly origins: ReadonlyMap<string, string>;
  readonly fileAccounts: readonly FileAccount[];
}

/**
 * Keys of the optional JSON config file (TELESYNC_CONFIG) and the variable each one sets, besides
 * each stream's `schedule.<stream>` (fileKeys). The file is read first and the environment
 * overrides it, so one validation covers both.
 */
const FILE_KEYS: Readonly<Record<string, string>> = {
  'database.url': 'DATABASE_URL',
  'database.data_dir': 'TELESYNC_DATA_DIR',
  'database.schema': 'TELESYNC_SCHEMA',
  'api.base_url': 'TELESYNC_BASE_URL',
  'api.request_budget': 'TELESYNC_REQUEST_BUDGET',
  'api.request_share': 'TELESYNC_REQUEST_SHARE',
  'api.max_rps': 'TELESYNC_MAX_RPS',
  'api.rate_window_seconds': 'TELESYNC_RATE_WINDOW_SECONDS',
  'api.concurrency': 'TELESYNC_CONCURRENCY',
  'api.timeout_ms': 'TELESYNC_HTTP_TIMEOUT_MS',
  'api.max_retries': 'TELESYNC_MAX_RETRIES',
  'api.retry_after_max_seconds': 'TELESYNC_RETRY_AFTER_MAX_SECONDS',
  'api.max_body_bytes': 'TELESYNC_MAX_BODY_BYTES',
  'api.account_concurrency': 'TELESYNC_ACCOUNT_CONCURRENCY',
  'jobs.lease_seconds': 'TELESYNC_JOB_LEASE_SECONDS',
  'jobs.retry_limit': 'TELESYNC_JOB_RETRY_LIMIT',
  'jobs.retry_delay_seconds': 'TELESYNC_JOB_RETRY_DELAY_SECONDS',
  'jobs.poll_ms': 'TELESYNC_JOB_POLL_MS',
  'sync.slice_hours': 'TELESYNC_SLICE_HOURS',
  'sync.initial_days': 'TELESYNC_INITIAL_DAYS',
  'sync.lookback_hours': 'TELESYNC_LOOKBACK_HOURS',
  'sync.settle_lag_minutes': 'TELESYNC_SETTLE_LAG_MINUTES',
  'sync.deep_recheck_days': 'TELESYNC_DEEP_RECHECK_DAYS',
  'sync.batch_size': 'TELESYNC_BATCH_SIZE',
  'sync.load_connections': 'TELESYNC_LOAD_CONNECTIONS',
  'sync.snapshot_delete_guard': 'TELESYNC_SNAPSHOT_DELETE_GUARD',
  'sync.lookup_max_attempts': 'TELESYNC_LOOKUP_MAX_ATTEMPTS',
  'sync.powerpack_refresh_hours': 'TELESYNC_POWERPACK_REFRESH_HOURS',
  'sync.max_pages_per_window': 'TELESYNC_MAX_PAGES_PER_WINDOW',
  'schedule.timezone': 'TELESYNC_SCHEDULE_TIMEZONE',
  'schedule.http_host': 'TELESYNC_HTTP_HOST',
  'schedule.http_port': 'TELESYNC_HTTP_PORT',
  'schedule.shutdown_timeout_seconds': 'TELESYNC_SHUTDOWN_TIMEOUT_SECONDS',
  'schedule.health_max_age_minutes': 'TELESYNC_HEALTH_MAX_AGE_MINUTES',
  'http.public_url': 'TELESYNC_PUBLIC_URL',
  'http.stream_callback_path': 'TELESYNC_STREAM_CALLBACK_PATH',
  'http.callback_host': 'TELESYNC_CALLBACK_HOST',
  'http.callback_port': 'TELESYNC_CALLBACK_PORT',
  'schedule.horizon_alarm_days': 'TELESYNC_HORIZON_ALARM_DAYS',
  log_level: 'TELESYNC_LOG_LEVEL',
};

/** The config file's keys when `streams` are the streams: FILE_KEYS and a schedule key each. */
function fileKeys(streams: readonly string[]): Readonly<Record<string, string>> {
  return {
    ...FILE_KEYS,
    ...Object.fromEntries(
      streams.map((stream) => [`schedule.${stream}`, scheduleVariable(stream)]),
    ),
  };
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

/**
 * Merges the environment over the config file's settings. Problems of the file (not JSON, unknown
 * keys, values that are not scalars) are added to `problems`; the rest of the file still counts.
 * `streams`: the names of the streams the file may schedule.
 */
export function mergeConfigSources(
  env: Env,
  file: ConfigFile | undefined,
  problems: ConfigProblem[],
  streams: readonly string[],
): ConfigSources {
  const parsed =
    file === undefined ? undefined : parseConfigFile(file, problems, fileKeys(streams));
  return {
    variables: { ...(parsed?.variables ?? {}), ...definedOnly(env) },
    origins: parsed?.origins ?? new Map(),
    fileAccounts: parsed?.accounts ?? [],
  };
}

function definedOnly(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

interface ParsedConfigFile {
  variables: Record<string, string>;
  origins: Map<string, string>;
  accounts: FileAccount[];
}

/**
 * JSON.parse's "at position N" (Node 20) as "at line L, column C", which an editor can go to.
 * Messages that name the line already (newer Node) are left as they are.
 */
export function withLineAndColumn(message: string, text: string): string {
  const match = /at position (\d+)(?: \(line \d+ column \d+\))?/.exec(message);
  if (match === null) return message;
  const before = text.slice(0, Number(match[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return message.replace(match[0], `at line ${line}, column ${column}`);
}

function parseConfigFile(
  file: ConfigFile,
  problems: ConfigProblem[],
  keys: Readonly<Record<string, string>>,
): ParsedConfigFile | undefined {
  const where = (path: string) => `${file.path}: ${path}`;
  const depth = jsonNestingDepth(file.text, CONFIG_FILE_MAX_DEPTH);
  if (depth > CONFIG_FILE_MAX_DEPTH) {
    problems.push({
      key: 'TELESYNC_CONFIG',
      message: `${file.path} is nested deeper than ${CONFIG_FILE_MAX_DEPTH} levels; a telesync config file has at most 3 (see the README)`,
    });
    return undefined;
  }
  let root: unknown;
  try {
    root = JSON.parse(file.text);
  } catch (error) {
    problems.push({
      key: 'TELESYNC_CONFIG',
      message: `${file.path} is not valid JSON: ${withLineAndColumn((error as Error).message, file.text)}`,
    });
    return undefined;
  }
  if (root === null || typeof root !== 'object' || Array.isArray(root)) {
    problems.push({ key: 'TELESYNC_CONFIG', message: `${file.path} must hold a JSON object` });
    return undefined;
  }
  const variables: Record<string, string> = {};
  const origins = new Map<string, string>();
  const accounts: FileAccount[] = [];
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
    // Own keys only: `constructor`, `toString` or `__proto__` must not find Object's members.
    const variable = Object.hasOwn(keys, path) ? keys[path] : undefined;
    if (variable === undefined) {
      problems.push({
        key: where(path),
        message: `unknown setting; known: accounts, ${Object.keys(keys).join(', ')}`,
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

/** Deeper than this, a config file is refused before it is parsed (its settings are 3 deep). */
const CONFIG_FILE_MAX_DEPTH = 32;

/**
 * How deep the brackets of `text` nest, outside strings, counted up to just past `limit`: a file
 * nested 100,000 levels would otherwise exhaust the stack of whatever walks it.
 */
function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
    } else if (char === '{' || char === '[') {
      depth++;
      deepest = Math.max(deepest, depth);
      if (depth > limit) return depth;
    } else if (char === '}' || char === ']') {
      depth--;
    }
  }
  return deepest;
}

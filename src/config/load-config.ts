import { ConfigError, type ConfigProblem } from './config-errors.js';
import { mergeConfigSources, type ConfigFile, type Env } from './config-sources.js';
import type { TelesyncConfig } from './config-types.js';
import {
  readAccountConcurrency,
  readJobSettings,
  readApiSettings,
  readDatabaseSettings,
  readHorizonAlarmSettings,
  readLogLevel,
  readScheduleConfig,
  readStreamCallbackSettings,
  readSyncSettings,
} from './component-settings.js';
import { EnvReader } from './env-reader.js';
import { readAccounts } from './read-accounts.js';
import type { StreamScheduleDefault } from '../scheduler/schedule-settings.js';
import { STREAMS } from '../sync/stream-registry.js';

// Scripts and tests name defaults and variables through the entry point of config.
export { CONFIG_DEFAULTS, scheduleVariable } from './config-defaults.js';
export { readConfigFile, readDotEnv, type ConfigFile, type Env } from './config-sources.js';

/**
 * Builds telesync's configuration from environment variables and, when given, the JSON config
 * file (the environment wins over the file). The only reader of the environment: everything else
 * receives its part of the result. Every problem is collected and reported together. `streams`
 * (default: the registry) are the streams whose schedule it reads, TELESYNC_SCHEDULE_<NAME> each.
 */
export function loadConfig(
  env: Env,
  file?: ConfigFile,
  streams: readonly StreamScheduleDefault[] = STREAMS,
): TelesyncConfig {
  const problems: ConfigProblem[] = [];
  const sources = mergeConfigSources(
    env,
    file,
    problems,
    streams.map((stream) => stream.name),
  );
  const reader = new EnvReader(sources.variables, problems, sources.origins);

  // Read in this order so that problems are listed in it.
  const database = readDatabaseSettings(reader);
  const logLevel = readLogLevel(reader);
  const accounts = readAccounts(reader, sources.fileAccounts, problems);
  const api = readApiSettings(reader);
  const sync = readSyncSettings(reader);
  const config: TelesyncConfig = {
    database,
    accounts,
    api,
    accountConcurrency: readAccountConcurrency(reader, accounts.length, sync.batchSize),
    sync,
    jobs: readJobSettings(reader),
    schedule: readScheduleConfig(reader, streams),
    callbacks: readStreamCallbackSettings(reader),
    horizonAlarm: readHorizonAlarmSettings(reader),
    logLevel,
    configFile: file?.path,
  };

  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

import type { Env } from '../config/config-sources.js';
import { readConfigFile, readDotEnv } from '../config/config-sources.js';
import type { TelesyncConfig } from '../config/config-types.js';
import { loadConfig } from '../config/load-config.js';
import type { StreamScheduleDefault } from '../scheduler/schedule-settings.js';
import { STREAMS } from '../sync/stream-registry.js';

/**
 * The configuration of this process: the environment, over `.env` in `cwd`, over the file
 * TELESYNC_CONFIG names, with a schedule for each of `streams` (default: the registry). Throws
 * ConfigError listing every problem.
 */
export function loadProcessConfig(
  env: Env,
  cwd: string,
  streams: readonly StreamScheduleDefault[] = STREAMS,
): TelesyncConfig {
  const merged = readDotEnv(env, cwd);
  return loadConfig(merged, readConfigFile(merged, cwd), streams);
}

import type { TelesyncConfig } from '../config/config-types.js';
import { loadConfig, readConfigFile, readDotEnv } from '../config/load-config.js';
import { openDatabase, type Database } from '../db/connect.js';
import type { CliIo } from './cli-io.js';
import type { ExitCode } from './exit-codes.js';

/**
 * What every command gets: the outside world, the configuration (loaded once, on first use, so
 * that `--help` works without any), and a way to open the database and always close it.
 */
export interface CommandContext {
  readonly io: CliIo;
  config(): TelesyncConfig;
  withDatabase<T>(command: string, use: (database: Database) => Promise<T>): Promise<T>;
  setExit(code: ExitCode): void;
}

export function createCommandContext(io: CliIo, onExit: (code: ExitCode) => void): CommandContext {
  let config: TelesyncConfig | undefined;
  const context: CommandContext = {
    io,
    config: () => {
      if (config === undefined) {
        const env = readDotEnv(io.env, io.cwd);
        config = loadConfig(env, readConfigFile(env, io.cwd));
      }
      return config;
    },
    async withDatabase(command, use) {
      const database = await openDatabase(context.config().database, {
        command: `telesync ${command}`,
      });
      try {
        return await use(database);
      } finally {
        await database.close();
      }
    },
    setExit: onExit,
  };
  return context;
}

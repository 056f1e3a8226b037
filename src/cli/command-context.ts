import { createCommandApp, type CommandApp } from '../app/command-app.js';
import type { LogSink } from '../app/app-services.js';
import { loadProcessConfig } from '../app/load-process-config.js';
import type { TelesyncConfig } from '../config/config-types.js';
import type { CliIo } from './cli-io.js';
import type { ExitCode } from './exit-codes.js';

/**
 * What every command gets: the outside world, the configuration (loaded once, on first use, so
 * that `--help` works without any), and the application built from it.
 */
export interface CommandContext {
  readonly io: CliIo;
  config(): TelesyncConfig;
  /**
   * The application of `command` (`sync`, `lookup messages`…), built from the configuration, or
   * from `config` when the command runs with one of its own (the demo).
   */
  app(command: string, config?: TelesyncConfig): CommandApp;
  /** Log lines to stderr, readable on a terminal. */
  readonly logSink: LogSink;
  setExit(code: ExitCode): void;
}

/** The context of one `telesync` invocation; `onExit` receives the exit code a command sets. */
export function createCommandContext(io: CliIo, onExit: (code: ExitCode) => void): CommandContext {
  let config: TelesyncConfig | undefined;
  const logSink: LogSink = { pretty: io.isTty, write: (line) => io.err(line) };
  const context: CommandContext = {
    io,
    config: () => (config ??= loadProcessConfig(io.env, io.cwd)),
    app: (command, own) => createCommandApp(own ?? context.config(), { command, logSink }),
    logSink,
    setExit: onExit,
  };
  return context;
}

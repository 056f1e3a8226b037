import { createCommandApp, type CommandApp } from '../app/command-app.js';
import type { LogSink } from '../app/app-services.js';
import { loadProcessConfig } from '../app/load-process-config.js';
import type { TelesyncConfig } from '../config/config-types.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import type { CliIo } from './cli-io.js';
import type { ExitCode } from './exit-codes.js';

/**
 * What every command gets: the outside world, the configuration (loaded once, on first use, so
 * that `--help` works without any), and the application built from it.
 */
export interface CommandContext {
  readonly io: CliIo;
  /** The streams the commands name, schedule, run and show (the registry's). */
  readonly streams: readonly StreamDefinition[];
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
export function createCommandContext(
  io: CliIo,
  onExit: (code: ExitCode) => void,
  streams: readonly StreamDefinition[],
): CommandContext {
  let config: TelesyncConfig | undefined;
  const logSink: LogSink = { pretty: io.isTty, write: (line) => io.err(line) };
  const context: CommandContext = {
    io,
    streams,
    config: () => (config ??= loadProcessConfig(io.env, io.cwd, streams)),
    app: (command, own) => createCommandApp(own ?? context.config(), { command, logSink, streams }),
    logSink,
    setExit: onExit,
  };
  return context;
}

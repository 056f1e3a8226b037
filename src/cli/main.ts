import { Command, CommanderError } from 'commander';
import { SchemaNotMigratedError } from '../app/app-services.js';
import { ConfigError } from '../config/config-errors.js';
import { DatabaseUnreachableError } from '../db/connect.js';
import { EmbeddedDatabaseBusyError } from '../db/embedded-lock.js';
import { describeError } from '../util/coerce-error.js';
import { TELESYNC_VERSION } from '../version.js';
import { processIo, type CliIo } from './cli-io.js';
import { createCommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { registerBackfillCommand } from './backfill-command.js';
import { registerDemoCommand } from './demo-command.js';
import { registerLookupCommand } from './lookup-command.js';
import { registerMigrateCommand } from './migrate-command.js';
import { registerScheduleCommand } from './schedule-command.js';
import { registerStateCommand } from './state-command.js';
import { registerStatusCommand } from './status-command.js';
import { registerStreamCommand } from './stream-command.js';
import { registerSyncCommand } from './sync-command.js';
import { registerVerifyCommand } from './verify-command.js';
import { registerWorkerCommand } from './worker-command.js';
import { registerSimulateCommand } from './simulate-command.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { STREAMS } from '../sync/stream-registry.js';
import { writeNotice } from './notice.js';

/**
 * Runs the `telesync` command line and returns its exit code. Never throws: every failure is
 * printed as a message that says what to do, and mapped to an exit code (0 done, 1 failed run,
 * 2 bad usage or configuration). `streams` (default: the registry) are the streams its commands
 * name, schedule, run and show.
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo = processIo(),
  streams: readonly StreamDefinition[] = STREAMS,
): Promise<ExitCode> {
  let exitCode: ExitCode = EXIT.OK;
  const context = createCommandContext(io, (code) => (exitCode = code), streams);
  const program = new Command('telesync')
    .description('Keeps a PostgreSQL database in step with a cloud telephony account.')
    .version(TELESYNC_VERSION, '-V, --version')
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) });
  registerMigrateCommand(program, context);
  registerSyncCommand(program, context);
  registerBackfillCommand(program, context);
  registerScheduleCommand(program, context);
  registerWorkerCommand(program, context);
  registerStatusCommand(program, context);
  registerStateCommand(program, context);
  registerVerifyCommand(program, context);
  registerLookupCommand(program, context);
  registerStreamCommand(program, context);
  registerDemoCommand(program, context);
  registerSimulateCommand(program, context);

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    return reportFailure(error, io);
  }
}

function reportFailure(error: unknown, io: CliIo): ExitCode {
  if (error instanceof CommanderError) {
    // Help and version are "errors" only to commander.
    if (error.exitCode === 0) return EXIT.OK;
    return EXIT.USAGE;
  }
  if (
    error instanceof ConfigError ||
    error instanceof UsageError ||
    error instanceof SchemaNotMigratedError
  ) {
    io.err(error.message);
    return EXIT.USAGE;
  }
  if (error instanceof EmbeddedDatabaseBusyError || error instanceof DatabaseUnreachableError) {
    writeNotice(io, 'error', error.message);
    return EXIT.FAILED;
  }
  writeNotice(io, 'error', `telesync failed: ${describeError(error)}`);
  return EXIT.FAILED;
}

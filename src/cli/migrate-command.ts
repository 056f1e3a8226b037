import type { Command } from 'commander';
import { listMigrationStatus, migrateToLatest } from '../db/migrate.js';
import { createWorkersTable } from '../db/repositories/job-queue-repository.js';
import { jobSchemaName } from '../jobs/job-settings.js';
import { installJobSchema } from '../jobs/pg-boss-queue.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';

export function registerMigrateCommand(program: Command, context: CommandContext): void {
  program
    .command('migrate')
    .description("create or update telesync's tables in the database")
    .option('--status', 'list the migrations and whether each is applied, without applying any')
    .addHelpText(
      'after',
      '\nExamples:\n  $ telesync migrate            # apply what is pending\n  $ telesync migrate --status   # show what is applied',
    )
    .action(async (options: { status?: boolean }) => {
      context.setExit(await runMigrate(context, options.status === true));
    });
}

async function runMigrate(context: CommandContext, statusOnly: boolean): Promise<ExitCode> {
  const app = context.app('migrate');
  return app.withDatabase(async (database) => {
    const { io } = context;
    if (statusOnly) {
      const statuses = await listMigrationStatus(database);
      for (const status of statuses) {
        io.out(
          `${status.executedAt === undefined ? 'pending ' : 'applied '} ${status.name}${status.executedAt ? `  (${status.executedAt})` : ''}`,
        );
      }
      const pending = statuses.filter((status) => status.executedAt === undefined).length;
      io.out(
        `${statuses.length - pending} applied, ${pending} pending in schema "${database.schema}" at ${database.location}`,
      );
      return EXIT.OK;
    }
    const applied = await migrateToLatest(database);
    for (const name of applied) io.out(`applied  ${name}`);
    const { url, schema } = app.config.database;
    if (url !== undefined) {
      // The workers' queue (pg-boss) lives beside the data, in a schema of its own.
      const installed = await installJobSchema({
        connectionString: url,
        schema: jobSchemaName(schema),
        database,
        onError: (error) => app.log.warn({ err: error }, 'job queue schema: ' + error.message),
      });
      await createWorkersTable(database.root, jobSchemaName(schema));
      if (installed.remade)
        io.out(
          `Job queue schema "${jobSchemaName(schema)}" was of pg-boss 10: made anew for pg-boss 12, ` +
            `${installed.carriedOver} jobs not yet done carried over.`,
        );
      io.out(`Job queue schema "${jobSchemaName(schema)}" is ready (pg-boss).`);
    }
    io.out(
      applied.length === 0
        ? `Schema "${database.schema}" at ${database.location} is up to date; nothing to apply.`
        : `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to schema "${database.schema}" at ${database.location}.`,
    );
    return EXIT.OK;
  });
}

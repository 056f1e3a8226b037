import type { Command } from 'commander';
import { pingDatabase } from '../db/connect.js';
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
    // The first command a user runs: a database that is missing or down is said with what to check.
    await pingDatabase(database);
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
    const { url, schema } = app.config.database;
    // The workers' queue (pg-boss) lives beside the data, in a schema of its own; it is created
    // under the migration lock too, so replicas that migrate at once do not collide there either.
    let queueRemade: { carriedOver: number } | undefined;
    const installQueue =
      url === undefined
        ? undefined
        : async (locked: Parameters<typeof createWorkersTable>[0]): Promise<void> => {
            const installed = await installJobSchema({
              connectionString: url,
              schema: jobSchemaName(schema),
              database,
              onError: (error) =>
                app.log.warn({ err: error }, 'job queue schema: ' + error.message),
              streams: context.streams.map((stream) => stream.name),
            });
            await createWorkersTable(locked, jobSchemaName(schema));
            if (installed.remade) queueRemade = { carriedOver: installed.carriedOver };
          };
    const applied = await migrateToLatest(database, undefined, installQueue);
    for (const name of applied) io.out(`applied  ${name}`);
    if (queueRemade !== undefined)
      io.out(
        `Job queue schema "${jobSchemaName(schema)}" was of pg-boss 10: made anew for pg-boss 12, ` +
          `${queueRemade.carriedOver} jobs not yet done carried over.`,
      );
    if (installQueue !== undefined)
      io.out(`Job queue schema "${jobSchemaName(schema)}" is ready (pg-boss).`);
    io.out(
      applied.length === 0
        ? `Schema "${database.schema}" at ${database.location} is up to date; nothing to apply.`
        : `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to schema "${database.schema}" at ${database.location}.`,
    );
    return EXIT.OK;
  });
}

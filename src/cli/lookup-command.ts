import type { Command } from 'commander';
import { findLookupOutcomes } from '../db/repositories/lookup-outcomes-repository.js';
import { enqueueLookups } from '../db/repositories/lookup-queue-repository.js';
import type { StreamName } from '../domain/streams.js';
import { findStream } from '../sync/stream-registry.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { formatRunLine, runJson } from './run-report.js';
import { isUuid } from './user-input.js';

interface LookupOptions {
  account?: string;
  json?: boolean;
}

/** The stream each lookup subcommand fills the queue of, and what its arguments are. */
const LOOKUPS = {
  messages: { stream: 'messages', noun: 'message UUID' },
  streams: { stream: 'call_streams', noun: 'call UUID' },
} as const satisfies Record<string, { stream: StreamName; noun: string }>;

export function registerLookupCommand(program: Command, context: CommandContext): void {
  const lookup = program
    .command('lookup')
    .description('queue message or call UUIDs for lookup and fetch them now')
    .addHelpText(
      'after',
      '\nExamples:\n  $ telesync lookup messages 8a1c7c6e-3f3e-4b8e-9d60-1f2a3b4c5d6e\n  $ telesync lookup streams 4b693119-23dc-431f-ac78-f6765fa5ffbe',
    );
  lookup
    .command('messages')
    .description('fetch message detail records (and the sender packs they use) by message UUID')
    .argument('<uuid...>', 'message UUIDs')
    .option(
      '--account <auth_id>',
      'the configured account the messages belong to (default: the only one)',
    )
    .option('--json', 'print one JSON object per run')
    .addHelpText(
      'after',
      '\nUnknown UUIDs end as not_found in message_refs; other systems may insert into message_refs too.\n\nExample:\n  $ telesync lookup messages 8a1c7c6e-3f3e-4b8e-9d60-1f2a3b4c5d6e',
    )
    .action(async (uuids: string[], options: LookupOptions) => {
      context.setExit(await runLookup(context, 'messages', uuids, options));
    });
  lookup
    .command('streams')
    .description('fetch the audio-stream records of calls by call UUID')
    .argument('<call_uuid...>', 'call UUIDs')
    .option(
      '--account <auth_id>',
      'the configured account the calls belong to (default: the only one)',
    )
    .option('--json', 'print one JSON object per run')
    .addHelpText(
      'after',
      '\nExample:\n  $ telesync lookup streams 4b693119-23dc-431f-ac78-f6765fa5ffbe',
    )
    .action(async (uuids: string[], options: LookupOptions) => {
      context.setExit(await runLookup(context, 'streams', uuids, options));
    });
}

async function runLookup(
  context: CommandContext,
  kind: keyof typeof LOOKUPS,
  uuids: readonly string[],
  options: LookupOptions,
): Promise<ExitCode> {
  const { noun } = LOOKUPS[kind];
  const definition = findStream(context.streams, LOOKUPS[kind].stream);
  if (definition?.state.kind !== 'queue')
    throw new Error(`${LOOKUPS[kind].stream} has no lookup queue`);
  const lookup = {
    noun,
    queue: definition.state.queue,
    // The stream, then the ones its rows queue keys for.
    streams: [definition.name, ...(definition.feeds ?? [])],
  };
  const invalid = uuids.filter((uuid) => !isUuid(uuid));
  if (invalid.length > 0) {
    throw new UsageError(
      `not a ${lookup.noun}: ${invalid.map((uuid) => `"${uuid}"`).join(', ')} (expected the form 8a1c7c6e-3f3e-4b8e-9d60-1f2a3b4c5d6e)`,
    );
  }
  const app = context.app(`lookup ${kind}`);
  const accounts = app.selectAccounts(options.account);
  if (accounts.length > 1) {
    throw new UsageError(
      `several accounts are configured; say which one the UUIDs belong to with --account (${accounts.map((a) => a.authId).join(', ')})`,
    );
  }
  const account = accounts[0]!;
  return app.withSync([account], async ({ database, clients, runStream }) => {
    const queued = await enqueueLookups(
      database.db,
      lookup.queue,
      account.authId,
      uuids.map((uuid) => uuid.toLowerCase()),
      'cli',
      { retry: true },
    );
    if (options.json !== true)
      context.io.out(
        `queued ${queued} ${lookup.noun}${queued === 1 ? '' : 's'} in ${lookup.queue.table}`,
      );
    let failed = false;
    for (const stream of lookup.streams) {
      const result = await runStream(clients[0]!, {
        stream,
        command: `lookup ${kind}`,
        lockWaitMs: 60_000,
      });
      context.io.out(
        options.json === true ? JSON.stringify(runJson(result)) : formatRunLine(result),
      );
      failed ||= result.status === 'failed';
    }
    if (options.json !== true) {
      const outcomes = await findLookupOutcomes(
        database.db,
        database.schema,
        lookup.queue,
        account.authId,
        uuids.map((uuid) => uuid.toLowerCase()),
      );
      for (const row of outcomes) {
        context.io.out(
          `  ${row.key}  ${row.status}${row.lastError !== null && row.status !== 'fetched' ? `: ${row.lastError}` : ''}`,
        );
      }
    }
    return failed ? EXIT.FAILED : EXIT.OK;
  });
}

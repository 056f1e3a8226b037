import type { Command } from 'commander';
import {
  isStreamName,
  STREAM_DESCRIPTIONS,
  STREAM_NAMES,
  type StreamName,
} from '../sync/streams.js';
import { runStream, type SyncResult } from '../sync/sync-runner.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { formatRunLine, runJson } from './run-report.js';
import {
  createAccountClients,
  createCliLogger,
  selectAccounts,
  syncDependencies,
} from './service-context.js';
import { onShutdownSignal } from './shutdown.js';

/** How long `--wait` waits for another run of the same stream before giving up. */
const LOCK_WAIT_MS = 6 * 60 * 60 * 1000;

export function registerSyncCommand(program: Command, context: CommandContext): void {
  program
    .command('sync')
    .description('bring the database up to date with the service, stream by stream')
    .argument('[stream...]', `streams to sync, in order (default: all): ${STREAM_NAMES.join(', ')}`)
    .option('--account <auth_id>', 'only this configured account')
    .option(
      '--wait',
      'wait for a run of the same stream in progress elsewhere, instead of skipping',
    )
    .option('--json', 'print one JSON object per run instead of text')
    .addHelpText(
      'after',
      `\nStreams:\n${STREAM_NAMES.map((name) => `  ${name.padEnd(13)}${STREAM_DESCRIPTIONS[name]}`).join('\n')}\n\n` +
        'Examples:\n  $ telesync sync                   # every stream\n  $ telesync sync trunk_calls       # just the call records\n  $ telesync sync messages powerpacks --json',
    )
    .action(
      async (streams: string[], options: { account?: string; wait?: boolean; json?: boolean }) => {
        context.setExit(await runSync(context, parseStreams(streams), options));
      },
    );
}

/** The streams named on the command line, or all; an unknown name lists the known ones. */
export function parseStreams(names: readonly string[]): StreamName[] {
  if (names.length === 0) return [...STREAM_NAMES];
  const unknown = names.filter((name) => !isStreamName(name));
  if (unknown.length > 0) {
    throw new UsageError(
      `unknown stream${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}; the streams are: ${STREAM_NAMES.join(', ')}`,
    );
  }
  return [...new Set(names)] as StreamName[];
}

async function runSync(
  context: CommandContext,
  streams: readonly StreamName[],
  options: { account?: string; wait?: boolean; json?: boolean },
): Promise<ExitCode> {
  const config = context.config();
  const accounts = selectAccounts(config, options.account);
  return context.withDatabase('sync', async (database) => {
    const log = createCliLogger(config, context.io);
    const { clients, close } = createAccountClients(config, accounts, log);
    const shutdown = onShutdownSignal(() =>
      context.io.err('stopping after the batch in hand… (press Ctrl-C again to force)'),
    );
    const results: SyncResult[] = [];
    try {
      for (const client of clients) {
        for (const stream of streams) {
          if (shutdown.signal.aborted) break;
          const result = await runStream(syncDependencies(config, database, log), client, {
            stream,
            command: 'sync',
            lockWaitMs: options.wait === true ? LOCK_WAIT_MS : 0,
            signal: shutdown.signal,
            onWait: () =>
              context.io.err(
                `${stream}: another telesync run of this stream is in progress; waiting for it (--wait)`,
              ),
          });
          results.push(result);
          context.io.out(
            options.json === true ? JSON.stringify(runJson(result)) : formatRunLine(result),
          );
        }
      }
    } finally {
      shutdown.dispose();
      await close();
    }
    if (shutdown.signal.aborted) return EXIT.FAILED;
    return results.some((result) => result.status === 'failed') ? EXIT.FAILED : EXIT.OK;
  });
}

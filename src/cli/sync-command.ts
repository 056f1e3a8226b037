import type { Command } from 'commander';
import type { StreamName } from '../domain/streams.js';
import type { SyncResult } from '../sync/run-stream.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { findStream } from '../sync/stream-registry.js';
import { epochMicrosFromMillis } from '../util/micros.js';
import { formatPreview, formatRunLine, previewJson, runJson } from './run-report.js';
import { onShutdownSignal } from './shutdown.js';
import { writeNotice } from './notice.js';

/** How long `--wait` waits for another run of the same stream before giving up. */
const LOCK_WAIT_MS = 6 * 60 * 60 * 1000;

export function registerSyncCommand(program: Command, context: CommandContext): void {
  program
    .command('sync')
    .description('bring the database up to date with the service, stream by stream')
    .argument(
      '[stream...]',
      `streams to sync, in order (default: all): ${context.streams.map((stream) => stream.name).join(', ')}`,
    )
    .option('--account <auth_id>', 'only this configured account')
    .option(
      '--wait',
      'wait for a run of the same stream in progress elsewhere, instead of skipping',
    )
    .option('--json', 'print one JSON object per run instead of text')
    .option(
      '--dry-run',
      'print what each run would read and what it costs, from the ledger; change nothing',
    )
    .addHelpText(
      'after',
      `\nStreams:\n${context.streams.map((stream) => `  ${stream.name.padEnd(13)}${stream.description}`).join('\n')}\n\n` +
        'Examples:\n  $ telesync sync                   # every stream\n  $ telesync sync trunk_calls       # just the call records\n  $ telesync sync messages powerpacks --json\n  $ telesync sync trunk_calls --dry-run',
    )
    .action(async (streams: string[], options: SyncOptions) => {
      context.setExit(
        options.dryRun === true
          ? await previewRuns(context, parseStreams(streams, context.streams), options)
          : await runSync(
              context,
              parseStreams(streams, context.streams).map((stream) => stream.name),
              options,
            ),
      );
    });
}

interface SyncOptions {
  account?: string;
  wait?: boolean;
  json?: boolean;
  dryRun?: boolean;
}

/** `--dry-run`: the plan of each run, from the ledger and queues; nothing sent, nothing written. */
async function previewRuns(
  context: CommandContext,
  streams: readonly StreamDefinition[],
  options: SyncOptions,
): Promise<ExitCode> {
  const app = context.app('sync');
  const accounts = app.selectAccounts(options.account);
  const maxRps = app.config.api.maxRps;
  const now = epochMicrosFromMillis(Date.now());
  return app.withMigratedDatabase(async (database) => {
    if (options.json !== true)
      writeNotice(
        context.io,
        'info',
        'dry run: nothing is sent to the service and nothing is written',
      );
    for (const account of accounts) {
      for (const stream of streams) {
        const preview = await stream.preview(database, account.authId, app.config.sync, now, {
          kind: 'sync',
        });
        context.io.out(
          options.json === true
            ? JSON.stringify(previewJson(preview, maxRps))
            : formatPreview(preview, maxRps),
        );
      }
    }
    return EXIT.OK;
  });
}

/**
 * The streams of `known` (the registry's) named on the command line, in its order, or all of
 * them; an unknown name lists the known ones.
 */
export function parseStreams(
  names: readonly string[],
  known: readonly StreamDefinition[],
): StreamDefinition[] {
  if (names.length === 0) return [...known];
  const unknown = names.filter((name) => findStream(known, name) === undefined);
  if (unknown.length > 0) {
    throw new UsageError(
      `unknown stream${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}; the streams are: ${known.map((stream) => stream.name).join(', ')}`,
    );
  }
  return [...new Set(names)].map((name) => findStream(known, name)!);
}

async function runSync(
  context: CommandContext,
  streams: readonly StreamName[],
  options: SyncOptions,
): Promise<ExitCode> {
  const app = context.app('sync');
  const accounts = app.selectAccounts(options.account);
  return app.withSync(accounts, async ({ runStream, forEachAccount }) => {
    const shutdown = onShutdownSignal(() =>
      writeNotice(
        context.io,
        'warn',
        'stopping after the batch in hand… (press Ctrl-C again to force)',
      ),
    );
    const results: SyncResult[] = [];
    try {
      // Accounts side by side (each has its own transport and budget; a first sync reads the
      // whole horizon, as a backfill does); one account's streams in turn, so its budget is never
      // shared by two runs.
      await forEachAccount(async (client) => {
        // Once the service refuses the account's credentials, its other streams are not tried:
        // each would fail the same way, with a request and an error of its own.
        let refusedIn: StreamName | undefined;
        for (const stream of streams) {
          if (shutdown.signal.aborted) break;
          const result = await runStream(client, {
            stream,
            command: 'sync',
            ...(refusedIn === undefined ? {} : { credentialsRefusedIn: refusedIn }),
            lockWaitMs: options.wait === true ? LOCK_WAIT_MS : 0,
            signal: shutdown.signal,
            onWait: () =>
              writeNotice(
                context.io,
                'info',
                `${stream}: another telesync run of this stream is in progress; waiting for it (--wait)`,
              ),
          });
          if (result.credentialsRefused === true) refusedIn ??= stream;
          results.push(result);
          context.io.out(
            options.json === true ? JSON.stringify(runJson(result)) : formatRunLine(result),
          );
        }
      });
    } finally {
      shutdown.dispose();
    }
    if (shutdown.signal.aborted) return EXIT.FAILED;
    const skipped = results.filter(
      (result) => result.status === 'skipped' && result.credentialsRefused !== true,
    );
    if (skipped.length > 0) {
      // A skipped run read nothing: a script must not take it for a sync that happened.
      writeNotice(
        context.io,
        'warn',
        `not synced: ${skipped.map((result) => `${result.stream} (${result.accountId})`).join(', ')}, ` +
          'another run held the lock; run again later, or with --wait to wait for it',
      );
    }
    return results.some((result) => result.status === 'failed' || result.status === 'skipped')
      ? EXIT.FAILED
      : EXIT.OK;
  });
}

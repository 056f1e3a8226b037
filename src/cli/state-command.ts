import type { Command } from 'commander';
import type { CommandApp } from '../app/command-app.js';
import { LockBusyError } from '../db/advisory-lock.js';
import type { Database } from '../db/connect.js';
import { findKnownAccounts } from '../db/repositories/status-repository.js';
import {
  findStreamState,
  forgetAccount,
  previewForgetAccount,
  resetStreamState,
  type StateResetOutcome,
  type StreamState,
} from '../sync/stream-state.js';
import { epochMicrosFromMillis, fixIsoText, formatIsoMicros } from '../util/micros.js';
import { findVerificationSummaries } from '../db/repositories/day-verifications-repository.js';
import { retrievableSinceDay } from '../domain/verify-days.js';
import { formatVerificationLine, verificationJson } from './verify-command.js';
import { readPendingBackfills } from '../sync/pending-backfills.js';
import type { StreamDefinition } from '../sync/stream-definition.js';
import { findStream } from '../sync/stream-registry.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { INSTANT_FORMS, parseUserInstant } from './user-input.js';
import { writeNotice } from './notice.js';
import { plural } from './plural.js';

const number = new Intl.NumberFormat('en-US');

export function registerStateCommand(program: Command, context: CommandContext): void {
  const state = program
    .command('state')
    .description("inspect or reset a stream's sync state (watermark, window ledger, lookup queue)")
    .addHelpText(
      'after',
      '\nExamples:\n  $ telesync state show\n  $ telesync state show trunk_calls --json\n' +
        '  $ telesync state reset trunk_calls --from 2026-10-01',
    );
  state
    .command('show')
    .description('show, per account and stream, where the next run starts reading')
    .argument('[stream]', `one stream (default: all): ${streamNames(context)}`)
    .option('--account <auth_id>', 'only this account')
    .option('--json', 'print JSON for scripts')
    .addHelpText(
      'after',
      '\nShows the watermark, the window ledger (complete / incomplete / failed / planned, oldest and\n' +
        'newest, last read), the cursor (an unfinished backfill) and the lookup queues. Needs no credentials.\n\n' +
        'Examples:\n  $ telesync state show\n  $ telesync state show trunk_calls --json',
    )
    .action(async (stream: string | undefined, options: { account?: string; json?: boolean }) => {
      context.setExit(await runStateShow(context, parseOneStream(context, stream), options));
    });
  state
    .command('reset')
    .description('make the next run read a stream again from a point; data rows are kept')
    .argument('<stream>', streamNames(context))
    .option('--account <auth_id>', 'only this account (default: every account)')
    .option('--from <time>', `re-read from here (${INSTANT_FORMS}); default: everything`)
    .option('--yes', 'do not ask for confirmation (needed when not on a terminal)')
    .addHelpText(
      'after',
      '\ntrunk_calls: the watermark is set back to --from (cleared without it) and the ledger windows from\n' +
        'there on are marked to be read again. endpoints, caller_ids: the watermark is cleared (the next\n' +
        'snapshot is read in full anyway). messages, powerpacks, call_streams: the queue entries (requested\n' +
        'since --from) are put back to pending. Recorded in sync_runs as command "state reset".\n\n' +
        'Examples:\n  $ telesync state reset trunk_calls --from 2026-10-01\n' +
        '  $ telesync state reset messages --account MA_123 --yes',
    )
    .action(async (stream: string, options: { account?: string; from?: string; yes?: boolean }) => {
      const name = parseOneStream(context, stream);
      if (name === undefined) throw new UsageError('name the stream to reset');
      context.setExit(await runStateReset(context, name, options));
    });
  state
    .command('forget')
    .description(
      'remove what telesync keeps about an account (a mistyped TELESYNC_AUTH_ID); data rows only with --data',
    )
    .requiredOption('--account <auth_id>', 'the account to forget')
    .option('--data', 'remove its data rows too (calls, messages, endpoints…, rejected records)')
    .option('--yes', 'do not ask for confirmation (needed when not on a terminal)')
    .addHelpText(
      'after',
      "\nRemoves the account's sync state, window ledger, runs and lookup queues, so it leaves status and\n" +
        'state show. Its data rows stay unless --data. Without --yes off a terminal, it says what it would\n' +
        'remove and exits 2.\n\n' +
        'Examples:\n  $ telesync state forget --account MA_TYPO\n' +
        '  $ telesync state forget --account MA_TYPO --data --yes',
    )
    .action(async (options: { account: string; data?: boolean; yes?: boolean }) => {
      context.setExit(await runStateForget(context, options));
    });
}

async function runStateForget(
  context: CommandContext,
  options: { account: string; data?: boolean; yes?: boolean },
): Promise<ExitCode> {
  const app = context.app('state forget');
  const request = { accountId: options.account, data: options.data === true };
  return app.withMigratedDatabase(async (database) => {
    const rows = await previewForgetAccount(database, request);
    const total = rows.reduce((sum, entry) => sum + entry.rows, 0);
    if (total === 0) {
      context.io.out(
        `account ${request.accountId}: nothing to forget (no ${request.data ? 'rows' : 'bookkeeping'} of it)`,
      );
      return EXIT.OK;
    }
    const what =
      `remove ${rows
        .filter((entry) => entry.rows > 0)
        .map((entry) => `${plural(entry.rows, 'row')} of ${entry.table}`)
        .join(', ')} of account ${request.accountId}` +
      (request.data ? '' : '; its data rows are kept (--data removes them)');
    if (options.yes !== true) {
      if (context.io.confirm === undefined)
        throw new UsageError(`state forget would ${what}; add --yes to confirm`);
      if (!(await context.io.confirm(`This will ${what}. Go on?`))) {
        writeNotice(context.io, 'info', 'nothing changed');
        return EXIT.OK;
      }
    }
    try {
      const deleted = await forgetAccount(
        database,
        request,
        context.streams.map((stream) => stream.name),
      );
      const count = deleted.reduce((sum, entry) => sum + entry.rows, 0);
      context.io.out(
        `account ${request.accountId} forgotten: ${plural(count, 'row')} removed` +
          (request.data ? ', data included' : '; data rows kept'),
      );
    } catch (error) {
      if (!(error instanceof LockBusyError)) throw error;
      writeNotice(context.io, 'error', error.message);
      return EXIT.FAILED;
    }
    if (app.config.accounts.some((account) => account.authId === request.accountId))
      writeNotice(
        context.io,
        'warn',
        `note: ${request.accountId} is still configured: its next run starts afresh`,
      );
    return EXIT.OK;
  });
}

function streamNames(context: CommandContext): string {
  return context.streams.map((stream) => stream.name).join(', ');
}

function parseOneStream(
  context: CommandContext,
  name: string | undefined,
): StreamDefinition | undefined {
  if (name === undefined) return undefined;
  const stream = findStream(context.streams, name);
  if (stream === undefined) {
    throw new UsageError(`unknown stream "${name}"; the streams are: ${streamNames(context)}`);
  }
  return stream;
}

/** The accounts to show or reset: the one named, or every configured or known one. */
async function stateAccounts(
  app: CommandApp,
  database: Database,
  only: string | undefined,
): Promise<string[]> {
  if (only !== undefined) return [only];
  return [
    ...new Set([
      ...app.config.accounts.map((account) => account.authId),
      ...(await findKnownAccounts(database.db)),
    ]),
  ].sort();
}

async function runStateShow(
  context: CommandContext,
  stream: StreamDefinition | undefined,
  options: { account?: string; json?: boolean },
): Promise<ExitCode> {
  const app = context.app('state show');
  return app.withMigratedDatabase(async (database) => {
    const accounts = await stateAccounts(app, database, options.account);
    const streams = stream === undefined ? context.streams : [stream];
    const states: StreamState[] = [];
    for (const accountId of accounts) {
      for (const definition of streams)
        states.push(await findStreamState(database, accountId, definition));
    }
    const verifications = streams.some((definition) => definition.name === 'trunk_calls')
      ? await findVerificationSummaries(
          database.db,
          accounts,
          retrievableSinceDay(epochMicrosFromMillis(Date.now())),
        )
      : [];
    if (options.json === true) {
      context.io.out(
        JSON.stringify({
          streams: states.map(stateJson),
          verifications: verifications.map(verificationJson),
        }),
      );
      return EXIT.OK;
    }
    if (accounts.length === 0) {
      context.io.out('No account has been synced yet, and none is configured (TELESYNC_AUTH_ID).');
      return EXIT.OK;
    }
    for (const accountId of accounts) {
      context.io.out(`account ${accountId}`);
      for (const state of states.filter((candidate) => candidate.accountId === accountId)) {
        context.io.out(formatState(state));
        const verification = verifications.find((summary) => summary.accountId === accountId);
        if (state.stream === 'trunk_calls' && verification !== undefined)
          context.io.out(`${' '.repeat(15)}${formatVerificationLine(verification)}`);
      }
    }
    return EXIT.OK;
  });
}

/** The JSON of one stream's state: snake_case, timestamps with six fraction digits. */
export function stateJson(state: StreamState): Record<string, unknown> {
  return {
    account: state.accountId,
    stream: state.stream,
    watermark: fixIsoText(state.watermark),
    cursor: state.cursor,
    windows:
      state.windows === null
        ? null
        : {
            complete: state.windows.complete,
            incomplete: state.windows.incomplete,
            failed: state.windows.failed,
            planned: state.windows.planned,
            oldest: fixIsoText(state.windows.oldest),
            newest: fixIsoText(state.windows.newest),
            last_read_at: fixIsoText(state.windows.lastReadAt),
          },
    lookups: state.lookups,
  };
}

/** A few lines per stream, for people. Pure: for tests. */
export function formatState(state: StreamState): string {
  const lines = [`  ${state.stream.padEnd(13)}watermark ${state.watermark ?? '— (none yet)'}`];
  const indent = ' '.repeat(15);
  const { windows, lookups } = state;
  if (windows !== null) {
    const total = windows.complete + windows.incomplete + windows.failed + windows.planned;
    lines.push(
      total === 0
        ? `${indent}windows: none yet`
        : `${indent}windows: ${number.format(windows.complete)} complete, ${number.format(windows.incomplete)} incomplete, ` +
            `${number.format(windows.failed)} failed, ${number.format(windows.planned)} planned; ` +
            `${windows.oldest ?? '?'} to ${windows.newest ?? '?'}; last read ${windows.lastReadAt ?? 'never'}`,
    );
  }
  const backfills = readPendingBackfills(state.cursor);
  for (const backfill of backfills) {
    lines.push(
      `${indent}cursor: unfinished backfill of ${formatIsoMicros(backfill.range.start)} to ${formatIsoMicros(backfill.range.end)} ` +
        `(started ${formatIsoMicros(backfill.startedAt)}); the same backfill command resumes it`,
    );
  }
  if (backfills.length === 0 && Object.keys(state.cursor).length > 0) {
    lines.push(`${indent}cursor: ${JSON.stringify(state.cursor)}`);
  }
  if (lookups !== null) {
    lines.push(
      `${indent}queue: ${number.format(lookups.pending)} pending, ${number.format(lookups.fetched)} fetched, ` +
        `${number.format(lookups.not_found)} not_found, ${number.format(lookups.failed)} failed`,
    );
  }
  return lines.join('\n');
}

async function runStateReset(
  context: CommandContext,
  definition: StreamDefinition,
  options: { account?: string; from?: string; yes?: boolean },
): Promise<ExitCode> {
  const from = options.from === undefined ? undefined : parseUserInstant(options.from, '--from');
  const stream = definition.name;
  const kind = definition.state.kind;
  if (from !== undefined && kind === 'snapshot') {
    throw new UsageError(
      `${stream} is a full snapshot: it has no point to re-read from; drop --from (the next sync reads it all)`,
    );
  }
  const app = context.app('state reset');
  return app.withMigratedDatabase(async (database) => {
    const accounts = await stateAccounts(app, database, options.account);
    if (accounts.length === 0) {
      writeNotice(
        context.io,
        'warn',
        'No account has been synced yet, and none is configured: nothing to reset.',
      );
      return EXIT.OK;
    }
    const what =
      `reset the state of ${stream} for ${accounts.join(', ')}` +
      (from === undefined ? ' (everything is read again)' : ` from ${formatIsoMicros(from)} on`);
    if (options.yes !== true) {
      if (context.io.confirm === undefined) {
        throw new UsageError(
          `state reset would ${what}; not on a terminal, so it cannot ask: add --yes to confirm`,
        );
      }
      if (!(await context.io.confirm(`This will ${what}. Data rows are kept. Go on?`))) {
        writeNotice(context.io, 'info', 'nothing changed');
        return EXIT.OK;
      }
    }
    for (const accountId of accounts) {
      try {
        const outcome = await resetStreamState(database, {
          accountId,
          stream: definition,
          from,
        });
        context.io.out(formatResetOutcome(outcome));
      } catch (error) {
        if (!(error instanceof LockBusyError)) throw error;
        writeNotice(context.io, 'error', error.message);
        return EXIT.FAILED;
      }
    }
    return EXIT.OK;
  });
}

function formatResetOutcome(outcome: StateResetOutcome): string {
  const parts = [`watermark ${outcome.watermarkBefore ?? '—'} → ${outcome.watermarkAfter ?? '—'}`];
  if (outcome.kind === 'windows')
    parts.push(`${plural(outcome.windowsReopened, 'window')} to read again`);
  if (outcome.kind === 'queue')
    parts.push(`${plural(outcome.lookupsRequeued, 'lookup')} re-queued`);
  return `${outcome.stream} ${outcome.accountId}  reset (run ${outcome.runId}): ${parts.join(', ')}; data rows kept`;
}

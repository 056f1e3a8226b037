import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import type { Database } from '../db/connect.js';
import { deleteAccountRows } from '../db/repositories/account-data-repository.js';
import { findBillingSummary } from '../db/repositories/billing-repository.js';
import { enqueueLookups, MESSAGE_REFS } from '../db/repositories/lookup-queue-repository.js';
import { startSimulator } from '../simulator/simulator-server.js';
import type { StreamName } from '../domain/streams.js';
import type { SyncResult } from '../sync/run-stream.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';
import { HORIZON_MARGIN_MINUTES, lastDays } from '../sync/window-planner.js';
import { epochMicrosFromMillis } from '../util/micros.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { formatRunLine } from './run-report.js';
import { parseWholeNumber } from './user-input.js';

const DEMO_ACCOUNT = 'MA_DEMO';
const number = new Intl.NumberFormat('en-US');

export function registerDemoCommand(program: Command, context: CommandContext): void {
  program
    .command('demo')
    .description('run the whole job against a built-in simulated account, with no set-up')
    .option('--calls <n>', `calls in the simulated ${TRUNK_HISTORY_DAYS} days`, '30000')
    .option('--seed <text>', 'seed of the simulated data', 'telesync-demo')
    .addHelpText(
      'after',
      '\nStarts the simulator in this process, migrates the database (the embedded one unless DATABASE_URL\n' +
        `is set), backfills ${TRUNK_HISTORY_DAYS} days of calls, syncs endpoints and caller IDs, looks up some messages and their\n` +
        'sender packs, and prints a billing summary per day and direction. Needs no credentials.\n\nExample:\n  $ telesync demo            # or: npm run demo',
    )
    .action(async (options: { calls: string; seed: string }) => {
      context.setExit(
        await runDemo(
          context,
          parseWholeNumber(options.calls, '--calls', 100, 2_000_000),
          options.seed,
        ),
      );
    });
}

async function runDemo(context: CommandContext, calls: number, seed: string): Promise<ExitCode> {
  const { io } = context;
  const config = context.config();
  const token = `demo_${randomBytes(12).toString('hex')}`;
  const sim = await startSimulator({
    seed,
    calls,
    accounts: [{ authId: DEMO_ACCOUNT, authToken: token }],
  });
  const account = { authId: DEMO_ACCOUNT, authToken: token };
  // The demo's own configuration: the simulated account, served fast, and only warnings logged
  // (the runs' info lines would drown the demo's own output).
  const app = context.app('demo', {
    ...config,
    accounts: [account],
    api: { ...config.api, baseUrl: sim.url, maxRps: 2000 },
    logLevel: config.logLevel === 'info' ? 'warn' : config.logLevel,
  });
  try {
    io.out(
      `telesync demo: a simulated account ${DEMO_ACCOUNT} with ${number.format(calls)} calls over ${TRUNK_HISTORY_DAYS} days, served at ${sim.url}\n`,
    );
    return await app.withSync(
      [account],
      async ({ database, applied, clients, runStream }) => {
        io.out(
          `1. database: ${database.kind === 'embedded' ? 'embedded PostgreSQL (PGlite) in' : 'PostgreSQL at'} ${database.location}, schema "${database.schema}"`,
        );
        io.out(
          `   ${applied.length === 0 ? 'schema up to date' : `applied ${applied.join(', ')}`}`,
        );
        // Its data changes with the clock the simulator starts at: an earlier demo's would not match.
        if ((await deleteAccountRows(database.db, DEMO_ACCOUNT)) > 0)
          io.out(`   cleared the data of an earlier demo (account ${DEMO_ACCOUNT} only)`);

        const run = async (
          stream: StreamName,
          extra: { backfill?: ReturnType<typeof lastDays> } = {},
        ): Promise<SyncResult> => {
          const result = await runStream(clients[0]!, {
            stream,
            command: 'demo',
            lockWaitMs: 60_000,
            ...extra,
          });
          io.out(`   ${formatRunLine(result)}`);
          return result;
        };

        io.out(`2. backfill the last ${TRUNK_HISTORY_DAYS} days of trunk call records`);
        const backfill = await run('trunk_calls', {
          backfill: lastDays(epochMicrosFromMillis(Date.now()), TRUNK_HISTORY_DAYS),
        });
        const results = [backfill];
        const covered = backfill.backfill?.covered;
        if (covered !== undefined && backfill.status === 'succeeded') {
          // The calls of the newest minutes, which the backfill leaves to the next sync.
          const settling = await clients[0]!.countTrunkCalls({
            end_time: { gte: covered.end, lt: epochMicrosFromMillis(Date.now()) },
          });
          io.out(
            `   ${explainBackfillCount(backfill.stats.recordsFetched, calls, settling, config.sync.settleLagMinutes)}`,
          );
        }
        io.out('3. snapshot SIP endpoints and verified caller IDs');
        results.push(await run('endpoints'), await run('caller_ids'));

        io.out('4. look up messages by UUID, then the sender packs they use');
        const messageUuids = sim.dataset().accounts[0]!.exampleMessageUuids;
        await enqueueLookups(database.db, MESSAGE_REFS, DEMO_ACCOUNT, messageUuids, 'demo', {
          retry: true,
        });
        results.push(await run('messages'), await run('powerpacks'));

        io.out('\n5. billing, from the billing_daily view (last 7 UTC days, per direction)');
        io.out(await billingSummary(database, new Date().toISOString().slice(0, 10)));
        io.out(
          `\nThe data lives in ${database.location} (schema "${database.schema}"). ` +
            `Try: npx telesync status${database.kind === 'embedded' ? '' : `, or psql and SELECT * FROM ${database.schema}.billing_daily`}.` +
            '\nTo sync a real account: set TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN, then npx telesync sync (see README).',
        );
        return results.some((result) => result.status !== 'succeeded') ? EXIT.FAILED : EXIT.OK;
      },
      { migrate: true },
    );
  } finally {
    await sim.close();
  }
}

/**
 * Why a 90-day backfill of the demo's `total` calls fetched `fetched`: the calls of the last
 * minutes (`settling`, the settle lag) wait for the next sync, and the oldest minutes of the
 * horizon are kept as a margin (HORIZON_MARGIN_MINUTES). Pure: for tests.
 */
export function explainBackfillCount(
  fetched: number,
  total: number,
  settling: number,
  settleLagMinutes: number,
): string {
  const head = `${number.format(fetched)} of ${number.format(total)} calls`;
  if (fetched >= total) return `${head}: all of them`;
  const margin = Math.max(0, total - fetched - settling);
  const parts = [];
  if (settling > 0)
    parts.push(
      `${number.format(settling)} ended in the last ${settleLagMinutes} minutes (settle lag), read by the next sync`,
    );
  if (margin > 0)
    parts.push(
      `${number.format(margin)} ended in the oldest ${HORIZON_MARGIN_MINUTES} minutes of the ${TRUNK_HISTORY_DAYS} days ` +
        '(a margin so no request reaches past the horizon), which leave the service soon',
    );
  return `${head}: ${parts.join('; ')}`;
}

/**
 * A decimal text (numeric from the database) for people, exact: the whole part grouped by
 * thousands, the fraction kept digit for digit (never through a float), or with its trailing zeros
 * dropped when `trimZeros`.
 */
export function formatDecimalText(text: string, options: { trimZeros?: boolean } = {}): string {
  const match = /^([+-]?)(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (match === null) return text;
  const [, sign, whole, fraction = ''] = match;
  const grouped = whole!.replace(/\B(?=(\d{3})+$)/g, ',');
  const kept = options.trimZeros === true ? fraction.replace(/0+$/, '') : fraction;
  return `${sign}${grouped}${kept === '' ? '' : `.${kept}`}`;
}

async function billingSummary(database: Database, today: string): Promise<string> {
  const { days, totals } = await findBillingSummary(database.db, DEMO_ACCOUNT, 7);
  const table = [
    ['day', 'direction', 'calls', 'billed minutes', 'total amount'],
    ...days.map((row) => [
      // Today is not over: its figures grow until midnight UTC.
      row.day === today ? `${row.day} (today, partial)` : row.day,
      row.direction ?? '',
      number.format(row.calls),
      formatDecimalText(row.billedMinutes, { trimZeros: true }),
      formatDecimalText(row.totalAmount),
    ]),
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const lines = table.map(
    (row) =>
      `   ${row.map((cell, column) => (column >= 2 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ')}`,
  );
  return `${lines.join('\n')}\n   all ${TRUNK_HISTORY_DAYS} days: ${number.format(totals.calls)} calls, ${formatDecimalText(totals.billedMinutes, { trimZeros: true })} billed minutes, total amount ${formatDecimalText(totals.totalAmount)}`;
}

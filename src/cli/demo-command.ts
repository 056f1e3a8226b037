import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { sql } from 'kysely';
import { HttpTransport } from '../api/transport.js';
import { TelephonyClient } from '../api/telephony-client.js';
import type { TelesyncConfig } from '../config/config-types.js';
import type { Database } from '../db/connect.js';
import { migrateToLatest } from '../db/migrate.js';
import {
  enqueueLookups,
  QUEUE_KEY,
  type LookupQueue,
} from '../db/repositories/lookup-queue-repository.js';
import { DATA_TABLES } from '../db/table-specs.js';
import { startSimulator } from '../simulator/simulator-server.js';
import type { StreamName } from '../sync/streams.js';
import { runStream, type SyncResult } from '../sync/sync-runner.js';
import { HORIZON_DAYS, lastDays } from '../sync/window-planner.js';
import { epochMicrosFromMillis } from '../util/micros.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { formatRunLine } from './run-report.js';
import { createCliLogger, syncDependencies } from './service-context.js';
import { parseWholeNumber } from './user-input.js';

const DEMO_ACCOUNT = 'MA_DEMO';
const number = new Intl.NumberFormat('en-US');

export function registerDemoCommand(program: Command, context: CommandContext): void {
  program
    .command('demo')
    .description('run the whole job against a built-in simulated account, with no set-up')
    .option('--calls <n>', 'calls in the simulated 90 days', '30000')
    .option('--seed <text>', 'seed of the simulated data', 'telesync-demo')
    .addHelpText(
      'after',
      '\nStarts the simulator in this process, migrates the database (the embedded one unless DATABASE_URL\n' +
        'is set), backfills 90 days of calls, syncs endpoints and caller IDs, looks up some messages and their\n' +
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
  const demoConfig: TelesyncConfig = {
    ...config,
    accounts: [{ authId: DEMO_ACCOUNT, authToken: token }],
    api: { ...config.api, baseUrl: sim.url, maxRps: 2000 },
  };
  const log = createCliLogger(
    { ...demoConfig, logLevel: config.logLevel === 'info' ? 'warn' : config.logLevel },
    io,
  );
  const transport = new HttpTransport({
    baseUrl: sim.url,
    authId: DEMO_ACCOUNT,
    authToken: token,
    maxRps: demoConfig.api.maxRps,
    concurrency: demoConfig.api.concurrency,
    timeoutMs: demoConfig.api.timeoutMs,
    maxRetries: demoConfig.api.maxRetries,
  });
  const client = new TelephonyClient(transport, DEMO_ACCOUNT);
  try {
    io.out(
      `telesync demo: a simulated account ${DEMO_ACCOUNT} with ${number.format(calls)} calls over 90 days, served at ${sim.url}\n`,
    );
    return await context.withDatabase('demo', async (database) => {
      io.out(
        `1. database: ${database.kind === 'embedded' ? 'embedded PostgreSQL (PGlite) in' : 'PostgreSQL at'} ${database.location}, schema "${database.schema}"`,
      );
      const applied = await migrateToLatest(database);
      io.out(`   ${applied.length === 0 ? 'schema up to date' : `applied ${applied.join(', ')}`}`);
      if (await clearDemoAccount(database))
        io.out(`   cleared the data of an earlier demo (account ${DEMO_ACCOUNT} only)`);

      const deps = syncDependencies(demoConfig, database, log);
      const run = async (
        stream: StreamName,
        extra: { backfill?: ReturnType<typeof lastDays> } = {},
      ): Promise<SyncResult> => {
        const result = await runStream(deps, client, {
          stream,
          command: 'demo',
          lockWaitMs: 60_000,
          ...extra,
        });
        io.out(`   ${formatRunLine(result)}`);
        return result;
      };

      io.out(`2. backfill the last ${HORIZON_DAYS} days of trunk call records`);
      const results = [
        await run('trunk_calls', {
          backfill: lastDays(epochMicrosFromMillis(Date.now()), HORIZON_DAYS),
        }),
      ];
      io.out('3. snapshot SIP endpoints and verified caller IDs');
      results.push(await run('endpoints'), await run('caller_ids'));

      io.out('4. look up messages by UUID, then the sender packs they use');
      const messageUuids = sim.dataset().accounts[0]!.exampleMessageUuids;
      await enqueueLookups(database.db, 'message_refs', DEMO_ACCOUNT, messageUuids, 'demo', {
        retry: true,
      });
      results.push(await run('messages'), await run('powerpacks'));

      io.out('\n5. billing, from the billing_daily view (last 7 UTC days, per direction)');
      io.out(await billingSummary(database));
      io.out(
        `\nThe data lives in ${database.location} (schema "${database.schema}"). ` +
          `Try: npx telesync status${database.kind === 'embedded' ? '' : `, or psql and SELECT * FROM ${database.schema}.billing_daily`}.` +
          '\nTo sync a real account: set TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN, then npx telesync sync (see README).',
      );
      return results.some((result) => result.status !== 'succeeded') ? EXIT.FAILED : EXIT.OK;
    });
  } finally {
    await transport.close();
    await sim.close();
  }
}

/** Tables that hold rows of an account, bookkeeping last (runs are referenced by the others). */
const ACCOUNT_TABLES = [
  ...DATA_TABLES.map((spec) => spec.table),
  ...(Object.keys(QUEUE_KEY) as LookupQueue[]),
  'sync_state',
  'sync_windows',
  'rejected_records',
  'sync_runs',
] as const;

/**
 * Removes what an earlier demo stored for the simulated account (its data changes with the clock
 * it starts at). Touches that one synthetic account only. Returns whether there was anything.
 */
async function clearDemoAccount(database: Database): Promise<boolean> {
  let removed = 0;
  await database.db.transaction().execute(async (trx) => {
    for (const table of ACCOUNT_TABLES) {
      const result = await trx
        .deleteFrom(table)
        .where('account_id', '=', DEMO_ACCOUNT)
        .executeTakeFirst();
      removed += Number(result.numDeletedRows);
    }
  });
  return removed > 0;
}

async function billingSummary(database: Database): Promise<string> {
  const rows = await database.db
    .selectFrom('billing_daily')
    .select(['day', 'direction', 'calls', 'billed_minutes', 'total_amount'])
    .where('account_id', '=', DEMO_ACCOUNT)
    .where(sql<boolean>`day >= (now() AT TIME ZONE 'UTC')::date - 6`)
    .orderBy('day')
    .orderBy('direction')
    .execute();
  const totals = await database.db
    .selectFrom('billing_daily')
    .select([
      sql<number>`coalesce(sum(calls), 0)::integer`.as('calls'),
      sql<string>`coalesce(sum(billed_minutes), 0)::text`.as('minutes'),
      sql<string>`coalesce(sum(total_amount), 0)::text`.as('amount'),
    ])
    .where('account_id', '=', DEMO_ACCOUNT)
    .executeTakeFirstOrThrow();
  const table = [
    ['day', 'direction', 'calls', 'billed minutes', 'total amount'],
    ...rows.map((row) => [
      row.day,
      row.direction ?? '',
      number.format(row.calls),
      row.billed_minutes,
      row.total_amount,
    ]),
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const lines = table.map(
    (row) =>
      `   ${row.map((cell, column) => (column >= 2 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ')}`,
  );
  return `${lines.join('\n')}\n   all 90 days: ${number.format(totals.calls)} calls, ${totals.minutes} billed minutes, total amount ${totals.amount}`;
}

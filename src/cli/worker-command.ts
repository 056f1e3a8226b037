import type { Command } from 'commander';
import { openWorkerApp } from '../app/worker-app.js';
import { CONFIG_DEFAULTS } from '../config/config-defaults.js';
import type { CommandContext } from './command-context.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { writeNotice } from './notice.js';
import { plural } from './plural.js';
import { onShutdownSignal } from './shutdown.js';
import { parseWholeNumber } from './user-input.js';

export function registerWorkerCommand(program: Command, context: CommandContext): void {
  program
    .command('worker')
    .description(
      'join the pool of workers: take sync and backfill jobs from the queue in PostgreSQL',
    )
    .option('--concurrency <n>', 'accounts in hand at once (default: TELESYNC_ACCOUNT_CONCURRENCY)')
    .addHelpText(
      'after',
      '\nEvery worker serves every configured account, one worker at a time per account, and keeps the\n' +
        'schedule (TELESYNC_SCHEDULE_*): scaling out is starting more workers against the same\n' +
        'DATABASE_URL. SIGTERM drains: the runs in hand finish their batch and their jobs go back to\n' +
        'the queue. Needs PostgreSQL (DATABASE_URL) and `telesync migrate`.\n\n' +
        'Each worker serves the status page (/), /healthz and /metrics over HTTP, and prints where:\n' +
        `  TELESYNC_HTTP_HOST, TELESYNC_HTTP_PORT   default ${CONFIG_DEFAULTS.httpHost}:${CONFIG_DEFAULTS.httpPort}; when the port is not set and is\n` +
        '                                           taken (another worker), the next free one; set: that port\n' +
        '                                           or exit 2; 0: no HTTP server\n\n' +
        'Examples:\n  $ telesync worker\n  $ telesync worker --concurrency 8\n' +
        '  $ TELESYNC_HTTP_PORT=9470 telesync worker',
    )
    .action(async (options: { concurrency?: string }) => {
      context.setExit(await runWorker(context, options));
    });
}

async function runWorker(
  context: CommandContext,
  options: { concurrency?: string },
): Promise<ExitCode> {
  const { io } = context;
  const concurrency =
    options.concurrency === undefined
      ? undefined
      : parseWholeNumber(options.concurrency, '--concurrency', 1, 256);
  // A schema behind the code is told by runCli, once, like every command's.
  const app = await openWorkerApp(context.config(), {
    logSink: context.logSink,
    streams: context.streams,
    ...(concurrency === undefined ? {} : { concurrency }),
  });
  const shutdown = onShutdownSignal(() =>
    writeNotice(
      io,
      'info',
      'draining: the runs in hand finish their batch, no new job is taken (again to force)',
    ),
  );
  try {
    const server = await app.serveHttp();
    io.out(
      server === undefined
        ? 'HTTP server off (TELESYNC_HTTP_PORT=0): no status page, /healthz or /metrics.'
        : `Serving the status page at ${server.url}/, ${server.url}/healthz and ${server.url}/metrics`,
    );
    app.log.info(
      { accounts: app.accountIds.length, concurrency: app.concurrency, pid: process.pid },
      `worker started: ${plural(app.accountIds.length, 'account')}, up to ${app.concurrency} at once`,
    );
    await app.run(shutdown.signal);
    app.log.info('worker drained');
    return EXIT.OK;
  } finally {
    shutdown.dispose();
    await app.close();
  }
}

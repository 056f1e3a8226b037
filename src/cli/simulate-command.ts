import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { SimulatorAccount } from '../simulator/state/account-state.js';
import { DATASET_SIZE_LIMITS, DEFAULT_DATASET_SIZES } from '../simulator/data/dataset.js';
import type { FaultConfig } from '../simulator/faults.js';
import { parseRateLimit, RATE_LIMIT_FORM_HELP, type RateLimit } from '../simulator/rate-limiter.js';
import {
  DEFAULT_SEED,
  DEFAULT_STREAM_AUDIO_SECONDS,
  SimulatorOptionsError,
  STREAM_AUDIO_SECONDS_MAX,
} from '../simulator/simulator-options.js';
import { startSimulator, type StartSimulatorOptions } from '../simulator/simulator-server.js';
import type { CommandContext } from './command-context.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { TRUNK_DEFAULT_WINDOW_DAYS, TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

/** Port of `telesync simulate` when --port is not given. */
export const SIMULATE_DEFAULT_PORT = 8080;

/** Flags of `telesync simulate`, as commander hands them over (all text). */
interface SimulateFlags {
  port?: string;
  host?: string;
  seed?: string;
  calls?: string;
  days?: string;
  endpoints?: string;
  callerIds?: string;
  messages?: string;
  packs?: string;
  liveCalls?: string;
  authId?: string;
  authToken?: string;
  account: string[];
  rateLimit?: string;
  fault429?: string;
  retryAfter?: string;
  fault5xx?: string;
  faultReset?: string;
  faultTruncate?: string;
  latencyMs?: string;
  latencyJitterMs?: string;
  spike?: string;
  spikeMs?: string;
  down?: boolean;
  malformed?: string;
  late?: string;
  lateSeconds?: string;
  insertDuringPaging?: string;
  /** False with --no-media. */
  media: boolean;
  mediaCa?: string;
  streamAudioSeconds?: string;
  realShapes?: boolean;
  prerender?: boolean;
}

/** Resolves when the process is asked to stop; the command's default way to run "until stopped". */
export function waitForTerminationSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/**
 * Registers `telesync simulate`: runs the simulator of the telephony service until SIGINT or
 * SIGTERM. `waitForStop` is how it waits (tests pass their own).
 */
export function registerSimulateCommand(
  program: Command,
  context: CommandContext,
  waitForStop: () => Promise<unknown> = waitForTerminationSignal,
): void {
  const collect = (value: string, previous: string[]): string[] => [...previous, value];
  program
    .command('simulate')
    .description(
      'run a simulator of the telephony service: deterministic data at any volume, the rules of ' +
        'the spec, and faults on demand',
    )
    .option(
      '--port <n>',
      `port to listen on; 0 picks a free one (default ${SIMULATE_DEFAULT_PORT})`,
    )
    .option('--host <host>', 'interface to listen on (default 127.0.0.1; 0.0.0.0 for all)')
    .option('--seed <text>', `seed of all generated data (default "${DEFAULT_SEED}")`)
    .option(
      '--calls <n>',
      `trunk calls per account over --days (default ${DEFAULT_DATASET_SIZES.calls})`,
    )
    .option('--days <n>', `days the calls are spread over (default ${DEFAULT_DATASET_SIZES.days})`)
    .option(
      '--endpoints <n>',
      `SIP endpoints per account (default ${DEFAULT_DATASET_SIZES.endpoints})`,
    )
    .option(
      '--caller-ids <n>',
      `verified caller IDs per account (default ${DEFAULT_DATASET_SIZES.callerIds})`,
    )
    .option('--messages <n>', `messages per account (default ${DEFAULT_DATASET_SIZES.messages})`)
    .option('--packs <n>', `sender packs per account (default ${DEFAULT_DATASET_SIZES.packs})`)
    .option(
      '--live-calls <n>',
      `calls in progress per account (default ${DEFAULT_DATASET_SIZES.liveCalls})`,
    )
    .option('--auth-id <id>', 'auth_id of the account (with --auth-token)')
    .option('--auth-token <token>', 'auth_token of the account (with --auth-id)')
    .option('--account <id:token>', 'an account as ID:TOKEN; repeat for several', collect, [])
    .option('--rate-limit <n/window>', `per-account request budget, ${RATE_LIMIT_FORM_HELP}`)
    .option('--fault-429 <share>', 'share of requests answered 429 with Retry-After (0–1)')
    .option('--retry-after <seconds>', 'Retry-After of injected 429s (default 1)')
    .option('--fault-5xx <share>', 'share of requests answered 500, 502 or 503')
    .option('--fault-reset <share>', 'share of connections dropped without an answer')
    .option('--fault-truncate <share>', 'share of bodies cut off part-way')
    .option('--latency-ms <ms>', 'latency added to every answer')
    .option('--latency-jitter-ms <ms>', 'up to this much more latency, drawn per request')
    .option('--spike <share>', 'share of requests delayed by a latency spike')
    .option('--spike-ms <ms>', 'length of a latency spike (default 2000)')
    .option('--down', 'answer every API request 503 (an outage)')
    .option(
      '--real-shapes',
      "serve the real service's record shapes where they differ from the spec's samples " +
        '(docs/assumptions.md A38–A45)',
    )
    .option(
      '--prerender',
      "render every account's calls once at start and serve trunk pages from the bytes " +
        '(about 0.9 KB of memory a call; for benchmarks)',
    )
    .option('--malformed <share>', 'share of trunk call records served malformed')
    .option('--late <share>', 'share of trunk calls that arrive late')
    .option('--late-seconds <s>', 'how long after its end a late call appears (default 900)')
    .option('--insert-during-paging <share>', 'chance a call is added to a range while it is paged')
    .option(
      '--no-media',
      "do not open started streams' WebSockets (the far side is imagined and accepts at once)",
    )
    .option(
      '--media-ca <file>',
      'PEM file of a certificate authority to trust, besides the usual ones, for wss:// stream ' +
        'URLs and https:// status callbacks (a test CA)',
    )
    .option(
      '--stream-audio-seconds <s>',
      `seconds of generated audio sent on each stream (default ${DEFAULT_STREAM_AUDIO_SECONDS})`,
    )
    .addHelpText(
      'after',
      [
        '',
        'Credentials: --auth-id/--auth-token or --account, else TELESYNC_AUTH_ID/TELESYNC_AUTH_TOKEN,',
        'else new ones are generated and printed. Faults can also be changed at run time:',
        '  curl -X PUT localhost:8080/__admin/faults -d \'{"serverErrors":0.1}\'',
        '',
        'Examples:',
        '  $ telesync simulate                                  # 20,000 calls, port 8080',
        '  $ telesync simulate --port 0 --calls 1000000 --seed demo',
        '  $ telesync simulate --rate-limit 300/5s --fault-429 0.05 --fault-5xx 0.02 --latency-ms 20',
        '  $ telesync simulate --media-ca ./test-ca.pem --stream-audio-seconds 0.5',
        '',
        'Streams: POST /__admin/streams/{stream_id}/stop or /disconnect ends one; GET /__admin/streams',
        'lists them.',
      ].join('\n'),
    )
    .action(async (flags: SimulateFlags) => {
      context.setExit(await runSimulate(context, flags, waitForStop));
    });
}

async function runSimulate(
  context: CommandContext,
  flags: SimulateFlags,
  waitForStop: () => Promise<unknown>,
): Promise<ExitCode> {
  const { io } = context;
  const parsed = parseSimulateFlags(flags);
  const credentials = resolveAccounts(context, parsed.accounts);

  let running;
  try {
    running = await startSimulator({ ...parsed.options, accounts: credentials.accounts });
  } catch (error) {
    if (error instanceof SimulatorOptionsError) throw new UsageError(error.message);
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      io.err(
        `port ${parsed.options.port} is already in use; choose another with --port (0 picks a free one)`,
      );
      return EXIT.FAILED;
    }
    throw error;
  }

  const host = parsed.options.host ?? '127.0.0.1';
  // A wildcard address is where the simulator listens, not where a client connects.
  const baseUrl =
    host === '0.0.0.0' || host === '::' ? `http://127.0.0.1:${running.port}` : running.url;
  const summary = running.dataset();
  const first = running.accounts[0] as SimulatorAccount;
  const sizes = summary.sizes;
  const lines = [
    `telesync simulator listening on ${running.url}`,
    `  seed "${summary.seed}": ${sizes.calls} calls over ${sizes.days} days per account (more as time passes), ` +
      `${sizes.endpoints} endpoints, ${sizes.callerIds} caller IDs, ${sizes.messages} messages, ${sizes.packs} packs`,
    `  rate limit: ${parsed.rateLimit === undefined ? 'none' : `${parsed.rateLimit.requests} requests per ${parsed.rateLimit.windowMs} ms per account`}`,
    `  faults: ${describeFaults(parsed.options.faults ?? {})}`,
    ...(parsed.options.prerender === true
      ? [
          `  trunk pages: from every account's ${sizes.calls} calls, rendered at start (--prerender)`,
        ]
      : []),
    `  streams: ${
      parsed.options.connectMedia === true
        ? `WebSockets opened to service_url, ${parsed.options.streamAudioSeconds ?? DEFAULT_STREAM_AUDIO_SECONDS} s of audio each` +
          (flags.mediaCa === undefined ? '' : `, trusting the CA in ${flags.mediaCa}`)
        : 'no WebSockets opened (--no-media)'
    }; status callbacks signed with the account's token`,
    '',
    credentials.source === 'environment'
      ? `Account ${first.authId} (credentials from TELESYNC_AUTH_ID / TELESYNC_AUTH_TOKEN):`
      : `Account ${first.authId}${credentials.source === 'generated' ? ' (generated credentials)' : ''}:`,
    credentials.source === 'environment'
      ? `  export TELESYNC_BASE_URL=${baseUrl}`
      : `  export TELESYNC_BASE_URL=${baseUrl} TELESYNC_AUTH_ID=${first.authId} TELESYNC_AUTH_TOKEN=${first.authToken}`,
  ];
  for (const account of running.accounts.slice(1)) {
    lines.push(
      `  also: auth_id ${account.authId}${credentials.source === 'environment' ? '' : ` auth_token ${account.authToken}`}`,
    );
  }
  const firstAccount = summary.accounts[0];
  if (firstAccount !== undefined) {
    lines.push(
      '',
      `Calls of the last ${TRUNK_HISTORY_DAYS} days: ${firstAccount.callsLast90Days} (last ${TRUNK_DEFAULT_WINDOW_DAYS} days: ${firstAccount.callsLast7Days})`,
      `Example message UUIDs: ${firstAccount.exampleMessageUuids.slice(0, 3).join(' ') || '(none)'}`,
      `Live call UUIDs (streams can start on these): ${firstAccount.liveCallUuids.slice(0, 3).join(' ') || '(none)'}`,
      `Calls with recorded streams: ${firstAccount.callsWithStreams.join(' ') || '(none)'}`,
    );
  }
  lines.push(
    `Admin: ${baseUrl}/__admin/stats, /__admin/faults, /__admin/dataset, /__admin/streams`,
    'Stop with Ctrl+C.',
  );
  io.out(lines.join('\n'));

  await waitForStop();
  await running.close();
  io.out('telesync simulator stopped.');
  return EXIT.OK;
}

interface ParsedFlags {
  options: StartSimulatorOptions & { port: number };
  rateLimit: RateLimit | undefined;
  /** Accounts given on the command line. */
  accounts: SimulatorAccount[];
}

/** Checks every flag; throws one UsageError naming each bad value and its accepted form. */
function parseSimulateFlags(flags: SimulateFlags): ParsedFlags {
  const problems: string[] = [];
  const whole = (
    flag: string,
    raw: string | undefined,
    min: number,
    max: number,
  ): number | undefined => {
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
      problems.push(`${flag} must be a whole number from ${min} to ${max} (got "${raw}")`);
      return undefined;
    }
    return value;
  };
  const share = (flag: string, raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) {
      problems.push(`${flag} must be a share from 0 to 1, such as 0.05 (got "${raw}")`);
      return undefined;
    }
    return value;
  };

  const options: StartSimulatorOptions & { port: number } = {
    port: whole('--port', flags.port, 0, 65_535) ?? SIMULATE_DEFAULT_PORT,
  };
  if (flags.host !== undefined) options.host = flags.host;
  if (flags.seed !== undefined) options.seed = flags.seed;
  const sizes = [
    ['--calls', flags.calls, 'calls', 0],
    ['--days', flags.days, 'days', 1],
    ['--endpoints', flags.endpoints, 'endpoints', 0],
    ['--caller-ids', flags.callerIds, 'callerIds', 0],
    ['--messages', flags.messages, 'messages', 0],
    ['--packs', flags.packs, 'packs', 0],
    ['--live-calls', flags.liveCalls, 'liveCalls', 0],
  ] as const;
  for (const [flag, raw, key, min] of sizes) {
    const value = whole(flag, raw, min, DATASET_SIZE_LIMITS[key]);
    if (value !== undefined) options[key] = value;
  }

  let rateLimit: RateLimit | undefined;
  if (flags.rateLimit !== undefined) {
    rateLimit = parseRateLimit(flags.rateLimit);
    if (rateLimit === undefined) {
      problems.push(`--rate-limit must be ${RATE_LIMIT_FORM_HELP} (got "${flags.rateLimit}")`);
    } else {
      options.rateLimit = rateLimit;
    }
  }

  const faults: Partial<FaultConfig> = {};
  const setShare = (key: keyof FaultConfig, flag: string, raw: string | undefined): void => {
    const value = share(flag, raw);
    if (value !== undefined) (faults as Record<string, number>)[key] = value;
  };
  const setWhole = (
    key: keyof FaultConfig,
    flag: string,
    raw: string | undefined,
    min: number,
  ): void => {
    const value = whole(flag, raw, min, 86_400_000);
    if (value !== undefined) (faults as Record<string, number>)[key] = value;
  };
  setShare('tooManyRequests', '--fault-429', flags.fault429);
  setWhole('retryAfterSeconds', '--retry-after', flags.retryAfter, 1);
  setShare('serverErrors', '--fault-5xx', flags.fault5xx);
  setShare('resets', '--fault-reset', flags.faultReset);
  setShare('truncations', '--fault-truncate', flags.faultTruncate);
  setWhole('latencyMs', '--latency-ms', flags.latencyMs, 0);
  setWhole('latencyJitterMs', '--latency-jitter-ms', flags.latencyJitterMs, 0);
  setShare('spikes', '--spike', flags.spike);
  setWhole('spikeMs', '--spike-ms', flags.spikeMs, 0);
  setShare('malformed', '--malformed', flags.malformed);
  setShare('late', '--late', flags.late);
  setWhole('lateSeconds', '--late-seconds', flags.lateSeconds, 0);
  setShare('insertDuringPaging', '--insert-during-paging', flags.insertDuringPaging);
  if (flags.down === true) faults.down = true;
  const exclusive =
    (faults.tooManyRequests ?? 0) +
    (faults.serverErrors ?? 0) +
    (faults.resets ?? 0) +
    (faults.truncations ?? 0);
  if (exclusive > 1) {
    problems.push(
      '--fault-429, --fault-5xx, --fault-reset and --fault-truncate must add up to 1 at most',
    );
  }
  options.faults = faults;

  options.connectMedia = flags.media;
  if (flags.realShapes === true) options.realShapes = true;
  if (flags.prerender === true) options.prerender = true;
  if (flags.mediaCa !== undefined) {
    try {
      options.mediaCa = readFileSync(flags.mediaCa, 'utf8');
      if (!options.mediaCa.includes('-----BEGIN CERTIFICATE-----'))
        problems.push(`--media-ca ${flags.mediaCa} holds no PEM certificate`);
    } catch (error) {
      problems.push(
        `--media-ca ${flags.mediaCa} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      );
    }
  }
  if (flags.streamAudioSeconds !== undefined) {
    const raw = flags.streamAudioSeconds;
    const value = Number(raw);
    if (
      raw.trim() === '' ||
      !Number.isFinite(value) ||
      value < 0 ||
      value > STREAM_AUDIO_SECONDS_MAX
    ) {
      problems.push(
        `--stream-audio-seconds must be seconds from 0 to ${STREAM_AUDIO_SECONDS_MAX}, such as 0.5 (got "${raw}")`,
      );
    } else {
      options.streamAudioSeconds = value;
    }
  }

  const accounts: SimulatorAccount[] = [];
  if ((flags.authId === undefined) !== (flags.authToken === undefined)) {
    problems.push('--auth-id and --auth-token go together: give both or neither');
  } else if (flags.authId !== undefined && flags.authToken !== undefined) {
    accounts.push({ authId: flags.authId, authToken: flags.authToken });
  }
  for (const text of flags.account) {
    const colon = text.indexOf(':');
    if (colon <= 0 || colon === text.length - 1) {
      problems.push(`--account must be ID:TOKEN, such as --account MA123:secret (got "${text}")`);
    } else {
      accounts.push({ authId: text.slice(0, colon), authToken: text.slice(colon + 1) });
    }
  }

  if (problems.length > 0) {
    throw new UsageError(`telesync simulate: ${problems.join('\n  ')}`);
  }
  return { options, rateLimit, accounts };
}

/** Accounts from the flags, else from the environment, else new ones. */
function resolveAccounts(
  context: CommandContext,
  fromFlags: SimulatorAccount[],
): { accounts: SimulatorAccount[]; source: 'flags' | 'environment' | 'generated' } {
  if (fromFlags.length > 0) return { accounts: fromFlags, source: 'flags' };
  const configured = context.config().accounts;
  if (configured.length > 0) {
    return {
      accounts: configured.map(({ authId, authToken }) => ({ authId, authToken })),
      source: 'environment',
    };
  }
  return { accounts: [generateAccount()], source: 'generated' };
}

/** A new account in the service's style: MA + 18 letters and digits, a 40-character token. */
function generateAccount(): SimulatorAccount {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const text = (length: number): string =>
    Array.from(randomBytes(length), (byte) => alphabet.charAt(byte % alphabet.length)).join('');
  return { authId: `MA${text(18)}`, authToken: text(40) };
}

function describeFaults(faults: Partial<FaultConfig>): string {
  const parts = Object.entries(faults)
    .filter(([, value]) => value !== 0 && value !== false)
    .map(([key, value]) => `${key} ${String(value)}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

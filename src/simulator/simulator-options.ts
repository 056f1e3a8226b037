import { epochMicrosFromMillis, type EpochMicros } from '../util/micros.js';
import { checkDatasetSizes, DEFAULT_DATASET_SIZES, type DatasetSizes } from './data/dataset.js';
import { deriveKey, hashText, Rng } from './data/prng.js';
import { NO_FAULTS, parseFaultConfig, type FaultConfig } from './faults.js';
import {
  checkCallbackRetryPolicy,
  DEFAULT_CALLBACK_RETRY,
  type CallbackRetryPolicy,
} from './media/callback-retry.js';
import { parseRateLimit, RATE_LIMIT_FORM_HELP, type RateLimit } from './rate-limiter.js';
import type { SimulatorAccount } from './state/account-state.js';

/** How to build a simulator. Every field is optional. */
export interface SimulatorOptions extends Partial<DatasetSizes> {
  /** Seed of all generated data and fault draws (default "telesync"). */
  seed?: string;
  /** Accounts served (default: one, derived from the seed). */
  accounts?: readonly SimulatorAccount[];
  /** Per-account request budget, e.g. "300/5s"; none by default. */
  rateLimit?: RateLimit | string;
  /** Faults injected from the start (default none). */
  faults?: Partial<FaultConfig>;
  /** The clock, epoch microseconds (default: the system clock). Tests pass their own. */
  now?: () => EpochMicros;
  /**
   * Open each started stream's WebSocket to its service_url and stream audio over it (default
   * false: the far side is imagined and accepts at once, so in-process simulators never reach out
   * to the example hosts tests use; `telesync simulate` turns it on). Status callbacks are sent
   * either way.
   */
  connectMedia?: boolean;
  /**
   * PEM certificate(s) of authorities to trust, besides the usual ones, when connecting to a
   * wss:// service_url or an https:// status_callback_url: a test CA. TLS is always verified.
   */
  mediaCa?: string | Buffer | readonly (string | Buffer)[];
  /**
   * Seconds of generated audio streamed on each connected stream, at real-time pace (default
   * DEFAULT_STREAM_AUDIO_SECONDS; 0 sends only the `start` message). The stream stays connected
   * after the audio until it is stopped, times out or is disconnected.
   */
  streamAudioSeconds?: number;
  /** How failed status callbacks are retried (default DEFAULT_CALLBACK_RETRY). */
  callbackRetry?: Partial<CallbackRetryPolicy>;
  /**
   * Serve the shapes the real service sends where the spec's samples differ (docs/assumptions.md
   * A38–A45: trunk times without offset, 9-digit fractions, null message fields, a numeric
   * application_id, the short stream list, a single caller-ID object). Default false.
   */
  realShapes?: boolean;
  /**
   * Render every account's calls before startup as JSON bytes once, at start (about 7 µs and
   * 0.9 KB a call, PRERENDER_MAX_CALLS calls in all at most), and serve trunk pages from them:
   * a page then costs the simulator a copy of bytes. For benchmarks, where the simulator shares
   * the machine with what it measures. Default false.
   */
  prerender?: boolean;
}

/** Most calls, over all accounts, a simulator renders at start with `prerender` (about 1.8 GB). */
export const PRERENDER_MAX_CALLS = 2_000_000;

/** Seconds of audio each stream carries unless told: short, so a test sees it all quickly. */
export const DEFAULT_STREAM_AUDIO_SECONDS = 2;
/** Most audio seconds per stream (an hour of 20 ms frames). */
export const STREAM_AUDIO_SECONDS_MAX = 3600;

/** The options of streams' lives, checked. */
export interface ResolvedStreamOptions {
  readonly connectMedia: boolean;
  /** Extra trusted authorities (PEM); undefined: the usual ones only. */
  readonly mediaCa: readonly (string | Buffer)[] | undefined;
  readonly audioSeconds: number;
  readonly callbackRetry: CallbackRetryPolicy;
}

/** Options that cannot be used, each problem named. */
export class SimulatorOptionsError extends Error {
  override name = 'SimulatorOptionsError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid simulator options: ${problems.join('; ')}`);
  }
}

export const DEFAULT_SEED = 'telesync';
const AUTH_ID_FORM = /^[A-Za-z0-9_-]+$/;

/** Options checked and completed with their defaults. */
export interface ResolvedSimulatorOptions {
  readonly seed: string;
  readonly sizes: Readonly<DatasetSizes>;
  readonly faults: FaultConfig;
  readonly rateLimit: RateLimit | undefined;
  readonly accounts: readonly SimulatorAccount[];
  readonly now: () => EpochMicros;
  readonly streams: ResolvedStreamOptions;
  readonly realShapes: boolean;
  readonly prerender: boolean;
}

/**
 * Checks every option and fills in the defaults. Throws SimulatorOptionsError listing every
 * unusable option at once.
 */
export function resolveSimulatorOptions(options: SimulatorOptions = {}): ResolvedSimulatorOptions {
  const problems: string[] = [];
  const seed = options.seed ?? DEFAULT_SEED;
  const sizes: DatasetSizes = { ...DEFAULT_DATASET_SIZES };
  for (const key of Object.keys(DEFAULT_DATASET_SIZES) as (keyof DatasetSizes)[]) {
    const value = options[key];
    if (value !== undefined) sizes[key] = value;
  }
  problems.push(...checkDatasetSizes(sizes));

  const faults = parseFaultConfig(options.faults ?? {});
  if (!faults.ok) problems.push(...faults.problems);

  let rateLimit: RateLimit | undefined;
  if (typeof options.rateLimit === 'string') {
    rateLimit = parseRateLimit(options.rateLimit);
    if (rateLimit === undefined) {
      problems.push(
        `rateLimit must have the form ${RATE_LIMIT_FORM_HELP} (got "${options.rateLimit}")`,
      );
    }
  } else if (options.rateLimit !== undefined) {
    rateLimit = options.rateLimit;
    if (!(
      Number.isSafeInteger(rateLimit.requests) &&
      rateLimit.requests >= 1 &&
      rateLimit.windowMs >= 1
    )) {
      problems.push('rateLimit must allow at least 1 request per window of at least 1 ms');
    }
  }

  const accounts = options.accounts ?? [defaultAccount(seed)];
  if (accounts.length === 0) problems.push('at least one account is needed');
  const seen = new Set<string>();
  for (const account of accounts) {
    if (!AUTH_ID_FORM.test(account.authId)) {
      problems.push(`auth_id "${account.authId}" must use letters, digits, "_" or "-" only`);
    }
    if (account.authToken === '')
      problems.push(`auth_id ${account.authId} has an empty auth_token`);
    if (seen.has(account.authId)) problems.push(`auth_id ${account.authId} is given twice`);
    seen.add(account.authId);
  }
  const audioSeconds = options.streamAudioSeconds ?? DEFAULT_STREAM_AUDIO_SECONDS;
  if (
    !Number.isFinite(audioSeconds) ||
    audioSeconds < 0 ||
    audioSeconds > STREAM_AUDIO_SECONDS_MAX
  ) {
    problems.push(
      `streamAudioSeconds must be a number of seconds from 0 to ${STREAM_AUDIO_SECONDS_MAX} (got ${audioSeconds})`,
    );
  }
  const callbackRetry = { ...DEFAULT_CALLBACK_RETRY, ...options.callbackRetry };
  problems.push(...checkCallbackRetryPolicy(callbackRetry));
  const mediaCa =
    options.mediaCa === undefined
      ? undefined
      : typeof options.mediaCa === 'string' || Buffer.isBuffer(options.mediaCa)
        ? [options.mediaCa]
        : [...options.mediaCa];
  if (
    mediaCa?.some(
      (pem) =>
        !(typeof pem === 'string' ? pem : pem.toString('utf8')).includes(
          '-----BEGIN CERTIFICATE-----',
        ),
    )
  ) {
    problems.push('mediaCa must be PEM certificates (-----BEGIN CERTIFICATE-----)');
  }
  const prerender = options.prerender ?? false;
  if (prerender && sizes.calls * accounts.length > PRERENDER_MAX_CALLS) {
    problems.push(
      `prerender holds every call in memory, ${PRERENDER_MAX_CALLS.toLocaleString('en-US')} calls over all accounts at most (got ${accounts.length} × ${sizes.calls.toLocaleString('en-US')})`,
    );
  }
  if (problems.length > 0) throw new SimulatorOptionsError(problems);

  return {
    seed,
    sizes: Object.freeze(sizes),
    faults: faults.ok ? faults.config : { ...NO_FAULTS },
    rateLimit,
    accounts,
    now: options.now ?? (() => epochMicrosFromMillis(Date.now())),
    streams: {
      connectMedia: options.connectMedia ?? false,
      mediaCa,
      audioSeconds,
      callbackRetry,
    },
    realShapes: options.realShapes ?? false,
    prerender,
  };
}

/** The default account: fixed by the seed, so a restarted simulator keeps its credentials. */
function defaultAccount(seed: string): SimulatorAccount {
  const rng = new Rng(deriveKey(hashText(seed), 'default-account'));
  return { authId: `MA${rng.alphanumeric(18)}`, authToken: rng.alphanumeric(40) };
}

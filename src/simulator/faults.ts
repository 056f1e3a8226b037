import type { Rng } from './data/prng.js';

/**
 * Faults the simulator injects on demand, and the decision for each request. Pure: the decision is
 * drawn from the generator it is given (SimulatorState seeds one from the seed).
 */

/**
 * What to inject. Shares are fractions of API requests (or of records) from 0 to 1; the four
 * request-level shares (tooManyRequests, serverErrors, resets, truncations) are exclusive and may
 * add up to 1 at most.
 */
export interface FaultConfig {
  /** Every API request is answered 503. */
  down: boolean;
  /** Share answered 429 with Retry-After. */
  tooManyRequests: number;
  /** Retry-After of those 429s, whole seconds. */
  retryAfterSeconds: number;
  /** Share answered 500, 502 or 503. */
  serverErrors: number;
  /** Share whose connection is dropped without an answer. */
  resets: number;
  /** Share whose body is cut off part-way (the connection then closes). */
  truncations: number;
  /** Added to every API answer, milliseconds. */
  latencyMs: number;
  /** Up to this much more, drawn per request, milliseconds. */
  latencyJitterMs: number;
  /** Share of requests delayed by a spike. */
  spikes: number;
  /** Length of a spike, milliseconds. */
  spikeMs: number;
  /** Share of trunk call records served malformed (the same calls on every read). */
  malformed: number;
  /** Share of trunk calls that arrive late (the same calls on every read). */
  late: number;
  /** How long after its end a late call is first listed, seconds. */
  lateSeconds: number;
  /** Chance that serving a trunk page at offset > 0 adds a call inside the query's range. */
  insertDuringPaging: number;
}

/** No faults. */
export const NO_FAULTS: Readonly<FaultConfig> = Object.freeze({
  down: false,
  tooManyRequests: 0,
  retryAfterSeconds: 1,
  serverErrors: 0,
  resets: 0,
  truncations: 0,
  latencyMs: 0,
  latencyJitterMs: 0,
  spikes: 0,
  spikeMs: 2_000,
  malformed: 0,
  late: 0,
  lateSeconds: 900,
  insertDuringPaging: 0,
});

const SHARES = [
  'tooManyRequests',
  'serverErrors',
  'resets',
  'truncations',
  'spikes',
  'malformed',
  'late',
  'insertDuringPaging',
] as const;
const DURATIONS = [
  'retryAfterSeconds',
  'latencyMs',
  'latencyJitterMs',
  'spikeMs',
  'lateSeconds',
] as const;
/** Longest duration accepted, in its own unit: a day. */
const DURATION_MAX = 86_400_000;

export type FaultConfigResult =
  { ok: true; config: FaultConfig } | { ok: false; problems: string[] };

/**
 * Builds a fault configuration from untrusted input (the admin API, options): every key given
 * replaces the one in `base`, unknown keys and bad values are reported, all at once.
 */
export function parseFaultConfig(
  input: unknown,
  base: Readonly<FaultConfig> = NO_FAULTS,
): FaultConfigResult {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, problems: ['faults must be a JSON object'] };
  }
  const problems: string[] = [];
  const config: FaultConfig = { ...base };
  for (const [key, value] of Object.entries(input)) {
    if (key === 'down') {
      if (typeof value === 'boolean') config.down = value;
      else problems.push(`down must be true or false (got ${JSON.stringify(value)})`);
    } else if ((SHARES as readonly string[]).includes(key)) {
      if (typeof value === 'number' && value >= 0 && value <= 1) {
        config[key as (typeof SHARES)[number]] = value;
      } else {
        problems.push(`${key} must be a share from 0 to 1 (got ${JSON.stringify(value)})`);
      }
    } else if ((DURATIONS as readonly string[]).includes(key)) {
      if (
        typeof value === 'number' &&
        Number.isSafeInteger(value) &&
        value >= 0 &&
        value <= DURATION_MAX
      ) {
        config[key as (typeof DURATIONS)[number]] = value;
      } else {
        problems.push(
          `${key} must be a whole number from 0 to ${DURATION_MAX} (got ${JSON.stringify(value)})`,
        );
      }
    } else {
      problems.push(`unknown fault ${key}; known: down, ${[...SHARES, ...DURATIONS].join(', ')}`);
    }
  }
  const exclusive =
    config.tooManyRequests + config.serverErrors + config.resets + config.truncations;
  if (exclusive > 1 + 1e-9) {
    problems.push(
      `tooManyRequests + serverErrors + resets + truncations must not exceed 1 (got ${exclusive})`,
    );
  }
  if (config.retryAfterSeconds < 1) problems.push('retryAfterSeconds must be at least 1');
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config };
}

/** What happens to one API request. */
export type RequestFault =
  | { kind: 'none' }
  | { kind: 'down' }
  | { kind: 'too-many-requests'; retryAfterSeconds: number }
  | { kind: 'server-error'; status: 500 | 502 | 503 }
  | { kind: 'reset' }
  /** Send this fraction (0 < f < 1) of the body, then close. */
  | { kind: 'truncate'; fraction: number };

export interface RequestFaultDecision {
  fault: RequestFault;
  /** Wait this long before answering, milliseconds. */
  delayMs: number;
  /** Whether the delay includes a spike. */
  spiked: boolean;
}

/**
 * Decides the fault and delay of one API request. The generator is always advanced by the same
 * number of draws, so the decisions of later requests do not depend on the configuration of
 * earlier ones.
 */
export function decideRequestFault(config: Readonly<FaultConfig>, rng: Rng): RequestFaultDecision {
  const pick = rng.next();
  const detail = rng.next();
  const jitter = rng.next();
  const spike = rng.next();
  const spiked = spike < config.spikes;
  const delayMs =
    config.latencyMs + Math.round(jitter * config.latencyJitterMs) + (spiked ? config.spikeMs : 0);
  const decide = (fault: RequestFault): RequestFaultDecision => ({ fault, delayMs, spiked });
  if (config.down) return decide({ kind: 'down' });
  let threshold = config.tooManyRequests;
  if (pick < threshold)
    return decide({ kind: 'too-many-requests', retryAfterSeconds: config.retryAfterSeconds });
  threshold += config.serverErrors;
  if (pick < threshold) {
    const statuses = [500, 502, 503] as const;
    return decide({ kind: 'server-error', status: statuses[Math.floor(detail * 3)] ?? 500 });
  }
  threshold += config.resets;
  if (pick < threshold) return decide({ kind: 'reset' });
  threshold += config.truncations;
  if (pick < threshold) return decide({ kind: 'truncate', fraction: 0.2 + detail * 0.6 });
  return decide({ kind: 'none' });
}

import { randomUUID, timingSafeEqual } from 'node:crypto';
import {
  epochMicrosFromMillis,
  formatIsoMicros,
  MICROS_PER_DAY,
  MICROS_PER_SECOND,
  type EpochMicros,
} from '../util/micros.js';
import { createAccountState, type AccountState, type SimulatorAccount } from './account-state.js';
import { handleAdminRequest } from './admin-routes.js';
import { matchApiRoute, type ApiContext } from './api-routes.js';
import { checkDatasetSizes, DEFAULT_DATASET_SIZES, type DatasetSizes } from './dataset.js';
import {
  decideRequestFault,
  NO_FAULTS,
  parseFaultConfig,
  type FaultConfig,
  type RequestFault,
} from './faults.js';
import { deriveKey, hashText, Rng } from './prng.js';
import {
  parseRateLimit,
  RATE_LIMIT_FORM_HELP,
  SlidingWindowLimiter,
  type RateLimit,
} from './rate-limiter.js';
import { TRUNK_DEFAULT_WINDOW_DAYS, TRUNK_HISTORY_DAYS } from './rules.js';
import { errorAnswer, type SimAnswer } from './sim-answer.js';
import { SimulatorStats } from './simulator-stats.js';
import {
  isGeneratedCallVisible,
  selectTrunkCalls,
  type GeneratedCalls,
  type LateArrivals,
} from './trunk-call-index.js';
import { firstIndexEndingAtOrAfter } from './call-timeline.js';

/**
 * The simulator without its socket: accounts, faults, limits and counters, and the decision of what
 * each request gets. The HTTP server (simulator-server.ts) only reads requests and carries out
 * these decisions, so everything here runs the same in-process and behind a port.
 */

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

/** A request as the simulator needs it. */
export interface SimRequest {
  readonly method: string;
  /** Path and query, as received. */
  readonly url: string;
  /** The Authorization header, if any. */
  readonly authorization: string | undefined;
  readonly body: string;
}

/** What to do with a request. */
export type SimOutcome =
  | {
      readonly kind: 'answer';
      readonly answer: SimAnswer;
      /** Wait before answering, milliseconds. */
      readonly delayMs: number;
      /** Send only this fraction of the body, then close the connection. */
      readonly truncateFraction?: number;
    }
  /** Close the connection without answering. */
  | { readonly kind: 'drop'; readonly delayMs: number };

/** Per-account facts for scripts, tests and the `simulate` command. */
export interface AccountSummary {
  authId: string;
  endpoints: number;
  callerIds: number;
  messages: number;
  packs: number;
  liveCalls: number;
  /** Completed, visible calls of the last 90 days (what a full backfill finds). */
  callsLast90Days: number;
  /** The same for the last 7 days (the trunk list's default window). */
  callsLast7Days: number;
  /** Calls added at run time (admin, paging fault). */
  addedCalls: number;
  exampleMessageUuids: string[];
  packUuids: string[];
  liveCallUuids: string[];
  /** Recent completed calls that carry stream records. */
  callsWithStreams: string[];
}

export interface DatasetSummary {
  seed: string;
  sizes: DatasetSizes;
  /** The clock at startup and now, ISO UTC. */
  anchor: string;
  now: string;
  accounts: AccountSummary[];
}

/** One simulator's state and request handling. */
export class Simulator {
  readonly seed: string;
  readonly sizes: Readonly<DatasetSizes>;
  readonly now: () => EpochMicros;
  readonly stats = new SimulatorStats();
  readonly accounts: ReadonlyMap<string, AccountState>;
  readonly anchorMicros: EpochMicros;
  private faultConfig: FaultConfig;
  private readonly limiter: SlidingWindowLimiter | undefined;
  private readonly faultRng: Rng;
  private readonly pagingRng: Rng;

  /** Builds a simulator; throws SimulatorOptionsError listing every unusable option. */
  constructor(options: SimulatorOptions = {}) {
    const problems: string[] = [];
    this.seed = options.seed ?? DEFAULT_SEED;
    const sizes: DatasetSizes = { ...DEFAULT_DATASET_SIZES };
    for (const key of Object.keys(DEFAULT_DATASET_SIZES) as (keyof DatasetSizes)[]) {
      const value = options[key];
      if (value !== undefined) sizes[key] = value;
    }
    problems.push(...checkDatasetSizes(sizes));
    this.sizes = Object.freeze(sizes);

    const faults = parseFaultConfig(options.faults ?? {});
    if (!faults.ok) problems.push(...faults.problems);
    this.faultConfig = faults.ok ? faults.config : { ...NO_FAULTS };

    let limit: RateLimit | undefined;
    if (typeof options.rateLimit === 'string') {
      limit = parseRateLimit(options.rateLimit);
      if (limit === undefined) {
        problems.push(
          `rateLimit must have the form ${RATE_LIMIT_FORM_HELP} (got "${options.rateLimit}")`,
        );
      }
    } else if (options.rateLimit !== undefined) {
      limit = options.rateLimit;
      if (!(Number.isSafeInteger(limit.requests) && limit.requests >= 1 && limit.windowMs >= 1)) {
        problems.push('rateLimit must allow at least 1 request per window of at least 1 ms');
      }
    }
    this.limiter = limit === undefined ? undefined : new SlidingWindowLimiter(limit);

    const seedKey = hashText(this.seed);
    const accounts = options.accounts ?? [defaultAccount(seedKey)];
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
    if (problems.length > 0) throw new SimulatorOptionsError(problems);

    this.now = options.now ?? (() => epochMicrosFromMillis(Date.now()));
    this.anchorMicros = this.now();
    this.faultRng = new Rng(deriveKey(seedKey, 'faults'));
    this.pagingRng = new Rng(deriveKey(seedKey, 'paging'));
    const states = new Map<string, AccountState>();
    for (const account of accounts) {
      states.set(
        account.authId,
        createAccountState({
          account,
          seed: this.seed,
          sizes: this.sizes,
          anchorMicros: this.anchorMicros,
          onRecordsGenerated: (count) => this.stats.countRecords(count),
        }),
      );
    }
    this.accounts = states;
  }

  /** The credentials of every account. */
  credentials(): SimulatorAccount[] {
    return [...this.accounts.values()].map(({ authId, authToken }) => ({ authId, authToken }));
  }

  /** The faults in force. */
  faults(): FaultConfig {
    return { ...this.faultConfig };
  }

  /**
   * Replaces the faults in force: fields left out are off (their NO_FAULTS value). Returns the new
   * configuration, or the problems when the input is not valid (nothing changes then).
   */
  replaceFaults(
    input: unknown,
  ): { ok: true; config: FaultConfig } | { ok: false; problems: string[] } {
    const parsed = parseFaultConfig(input);
    if (parsed.ok) this.faultConfig = parsed.config;
    return parsed.ok ? { ok: true, config: { ...parsed.config } } : parsed;
  }

  /** Facts about the data, for scripts and tests (reading them generates no counted records). */
  summary(): DatasetSummary {
    const now = this.now();
    const late = {
      share: this.faultConfig.late,
      delayMicros: this.faultConfig.lateSeconds * MICROS_PER_SECOND,
    };
    const count = (state: AccountState, days: number): number =>
      selectTrunkCalls(
        uncountedCalls(state),
        state.overlay.list(),
        {
          lowerMicros: now - days * MICROS_PER_DAY,
          upperMicros: now,
          filters: {},
          limit: 0,
          offset: 0,
        },
        now,
        late,
      ).totalCount;
    return {
      seed: this.seed,
      sizes: { ...this.sizes },
      anchor: formatIsoMicros(this.anchorMicros),
      now: formatIsoMicros(now),
      accounts: [...this.accounts.values()].map((state) => ({
        authId: state.authId,
        endpoints: state.endpoints.length,
        callerIds: state.callerIds.length,
        messages: this.sizes.messages,
        packs: this.sizes.packs,
        liveCalls: this.sizes.liveCalls,
        callsLast90Days: count(state, TRUNK_HISTORY_DAYS),
        callsLast7Days: count(state, TRUNK_DEFAULT_WINDOW_DAYS),
        addedCalls: state.overlay.list().length,
        exampleMessageUuids: Array.from({ length: Math.min(5, this.sizes.messages) }, (_, k) =>
          state.dataset.messageUuidAt(k),
        ),
        packUuids: state.dataset.packs().map((pack) => pack.uuid),
        liveCallUuids: state.dataset.liveCallUuids(),
        callsWithStreams: findCallsWithStreams(state, now, late, 3),
      })),
    };
  }

  /** Decides what a request gets. Admin requests (under /__admin/) are never faulted or counted. */
  handle(request: SimRequest): SimOutcome {
    const url = new URL(request.url, 'http://simulator.invalid');
    if (url.pathname === '/__admin' || url.pathname.startsWith('/__admin/')) {
      return {
        kind: 'answer',
        answer: handleAdminRequest(this, request.method, url, request.body),
        delayMs: 0,
      };
    }
    return this.handleApi(request, url);
  }

  private handleApi(request: SimRequest, url: URL): SimOutcome {
    const apiId = randomUUID();
    const target = parseAccountPath(url.pathname);
    const match = target === undefined ? undefined : matchApiRoute(request.method, target.segments);
    const routeName =
      match?.kind === 'found'
        ? match.name
        : match?.kind === 'wrong-method'
          ? `${request.method} ${match.name}`
          : 'unknown';

    const decision = decideRequestFault(this.faultConfig, this.faultRng);
    if (decision.spiked) this.stats.countFault('spikes');
    const answer = (result: SimAnswer, truncateFraction?: number): SimOutcome => {
      this.stats.countRequest(routeName, result.status);
      return {
        kind: 'answer',
        answer: result,
        delayMs: decision.delayMs,
        ...(truncateFraction === undefined ? {} : { truncateFraction }),
      };
    };
    const injected = this.injectedAnswer(decision.fault, apiId);
    if (injected === 'drop') {
      this.stats.countRequest(routeName, 'dropped');
      return { kind: 'drop', delayMs: decision.delayMs };
    }
    if (injected !== undefined) return answer(injected);
    const truncate = decision.fault.kind === 'truncate' ? decision.fault.fraction : undefined;
    if (truncate !== undefined) this.stats.countFault('truncations');

    if (target === undefined || match === undefined) {
      return answer(errorAnswer(404, `no such resource: ${url.pathname}`, apiId), truncate);
    }
    const account = this.authenticate(request.authorization);
    if (typeof account === 'string') {
      return answer(
        errorAnswer(401, account, apiId, {
          'WWW-Authenticate': 'Basic realm="telesync simulator"',
        }),
        truncate,
      );
    }
    if (account.authId !== target.authId) {
      return answer(
        errorAnswer(
          401,
          `these credentials are for account ${account.authId}, not ${target.authId}`,
          apiId,
        ),
        truncate,
      );
    }
    const now = this.now();
    if (this.limiter !== undefined) {
      const taken = this.limiter.take(account.authId, now);
      if (!taken.allowed) {
        this.stats.countRateLimited();
        return answer(
          errorAnswer(
            429,
            `rate limit of ${this.limiter.limit.requests} requests per ${this.limiter.limit.windowMs} ms exceeded; retry after ${taken.retryAfterSeconds} s`,
            apiId,
            { 'Retry-After': String(taken.retryAfterSeconds) },
          ),
          truncate,
        );
      }
    }
    if (match.kind === 'no-route') {
      return answer(errorAnswer(404, `no such resource: ${url.pathname}`, apiId), truncate);
    }
    if (match.kind === 'wrong-method') {
      return answer(
        errorAnswer(
          405,
          `${request.method} is not allowed on ${url.pathname}; use ${match.allowed.join(' or ')}`,
          apiId,
          { Allow: match.allowed.join(', ') },
        ),
        truncate,
      );
    }
    const context: ApiContext = {
      account,
      nowMicros: now,
      faults: this.faultConfig,
      stats: this.stats,
      rng: this.pagingRng,
      apiId,
    };
    const result = match.handler(context, {
      params: match.params,
      query: url.searchParams,
      path: url.pathname,
      body: request.body,
    });
    return answer(result, truncate);
  }

  /** The answer a request fault replaces the real one with; 'drop' for a reset. */
  private injectedAnswer(fault: RequestFault, apiId: string): SimAnswer | 'drop' | undefined {
    switch (fault.kind) {
      case 'down':
        this.stats.countFault('down');
        return errorAnswer(503, 'the service is unavailable (simulated outage)', apiId);
      case 'too-many-requests':
        this.stats.countFault('tooManyRequests');
        return errorAnswer(429, 'too many requests (simulated)', apiId, {
          'Retry-After': String(fault.retryAfterSeconds),
        });
      case 'server-error':
        this.stats.countFault('serverErrors');
        return errorAnswer(fault.status, `simulated server error ${fault.status}`, apiId);
      case 'reset':
        this.stats.countFault('resets');
        return 'drop';
      default:
        return undefined;
    }
  }

  /** The account of HTTP Basic credentials (A1, A33), or why they do not open one. */
  private authenticate(header: string | undefined): AccountState | string {
    const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (match === null) {
      return 'authentication required: send HTTP Basic credentials auth_id:auth_token';
    }
    const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const authId = colon < 0 ? decoded : decoded.slice(0, colon);
    const token = colon < 0 ? '' : decoded.slice(colon + 1);
    const account = this.accounts.get(authId);
    if (account === undefined || !sameSecret(token, account.authToken)) {
      return 'authentication failed: unknown auth_id or wrong auth_token';
    }
    return account;
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The auth_id and the segments after /v1/Account/{auth_id}/, or undefined for other paths. */
function parseAccountPath(pathname: string): { authId: string; segments: string[] } | undefined {
  const match = /^\/v1\/Account\/([^/]+)\/(.*)$/.exec(pathname);
  if (match === null) return undefined;
  const segments = (match[2] ?? '').split('/');
  // One trailing slash is optional on every path.
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop();
  try {
    return {
      authId: decodeURIComponent(match[1] ?? ''),
      segments: segments.map(decodeURIComponent),
    };
  } catch {
    return undefined;
  }
}

/** The default account: fixed by the seed, so a restarted simulator keeps its credentials. */
function defaultAccount(seedKey: number): SimulatorAccount {
  const rng = new Rng(deriveKey(seedKey, 'default-account'));
  return { authId: `MA${rng.alphanumeric(18)}`, authToken: rng.alphanumeric(40) };
}

/** The account's generated calls, read without counting them as generated records. */
function uncountedCalls(state: AccountState): GeneratedCalls {
  return {
    timeline: state.dataset.timeline,
    callFactsAt: (index) => state.dataset.callFactsAt(index, false),
    isLateCall: (index, share) => state.dataset.isLateCall(index, share),
  };
}

/** Up to `wanted` of the latest visible completed calls that carry streams (of 5,000 at most). */
function findCallsWithStreams(
  state: AccountState,
  now: EpochMicros,
  late: LateArrivals,
  wanted: number,
): string[] {
  const { dataset } = state;
  const calls = uncountedCalls(state);
  const found: string[] = [];
  let index = firstIndexEndingAtOrAfter(dataset.timeline, now + 1) - 1;
  for (let looked = 0; index >= 0 && looked < 5_000 && found.length < wanted; looked++, index--) {
    if (!isGeneratedCallVisible(calls, index, now, late)) continue;
    const facts = dataset.callFactsAt(index, false);
    if (dataset.streamsOfCall(index, facts).length > 0) found.push(dataset.callUuidAt(index));
  }
  return found;
}

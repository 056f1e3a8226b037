import type { EpochMicros } from '../../util/micros.js';
import type { DatasetSizes } from '../data/dataset.js';
import { deriveKey, hashText, Rng } from '../data/prng.js';
import { parseFaultConfig, type FaultConfig } from '../faults.js';
import { SlidingWindowLimiter } from '../rate-limiter.js';
import type { ResolvedSimulatorOptions } from '../simulator-options.js';
import { createAccountState, type AccountState, type SimulatorAccount } from './account-state.js';
import type { LiveStream } from './live-streams.js';
import { SimulatorStats } from './simulator-stats.js';
import { IDLE_STREAM_DRIVER, type StreamDriver } from './stream-driver.js';

/**
 * Everything one simulator holds, and nothing about HTTP: the accounts (their generated data,
 * added calls and endpoints, live streams), the faults in force, the request budget, the counters,
 * the random streams that faults and paging draw from, and the driver that carries out streams'
 * lives. Routes read and change it; the clock is the only way time enters.
 */
export class SimulatorState {
  readonly seed: string;
  /** Records are served in the real service's shapes (data/real-shapes.ts). */
  readonly realShapes: boolean;
  readonly sizes: Readonly<DatasetSizes>;
  readonly now: () => EpochMicros;
  readonly stats = new SimulatorStats();
  readonly accounts: ReadonlyMap<string, AccountState>;
  /** The clock when the simulator started: generated data is laid out back from it. */
  readonly anchorMicros: EpochMicros;
  private budget: SlidingWindowLimiter | undefined;
  /** Draws the request faults, one draw sequence per simulator. */
  readonly faultRng: Rng;
  /** Draws the paging fault (calls added while a client pages). */
  readonly pagingRng: Rng;
  /** Carries out the life of started streams (sockets, timers, callbacks). */
  readonly streamDriver: StreamDriver;
  private faultConfig: FaultConfig;

  /**
   * Builds the state of checked options (see resolveSimulatorOptions). `createStreamDriver` makes
   * what carries out streams' lives, given this state once it is complete (default: nothing runs).
   */
  constructor(
    options: ResolvedSimulatorOptions,
    createStreamDriver: (state: SimulatorState) => StreamDriver = () => IDLE_STREAM_DRIVER,
  ) {
    this.seed = options.seed;
    this.realShapes = options.realShapes;
    this.sizes = options.sizes;
    this.faultConfig = options.faults;
    this.budget =
      options.rateLimit === undefined ? undefined : new SlidingWindowLimiter(options.rateLimit);
    this.now = options.now;
    this.anchorMicros = this.now();
    const seedKey = hashText(this.seed);
    this.faultRng = new Rng(deriveKey(seedKey, 'faults'));
    this.pagingRng = new Rng(deriveKey(seedKey, 'paging'));
    const states = new Map<string, AccountState>();
    for (const account of options.accounts) {
      states.set(
        account.authId,
        createAccountState({
          account,
          seed: this.seed,
          sizes: this.sizes,
          anchorMicros: this.anchorMicros,
          onRecordsGenerated: (count) => this.stats.countRecords(count),
          prerender: options.prerender,
        }),
      );
    }
    this.accounts = states;
    this.streamDriver = createStreamDriver(this);
  }

  /** A started stream by its stream_id, with its account. */
  findStream(streamId: string): { account: AccountState; stream: LiveStream } | undefined {
    for (const account of this.accounts.values()) {
      const stream = account.streams.find(streamId);
      if (stream !== undefined) return { account, stream };
    }
    return undefined;
  }

  /** The per-account request budget; undefined when requests are not limited. */
  get limiter(): SlidingWindowLimiter | undefined {
    return this.budget;
  }

  /**
   * Runs `read` with no request budget in force (an oracle reading what the service holds must
   * not use, or be refused by, the budget of the client under test), then restores it.
   */
  outsideBudget<T>(read: () => T): T {
    const saved = this.budget;
    this.budget = undefined;
    try {
      return read();
    } finally {
      this.budget = saved;
    }
  }

  /** The credentials of every account. */
  credentials(): SimulatorAccount[] {
    return [...this.accounts.values()].map(({ authId, authToken }) => ({ authId, authToken }));
  }

  /** The first account (the default of admin requests that name none). */
  firstAccount(): AccountState | undefined {
    return this.accounts.values().next().value;
  }

  /** The faults in force, as a copy the caller may keep. */
  faults(): FaultConfig {
    return { ...this.faultConfig };
  }

  /** The faults in force, read-only and not copied (read once per request). */
  get activeFaults(): Readonly<FaultConfig> {
    return this.faultConfig;
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
}

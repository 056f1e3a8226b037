import { spawn, type ChildProcess } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import type { AccountLoad } from '../../src/simulator/state/simulator-stats.js';
import { HarnessError } from './bench-errors.js';
import { baseChildEnv, createScratchDir, telesyncInvocation } from './paths.js';
import { readProcessCpuTicks } from './proc-stats.js';

/**
 * The simulator of the service as its own process (`telesync simulate --port 0 …`), as users run
 * it, so that its CPU is not the benchmark's and the client talks to it over real sockets. Through
 * the `telesync` command, as telesync itself is measured: node with the command's young generation
 * (with V8's default the simulator spends a tenth more of its CPU collecting garbage).
 */

export interface BenchAccount {
  readonly authId: string;
  readonly authToken: string;
}

export interface SimulatorProcessOptions {
  readonly seed: string;
  /** Calls over the last `days` days before startup (live traffic continues at that rate). */
  readonly calls: number;
  readonly days?: number;
  readonly account: BenchAccount;
  /** More accounts the simulator serves beside `account` (each with its own data and budget). */
  readonly extraAccounts?: readonly BenchAccount[];
  /** e.g. "300/5s": the service's published limit. */
  readonly rateLimit?: string;
  /** Render the calls once at start and serve pages from the bytes (`--prerender`). */
  readonly prerender?: boolean;
  /** Flags for node itself, e.g. --cpu-prof. */
  readonly nodeArgs?: readonly string[];
  /** Registers the process so the harness can stop it on Ctrl-C. */
  readonly track?: (pid: number) => () => void;
}

/** What GET /__admin/stats answers (the parts the benchmarks read). */
export interface SimulatorStats {
  requests: { total: number; byRoute: Record<string, number>; byStatus: Record<string, number> };
  faults: Record<string, number>;
  rateLimited: number;
  recordsGenerated: number;
  /** Per account, as the simulator measures it (requests, the most in any 5 s, …). */
  accounts?: Record<string, AccountLoad>;
}

/** What GET /__admin/dataset answers (the parts the benchmarks read). */
export interface SimulatorDataset {
  seed: string;
  sizes: {
    calls: number;
    days: number;
    endpoints: number;
    callerIds: number;
    messages: number;
    packs: number;
    liveCalls: number;
  };
  anchor: string;
  now: string;
  accounts: { authId: string; callsLast90Days: number; callsLast7Days: number }[];
}

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

export class SimulatorProcess {
  #exited = false;
  #exit: Promise<void>;

  private constructor(
    readonly url: string,
    readonly options: SimulatorProcessOptions,
    private readonly child: ChildProcess,
    private readonly scratch: { remove: () => void },
    private readonly untrack: () => void,
    private readonly output: { text: string },
  ) {
    this.#exit = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      child.once('exit', () => resolve());
    }).then(() => {
      this.#exited = true;
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get account(): BenchAccount {
    return this.options.account;
  }

  /** Starts `telesync simulate` on a free port and waits until it listens. */
  static async start(options: SimulatorProcessOptions): Promise<SimulatorProcess> {
    const scratch = createScratchDir('sim');
    const args = [
      'simulate',
      '--port',
      '0',
      '--seed',
      options.seed,
      '--calls',
      String(options.calls),
      '--auth-id',
      options.account.authId,
      '--auth-token',
      options.account.authToken,
      ...(options.extraAccounts ?? []).flatMap((account) => [
        '--account',
        `${account.authId}:${account.authToken}`,
      ]),
      ...(options.days !== undefined ? ['--days', String(options.days)] : []),
      ...(options.rateLimit !== undefined ? ['--rate-limit', options.rateLimit] : []),
      ...(options.prerender === true ? ['--prerender'] : []),
    ];
    const invocation = telesyncInvocation(args, options.nodeArgs);
    // One process either way (the command execs node): the child's PID is the simulator's, for
    // its niceness and CPU.
    const child = spawn(invocation.command, invocation.args, {
      cwd: scratch.path,
      env: baseChildEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const untrack = child.pid !== undefined ? (options.track?.(child.pid) ?? (() => {})) : () => {};
    const output = { text: '' };
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new HarnessError(`the simulator did not start listening: ${output.text}`));
      }, START_TIMEOUT_MS);
      const onData = (chunk: string): void => {
        output.text = (output.text + chunk).slice(-20_000);
        const match = /listening on (http:\/\/\S+)/.exec(output.text);
        if (match !== null) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout.setEncoding('utf8').on('data', onData);
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        output.text = (output.text + chunk).slice(-20_000);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new HarnessError(
            `the simulator exited before listening (${code ?? signal}): ${output.text}`,
          ),
        );
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    }).catch((error: unknown) => {
      untrack();
      scratch.remove();
      throw error;
    });
    return new SimulatorProcess(url, options, child, scratch, untrack, output);
  }

  /**
   * Gives the simulator the scheduling priority `niceness` (0 is the normal priority, 19 the
   * lowest) and returns the niceness it then has. Lowering a priority needs no privileges.
   */
  setNiceness(niceness: number): number {
    setPriority(this.pid, niceness);
    return this.niceness();
  }

  /** The simulator's scheduling niceness now. */
  niceness(): number {
    return getPriority(this.pid);
  }

  /** CPU time the simulator has used so far, clock ticks. */
  cpuTicks(): number | undefined {
    return readProcessCpuTicks(this.pid);
  }

  async stats(): Promise<SimulatorStats> {
    return (await this.#admin('GET', '/__admin/stats')) as SimulatorStats;
  }

  async resetStats(): Promise<void> {
    await this.#admin('POST', '/__admin/stats/reset');
  }

  async dataset(): Promise<SimulatorDataset> {
    return (await this.#admin('GET', '/__admin/dataset')) as SimulatorDataset;
  }

  /** Adds a trunk call (POST /__admin/calls); answers the record as served. */
  async addCall(body: { end_time: string; visible_at?: string }): Promise<Record<string, unknown>> {
    return (await this.#admin('POST', '/__admin/calls', body)) as Record<string, unknown>;
  }

  /** Stops the simulator (SIGTERM, then SIGKILL) and waits for it to exit. */
  async stop(): Promise<void> {
    if (!this.#exited) {
      this.child.kill('SIGTERM');
      const killer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await this.#exit;
      clearTimeout(killer);
    }
    this.untrack();
    this.scratch.remove();
  }

  /** What the simulator printed (for errors). */
  outputTail(): string {
    return this.output.text;
  }

  async #admin(method: string, path: string, body?: unknown): Promise<unknown> {
    if (this.#exited) {
      throw new HarnessError(`the simulator is no longer running: ${this.output.text}`);
    }
    const response = await fetch(`${this.url}${path}`, {
      method,
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
        : {}),
    });
    const text = await response.text();
    if (!response.ok) {
      throw new HarnessError(
        `simulator admin ${method} ${path} answered ${response.status}: ${text}`,
      );
    }
    return JSON.parse(text) as unknown;
  }
}

/** Basic credentials of an account, as the service takes them. */
export function basicAuthorization(account: BenchAccount): string {
  return `Basic ${Buffer.from(`${account.authId}:${account.authToken}`).toString('base64')}`;
}

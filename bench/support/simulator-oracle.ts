import { Simulator } from '../../src/simulator/simulator.js';
import { HarnessError } from './bench-errors.js';
import {
  basicAuthorization,
  type BenchAccount,
  type SimulatorDataset,
  type SimulatorProcess,
} from './simulator-process.js';
import { answerText } from '../../src/simulator/routes/sim-answer.js';

/**
 * What the simulator process holds, answered without asking it: the simulator's data is a pure
 * function of (seed, sizes, account, anchor), so an in-process Simulator built from the same four,
 * with a clock the oracle sets, serves the very same calls. That lets the harness count the calls of
 * a range after the range has aged past the service's 90-day horizon (a 1M-call backfill outlives
 * the horizon margin), and generate the rows of the COPY limit without HTTP. The reconstruction is
 * checked against the running process (`verifyAgainst`) before it is trusted.
 *
 * No telesync client, parser or normaliser is involved in counting: requests go to the simulator's
 * request handler and the answer is read with JSON.parse.
 */

export const MICROS_PER_MS = 1000;
export const DAY_MICROS = 86_400_000_000;
/** A trunk-list range may span at most 30 days. */
const RANGE_MAX_MICROS = 30 * DAY_MICROS;

/** `YYYY-MM-DD HH:MM:SS.uuuuuu` (UTC), the form of the trunk list's end_time filters. */
export function filterTime(micros: number): string {
  const millis = Math.floor(micros / MICROS_PER_MS);
  const fraction = micros - Math.floor(micros / 1_000_000) * 1_000_000;
  const iso = new Date(millis).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${String(fraction).padStart(6, '0')}`;
}

/** Epoch microseconds of an ISO text with up to six fractional digits (`…Z` or an offset). */
export function isoToMicros(text: string): number {
  const match = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})$/.exec(text.trim());
  if (match === null) throw new HarnessError(`not an ISO date-time: "${text}"`);
  const millis = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(millis)) throw new HarnessError(`not an ISO date-time: "${text}"`);
  return millis * MICROS_PER_MS + Number((match[2] ?? '').padEnd(6, '0'));
}

export function microsToIso(micros: number): string {
  const millis = Math.floor(micros / MICROS_PER_MS);
  const fraction = micros - Math.floor(micros / 1_000_000) * 1_000_000;
  return `${new Date(millis).toISOString().slice(0, 19)}.${String(fraction).padStart(6, '0')}Z`;
}

/** What the oracle needs to rebuild a simulator: its dataset summary and the account. */
export interface OracleSpec {
  readonly dataset: SimulatorDataset;
  readonly account: BenchAccount;
}

interface TrunkPage {
  meta: { total_count: number };
  objects: Record<string, unknown>[];
}

export class SimulatorOracle {
  #clock: number;
  readonly #simulator: Simulator;
  readonly #authorization: string;

  constructor(readonly spec: OracleSpec) {
    this.#clock = isoToMicros(spec.dataset.anchor);
    this.#simulator = new Simulator({
      seed: spec.dataset.seed,
      ...spec.dataset.sizes,
      accounts: [spec.account],
      now: () => this.#clock,
    });
    this.#authorization = basicAuthorization(spec.account);
  }

  /** The anchor (clock at startup) of the reconstructed simulator. */
  get anchorMicros(): number {
    return this.#simulator.state.anchorMicros;
  }

  /** Calls whose end_time lies in [fromMicros, toMicros), as the service counts them. */
  count(fromMicros: number, toMicros: number): number {
    let total = 0;
    for (const [start, end] of chunks(fromMicros, toMicros)) {
      total += this.page(start, end, 1, 0).meta.total_count;
    }
    return total;
  }

  /**
   * One page of the calls ending in [start, end) (at most 30 days), as the service serves it: the
   * body text. The clock is set to `end`, where every call of the range has ended and the range is
   * inside the horizon.
   */
  pageBody(start: number, end: number, limit: number, offset: number): string {
    if (end - start > RANGE_MAX_MICROS) throw new HarnessError('oracle range over 30 days');
    this.#clock = end;
    const query = new URLSearchParams({
      end_time__gte: filterTime(start),
      end_time__lt: filterTime(end),
      limit: String(limit),
      offset: String(offset),
    });
    const outcome = this.#simulator.handle({
      method: 'GET',
      url: `/v1/Account/${this.spec.account.authId}/Trunk/Call/?${query.toString()}`,
      authorization: this.#authorization,
      body: '',
    });
    if (outcome.kind !== 'answer' || outcome.answer.status !== 200) {
      throw new HarnessError(`oracle request failed: ${JSON.stringify(outcome)}`);
    }
    return answerText(outcome.answer);
  }

  page(start: number, end: number, limit: number, offset: number): TrunkPage {
    return JSON.parse(this.pageBody(start, end, limit, offset)) as TrunkPage;
  }

  /**
   * Checks the reconstruction against the running simulator: the count of its last 29 days, asked
   * over HTTP, must equal the oracle's. Throws HarnessError otherwise.
   */
  async verifyAgainst(simulator: SimulatorProcess): Promise<void> {
    const nowMicros = Date.now() * MICROS_PER_MS;
    const from = nowMicros - 29 * DAY_MICROS;
    const to = nowMicros - 60_000_000;
    const live = await countOverHttp(simulator, from, to);
    const rebuilt = this.count(from, to);
    if (live !== rebuilt) {
      throw new HarnessError(
        `the simulator oracle disagrees with the running simulator: ${rebuilt} vs ${live} calls ` +
          `in [${microsToIso(from)}, ${microsToIso(to)}); the harness cannot verify row counts`,
      );
    }
  }
}

/** [from, to) cut into ranges of at most 30 days. */
export function chunks(fromMicros: number, toMicros: number): [number, number][] {
  const ranges: [number, number][] = [];
  for (let start = fromMicros; start < toMicros; start += RANGE_MAX_MICROS) {
    ranges.push([start, Math.min(toMicros, start + RANGE_MAX_MICROS)]);
  }
  return ranges;
}

/** The service's count of calls in [from, to), asked over HTTP with limit=1 (plain fetch). */
export async function countOverHttp(
  simulator: SimulatorProcess,
  fromMicros: number,
  toMicros: number,
): Promise<number> {
  let total = 0;
  for (const [start, end] of chunks(fromMicros, toMicros)) {
    const query = new URLSearchParams({
      end_time__gte: filterTime(start),
      end_time__lt: filterTime(end),
      limit: '1',
    });
    const response = await fetch(
      `${simulator.url}/v1/Account/${simulator.account.authId}/Trunk/Call/?${query.toString()}`,
      { headers: { authorization: basicAuthorization(simulator.account) } },
    );
    const text = await response.text();
    if (!response.ok) throw new HarnessError(`count request answered ${response.status}: ${text}`);
    total += (JSON.parse(text) as TrunkPage).meta.total_count;
  }
  return total;
}

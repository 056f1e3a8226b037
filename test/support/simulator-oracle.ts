import type { RunningSimulator } from '../../src/simulator/simulator-server.js';
import { answerText } from '../../src/simulator/routes/sim-answer.js';

/**
 * What the service holds, read straight from the simulator's request handler with plain
 * JSON.parse: no telesync code (client, parser, normaliser) is involved, so tests can compare
 * telesync's database with it.
 */

export interface OracleCall {
  call_uuid: string;
  total_amount: string;
  end_time: string;
  /** The record as the service serves it (JSON text). */
  text: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function filterTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace('Z', '')
    .replace(/\.(\d{3})$/, '.$1000');
}

/**
 * Every call whose end_time lies in [fromMs, toMs), in 30-day requests. Faults of the exchange
 * (errors, resets, latency, calls added while paging) are switched off while reading and restored
 * after; faults of the data itself (malformed and late records) stay: they are what the service
 * holds.
 */
export function oracleCalls(
  sim: RunningSimulator,
  fromMs: number,
  toMs: number,
  accountIndex = 0,
): OracleCall[] {
  const account = sim.accounts[accountIndex]!;
  const authorization = `Basic ${Buffer.from(`${account.authId}:${account.authToken}`).toString('base64')}`;
  const saved = sim.faults();
  sim.setFaults({ malformed: saved.malformed, late: saved.late, lateSeconds: saved.lateSeconds });
  try {
    const calls: OracleCall[] = [];
    for (let start = fromMs; start < toMs; start += 30 * DAY_MS) {
      const end = Math.min(toMs, start + 30 * DAY_MS);
      for (let offset = 0; ; offset += 20) {
        const query = new URLSearchParams({
          end_time__gte: filterTime(start),
          end_time__lt: filterTime(end),
          limit: '20',
          offset: String(offset),
        });
        // Outside the account's budget: the oracle must not use what the client under test has.
        const outcome = sim.simulator.state.outsideBudget(() =>
          sim.simulator.handle({
            method: 'GET',
            url: `/v1/Account/${account.authId}/Trunk/Call/?${query.toString()}`,
            authorization,
            body: '',
          }),
        );
        if (outcome.kind !== 'answer' || outcome.answer.status !== 200) {
          throw new Error(`oracle request failed: ${JSON.stringify(outcome)}`);
        }
        const page = JSON.parse(answerText(outcome.answer)) as {
          meta: { total_count: number };
          objects: Record<string, unknown>[];
        };
        for (const object of page.objects) {
          calls.push({
            call_uuid: String(object.call_uuid),
            total_amount: String(object.total_amount),
            end_time: String(object.end_time),
            text: JSON.stringify(object),
          });
        }
        if (offset + 20 >= page.meta.total_count) break;
      }
    }
    return calls;
  } finally {
    sim.setFaults(saved);
  }
}

/**
 * The call_uuids of `calls`, sorted: the oracle's side of a comparison with stored rows read in
 * call_uuid order (findStoredCalls).
 */
export function sortedCallUuids(calls: readonly { call_uuid: string }[]): string[] {
  return calls.map((call) => call.call_uuid).sort();
}

/** The exact sum of decimal texts, as decimal text (no floating point anywhere). */
export function sumDecimals(values: readonly string[]): string {
  let scale = 0;
  for (const value of values) scale = Math.max(scale, (value.split('.')[1] ?? '').length);
  let total = 0n;
  for (const value of values) {
    const negative = value.startsWith('-');
    const [whole = '0', fraction = ''] = value.replace('-', '').split('.');
    const units = BigInt(whole + fraction.padEnd(scale, '0'));
    total += negative ? -units : units;
  }
  const sign = total < 0n ? '-' : '';
  const digits = (total < 0n ? -total : total).toString().padStart(scale + 1, '0');
  return scale === 0
    ? `${sign}${digits}`
    : `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Normalises a numeric text for comparison: `527.60050` and `527.6005` are the same amount. */
export function canonicalDecimal(value: string): string {
  if (!value.includes('.')) return value;
  const trimmed = value.replace(/0+$/, '').replace(/\.$/, '');
  return trimmed === '-0' ? '0' : trimmed;
}

import { describe, expect, it } from 'vitest';
import { AccountDataset, DEFAULT_DATASET_SIZES } from '../../src/simulator/data/dataset.js';
import { trunkCallRecordJson } from '../../src/simulator/data/trunk-call-data.js';
import { Simulator } from '../../src/simulator/simulator.js';
import type { SimulatorOptions } from '../../src/simulator/simulator-options.js';
import { MICROS_PER_DAY, toEpochMicros } from '../../src/util/micros.js';

const ANCHOR = toEpochMicros('2026-06-01T12:00:00Z');
const ACCOUNT = { authId: 'MA_PAGE-json_1', authToken: 'tok_page_json' };
const AUTHORIZATION = `Basic ${Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64')}`;

describe('trunkCallRecordJson', () => {
  it('writes the bytes JSON.stringify writes, for every record of several seeds and accounts', () => {
    let withParent = 0;
    let withConference = 0;
    let sipCallee = 0;
    for (const seed of ['seed-1', 'telesync', 'bench']) {
      for (const authId of ['MAACCOUNT1', 'SA_sub-account_2']) {
        const data = new AccountDataset({
          seed,
          authId,
          sizes: { ...DEFAULT_DATASET_SIZES, calls: 3_000, days: 90 },
          anchorMicros: ANCHOR,
        });
        for (let index = 0; index < 3_000; index++) {
          const record = data.callRecordAt(index);
          expect(trunkCallRecordJson(record)).toBe(JSON.stringify(record));
          if (record.parent_call_uuid !== null) withParent++;
          if (record.conference_uuid !== null) withConference++;
          if (record.to_number.startsWith('sip:')) sipCallee++;
        }
      }
    }
    // Every form a generated record takes was among them.
    expect(withParent).toBeGreaterThan(100);
    expect(withConference).toBeGreaterThan(10);
    expect(sipCallee).toBeGreaterThan(100);
  });
});

/** Every page of trunk calls over the last `days` days, as the simulator's answers' bodies. */
function pageBodies(options: SimulatorOptions, days: number): string[] {
  const simulator = new Simulator({
    seed: 'page-json',
    calls: 2_000,
    days: 30,
    accounts: [ACCOUNT],
    now: () => ANCHOR,
    ...options,
  });
  const from = new Date((ANCHOR - days * MICROS_PER_DAY) / 1000)
    .toISOString()
    .replace('T', ' ')
    .slice(0, 19);
  const bodies: string[] = [];
  for (let offset = 0; ; offset += 20) {
    const outcome = simulator.handle({
      method: 'GET',
      url: `/v1/Account/${ACCOUNT.authId}/Trunk/Call/?end_time__gte=${encodeURIComponent(from)}&limit=20&offset=${offset}`,
      authorization: AUTHORIZATION,
      body: '',
    });
    if (outcome.kind !== 'answer') throw new Error(`no answer: ${outcome.kind}`);
    expect(outcome.answer.status).toBe(200);
    bodies.push(outcome.answer.body);
    const page = JSON.parse(outcome.answer.body) as { objects: unknown[] };
    if (page.objects.length < 20) return bodies;
  }
}

describe('a page of trunk calls', () => {
  // A text JSON.stringify wrote comes back unchanged from a parse and a stringify: the pages are
  // the same bytes as when the simulator stringified whole pages.
  const written = (body: string): string => JSON.stringify(JSON.parse(body));

  it('is the JSON text JSON.stringify writes, with generated records', () => {
    const bodies = pageBodies({}, 10);
    expect(bodies.length).toBeGreaterThan(10);
    for (const body of bodies) expect(body).toBe(written(body));
    const first = JSON.parse(bodies[0]!) as { api_id: string; meta: object; objects: object[] };
    expect(Object.keys(first)).toEqual(['api_id', 'meta', 'objects']);
    expect(first.objects).toHaveLength(20);
  });

  it('is the same with malformed records and in the real service shape', () => {
    for (const options of [
      { faults: { malformed: 0.3 } },
      { realShapes: true },
      { realShapes: true, faults: { malformed: 0.3 } },
    ] satisfies SimulatorOptions[]) {
      const bodies = pageBodies(options, 10);
      for (const body of bodies) expect(body).toBe(written(body));
      const records = bodies.flatMap(
        (body) => (JSON.parse(body) as { objects: Record<string, unknown>[] }).objects,
      );
      // Malformed records are served as they are broken, in either shape.
      if ('faults' in options) {
        expect(records.filter((record) => !('call_uuid' in record)).length).toBeGreaterThan(0);
      } else {
        expect(records.every((record) => !('resource_uri' in record))).toBe(true);
      }
    }
  });
});

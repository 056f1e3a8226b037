import { describe, expect, it } from 'vitest';
import { AccountDataset, DEFAULT_DATASET_SIZES } from '../../src/simulator/data/dataset.js';
import { RenderedCallRecords } from '../../src/simulator/data/rendered-call-records.js';
import { trunkCallRecordJson } from '../../src/simulator/data/trunk-call-data.js';
import { Simulator } from '../../src/simulator/simulator.js';
import {
  PRERENDER_MAX_CALLS,
  type SimulatorOptions,
} from '../../src/simulator/simulator-options.js';
import { MICROS_PER_DAY, toEpochMicros } from '../../src/util/micros.js';
import { answerText } from '../../src/simulator/routes/sim-answer.js';

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

/**
 * Every page of trunk calls over the last `days` days, as the simulator's answers' bodies, read
 * `laterMicros` after the simulator started (calls past the start have ended by then).
 */
function pageBodies(options: SimulatorOptions, days: number, laterMicros = 0): string[] {
  return pagesOf(options, days, laterMicros).bodies;
}

function pagesOf(
  options: SimulatorOptions,
  days: number,
  laterMicros = 0,
): { bodies: string[]; simulator: Simulator } {
  let clock = ANCHOR;
  const simulator = new Simulator({
    seed: 'page-json',
    calls: 2_000,
    days: 30,
    accounts: [ACCOUNT],
    now: () => clock,
    ...options,
  });
  clock += laterMicros;
  const from = new Date((clock - days * MICROS_PER_DAY) / 1000)
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
    const body = answerText(outcome.answer);
    bodies.push(body);
    const page = JSON.parse(body) as { objects: unknown[] };
    if (page.objects.length < 20) return { bodies, simulator };
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

describe('a simulator that renders its calls at start (prerender)', () => {
  // Each answer has a request ID of its own: the rest of the page is compared byte for byte.
  const withoutRequestId = (bodies: readonly string[]): string[] =>
    bodies.map((body) => body.replace(/^\{"api_id":"[^"]*"/, '{"api_id":""'));

  it('serves the bytes of one that makes each record when asked, faults and shapes included', () => {
    for (const options of [
      {},
      { faults: { malformed: 0.3 } },
      { realShapes: true },
    ] satisfies SimulatorOptions[]) {
      const made = pagesOf(options, 30);
      const rendered = pagesOf({ ...options, prerender: true }, 30);
      expect(rendered.bodies.length).toBe(101);
      expect(withoutRequestId(rendered.bodies)).toEqual(withoutRequestId(made.bodies));
      // Serving a rendered record counts as generating it, as before.
      const generated = (run: { simulator: Simulator }): number =>
        run.simulator.state.stats.snapshot().recordsGenerated;
      expect(generated(rendered)).toBe(generated(made));
      expect(generated(rendered)).toBeGreaterThanOrEqual(2_000);
    }
  });

  it('makes the calls that end after it started, as they end', () => {
    // Two days on: the 2,000 calls rendered at start and about 130 more, made when served.
    const made = pageBodies({}, 32, 2 * MICROS_PER_DAY);
    const rendered = pageBodies({ prerender: true }, 32, 2 * MICROS_PER_DAY);
    expect(withoutRequestId(rendered)).toEqual(withoutRequestId(made));
    const uuids = new Set(
      made.flatMap((body) =>
        (JSON.parse(body) as { objects: { call_uuid: string }[] }).objects.map((o) => o.call_uuid),
      ),
    );
    expect(uuids.size).toBeGreaterThan(2_050);
  });

  it('holds each rendered call as the JSON text trunkCallRecordJson writes', () => {
    const data = new AccountDataset({
      seed: 'rendered',
      authId: 'MA_RENDERED_1',
      sizes: { ...DEFAULT_DATASET_SIZES, calls: 500, days: 10 },
      anchorMicros: ANCHOR,
    });
    const rendered = RenderedCallRecords.render(data, 500);
    expect(rendered.count).toBe(500);
    let bytes = 0;
    for (let index = 0; index < 500; index++) {
      const text = trunkCallRecordJson(data.callRecordAt(index));
      expect(rendered.textAt(index)?.toString('latin1')).toBe(text);
      bytes += text.length;
    }
    expect(rendered.byteLength).toBe(bytes);
    for (const outside of [-1, 500, 1.5]) expect(rendered.textAt(outside)).toBeUndefined();
  });

  it('refuses to hold more than PRERENDER_MAX_CALLS calls, naming the count', () => {
    expect(
      () =>
        new Simulator({
          calls: 1_000_000,
          prerender: true,
          accounts: [
            ACCOUNT,
            { authId: 'MA_SECOND', authToken: 't2' },
            { authId: 'MA_THIRD', authToken: 't3' },
          ],
          now: () => ANCHOR,
        }),
    ).toThrow(
      /prerender holds every call in memory, 2,000,000 calls over all accounts at most \(got 3 × 1,000,000\)/,
    );
    expect(PRERENDER_MAX_CALLS).toBe(2_000_000);
  });
});

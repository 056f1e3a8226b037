import { describe, expect, it } from 'vitest';
import { Simulator } from '../../src/simulator/simulator.js';
import {
  realPackJson,
  realStreamListMeta,
  realTrunkCallRecord,
  withNanoseconds,
} from '../../src/simulator/data/real-shapes.js';
import { answerText } from '../../src/simulator/routes/sim-answer.js';

const ACCOUNT = { authId: 'MA_UNIT_REAL', authToken: 'tok_unit_real' };
const AUTHORIZATION = `Basic ${Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64')}`;

function get(simulator: Simulator, path: string): { status: number; body: string } {
  const outcome = simulator.handle({
    method: 'GET',
    url: `/v1/Account/${ACCOUNT.authId}/${path}`,
    authorization: AUTHORIZATION,
    body: '',
  });
  if (outcome.kind !== 'answer') throw new Error(`no answer: ${outcome.kind}`);
  return { status: outcome.answer.status, body: answerText(outcome.answer) };
}

describe('realTrunkCallRecord', () => {
  it('writes times in UTC without an offset, keeps fractions, drops the fields real CDRs lack', () => {
    const real = realTrunkCallRecord({
      call_uuid: 'c1',
      billed_duration: 60,
      source_ip: '203.0.113.1',
      initiation_time: '2024-01-15 07:31:50-07:00',
      answer_time: '2024-01-15 14:31:55.250000+00:00',
      end_time: '2024-01-16 00:02:00+09:30',
    });
    expect(real).toEqual({
      call_uuid: 'c1',
      initiation_time: '2024-01-15 14:31:50',
      answer_time: '2024-01-15 14:31:55.250000',
      end_time: '2024-01-15 14:32:00',
    });
  });
});

describe('withNanoseconds', () => {
  it('appends three digits after the microseconds, the same for the same key', () => {
    const once = withNanoseconds('2024-01-15T14:32:22.880097Z', 'k');
    expect(once).toMatch(/^2024-01-15T14:32:22\.880097\d{3}Z$/);
    expect(withNanoseconds('2024-01-15T14:32:22.880097Z', 'k')).toBe(once);
  });
});

describe('realPackJson', () => {
  it('writes application_id as a JSON number digit for digit, past 2^53', () => {
    const text = realPackJson(
      {
        uuid: 'p1',
        name: 'pack',
        application_id: '33660394121755210',
        application_type: 'XML',
        created_on: '2024-01-15T14:32:22.880097Z',
        local_connect: false,
        sticky_sender: true,
        number_pool: '/v1/Account/MA/NumberPool/x/',
        number_priority: [],
      },
      'api-1',
    );
    expect(text).toContain('"application_id":33660394121755210}');
    expect(text).not.toContain('number_priority');
    expect(JSON.parse(text)).toMatchObject({ api_id: 'api-1', uuid: 'p1' });
  });
});

describe('realStreamListMeta', () => {
  it('counts with count and says "no page" with ""', () => {
    expect(
      realStreamListMeta({ limit: 20, offset: 0, next: null, previous: null, total_count: 2 }),
    ).toEqual({ count: 2, limit: 20, offset: 0, next: '', previous: '' });
  });
});

describe('a simulator with realShapes', () => {
  it('answers one caller ID by number with the object itself, and a list with 9-digit times', () => {
    const simulator = new Simulator({
      seed: 'unit-real',
      callerIds: 3,
      accounts: [ACCOUNT],
      realShapes: true,
    });
    const list = JSON.parse(get(simulator, 'VerifiedCallerId/').body) as {
      objects: { phone_number: string; created_at: string }[];
    };
    expect(list.objects).toHaveLength(3);
    expect(list.objects.every((item) => /\.\d{9}Z$/.test(item.created_at))).toBe(true);
    const first = list.objects[0]!;
    const single = get(simulator, `VerifiedCallerId/${first.phone_number}`);
    expect(single.status).toBe(200);
    const object = JSON.parse(single.body) as Record<string, unknown>;
    expect(object).toMatchObject({
      phone_number: first.phone_number,
      created_at: first.created_at,
    });
    expect(object).not.toHaveProperty('objects');
    expect(object).not.toHaveProperty('resource_uri');
  });

  it('serves the spec shapes without the switch', () => {
    const simulator = new Simulator({ seed: 'unit-real', callerIds: 3, accounts: [ACCOUNT] });
    const list = JSON.parse(get(simulator, 'VerifiedCallerId/').body) as {
      objects: { created_at: string }[];
    };
    expect(list.objects.every((item) => /\.\d{6}Z$/.test(item.created_at))).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { AccountDataset, DEFAULT_DATASET_SIZES } from '../../src/simulator/data/dataset.js';
import { formatDecimalUnits } from '../../src/simulator/data/decimal-text.js';
import { writeMessageJson } from '../../src/simulator/data/message-data.js';
import {
  hangupSideOf,
  malformTrunkCallRecord,
  type Malformation,
} from '../../src/simulator/data/trunk-call-data.js';
import { MICROS_PER_SECOND, toEpochMicros } from '../../src/util/micros.js';

const ANCHOR = toEpochMicros('2024-06-01T12:00:00Z');
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SERVICE_TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d$/;
const SERVICE_TIME_FRACTION = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d$/;
const ISO_MICROS_Z = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

function dataset(seed = 'seed-1', authId = 'MAACCOUNT1', calls = 10_000): AccountDataset {
  return new AccountDataset({
    seed,
    authId,
    sizes: { ...DEFAULT_DATASET_SIZES, calls, days: 90 },
    anchorMicros: ANCHOR,
  });
}

/** Exact decimal text of rate × minutes, computed with BigInt from the texts themselves. */
function decimalTimes(rate: string, factor: number): string {
  const [whole = '0', fraction = ''] = rate.split('.');
  const units = BigInt(whole + fraction) * BigInt(factor);
  return formatDecimalUnits(Number(units), fraction.length);
}

describe('simulated data is deterministic', () => {
  it('the same seed and account give the same records; another seed or account others', () => {
    const a = dataset();
    const b = dataset();
    for (const index of [0, 1, 5_000, 9_999]) {
      expect(b.callRecordAt(index)).toEqual(a.callRecordAt(index));
    }
    expect(b.initialEndpoints()).toEqual(a.initialEndpoints());
    expect(b.callerIds()).toEqual(a.callerIds());
    expect(b.packs()).toEqual(a.packs());
    expect(b.messageAt(17)).toEqual(a.messageAt(17));
    expect(b.liveCallUuids()).toEqual(a.liveCallUuids());

    const otherSeed = dataset('seed-2');
    const otherAccount = dataset('seed-1', 'MAACCOUNT2');
    expect(otherSeed.callRecordAt(5).call_uuid).not.toBe(a.callRecordAt(5).call_uuid);
    expect(otherSeed.callRecordAt(5).end_time).not.toBe(a.callRecordAt(5).end_time);
    expect(otherAccount.callRecordAt(5).call_uuid).not.toBe(a.callRecordAt(5).call_uuid);
    expect(otherSeed.messageUuidAt(0)).not.toBe(a.messageUuidAt(0));
    expect(otherSeed.initialEndpoints()).not.toEqual(a.initialEndpoints());
  });

  it('finds a call and a message again by their UUID, and nothing for an unknown one', () => {
    const data = dataset();
    expect(data.callIndexOf(data.callUuidAt(1234))).toBe(1234);
    expect(data.callIndexOf(dataset('seed-2').callUuidAt(1234))).toBeUndefined();
    const uuid = data.messageUuidAt(1999);
    expect(data.messageByUuid(uuid)?.message_uuid).toBe(uuid);
    // Past the message count there is no message, even though the UUID scheme could name one.
    expect(data.messageByUuid(data.messageUuidAt(2000))).toBeUndefined();
  });
});

describe('trunk call records', () => {
  const data = dataset();
  const records = Array.from({ length: 3_000 }, (_, index) => data.callRecordAt(index));

  it('have the spec fields with realistic values', () => {
    const offsets = new Set<string>();
    const sources = new Set<string>();
    let sipUris = 0;
    let withParent = 0;
    for (const record of records) {
      expect(record.call_uuid).toMatch(UUID_V4);
      expect(record.api_id).toMatch(UUID_V4);
      expect(record.resource_uri).toBe(`/v1/Account/MAACCOUNT1/Call/${record.call_uuid}/`);
      expect(record.call_state).toBe('ANSWER');
      expect(['inbound', 'outbound']).toContain(record.call_direction);
      for (const field of ['initiation_time', 'answer_time', 'end_time'] as const) {
        expect(record[field]).toMatch(SERVICE_TIME);
      }
      offsets.add(record.end_time.slice(-6));
      sources.add(record.hangup_source);
      if (record.to_number.startsWith('sip:')) sipUris++;
      if (record.parent_call_uuid !== null) withParent++;
      expect(record.total_rate).toMatch(/^\d+\.\d{5}$/);
    }
    expect([...offsets].sort()).toEqual(
      ['+00:00', '+01:00', '+05:30', '+05:45', '+09:00', '-04:00', '-07:00'].sort(),
    );
    expect([...sources].sort()).toEqual(['Callee', 'Caller', 'Error']);
    expect(sipUris).toBeGreaterThan(100);
    expect(withParent).toBeGreaterThan(0);
    expect(withParent).toBeLessThan(records.length / 5);
  });

  it('have consistent times and durations, the same instant whatever offset the text uses', () => {
    for (let index = 0; index < records.length; index++) {
      const record = records[index]!;
      const initiation = toEpochMicros(record.initiation_time);
      const answer = toEpochMicros(record.answer_time);
      const end = toEpochMicros(record.end_time);
      expect(end).toBe(data.callEndMicros(index));
      expect(initiation).toBeLessThanOrEqual(answer);
      expect(answer).toBeLessThanOrEqual(end);
      expect(record.bill_duration).toBe((end - answer) / MICROS_PER_SECOND);
      expect(record.call_duration).toBe((end - initiation) / MICROS_PER_SECOND);
      expect(record.billed_duration).toBeGreaterThanOrEqual(record.bill_duration);
      expect(record.billed_duration % 60).toBe(0);
      expect(record.billed_duration - record.bill_duration).toBeLessThan(60);
    }
  });

  it('have total_amount exactly total_rate × billed minutes, with no float error', () => {
    for (const record of records) {
      expect(record.total_amount).toBe(
        decimalTimes(record.total_rate, record.billed_duration / 60),
      );
    }
    // A case where floats go wrong: 0.0085 × 3 is 0.025500000000000002 as a JS number.
    expect(0.0085 * 3).not.toBe(0.0255);
    expect(decimalTimes('0.00850', 3)).toBe('0.02550');
    const three = records.find((r) => r.total_rate === '0.00850' && r.billed_duration === 180);
    expect(three?.total_amount).toBe('0.02550');
  });

  it('pair stir_verification with its attestation', () => {
    for (const record of records) {
      const pair = `${record.stir_verification}/${record.Stir_attestation}`;
      expect(['Verified/A', 'Not Verified/B', 'Not Verified/C', 'Not Applicable/']).toContain(pair);
      if (record.stir_verification !== 'Not Applicable') expect(record.from_number).toMatch(/^1/);
    }
  });

  it('map record hangup sources to the filter sides (A29)', () => {
    expect(hangupSideOf('outbound', 'Caller')).toBe('customer');
    expect(hangupSideOf('inbound', 'Caller')).toBe('carrier');
    expect(hangupSideOf('outbound', 'Callee')).toBe('carrier');
    expect(hangupSideOf('inbound', 'Callee')).toBe('customer');
    expect(hangupSideOf('inbound', 'Error')).toBe('trunk');
    expect(hangupSideOf('inbound', 'Somebody')).toBeUndefined();
  });

  it('are broken in a stable set of calls when a share is malformed', () => {
    const broken = (share: number): number[] =>
      records.flatMap((_, index) => (data.malformationAt(index, share) ? [index] : []));
    expect(broken(0.1)).toEqual(broken(0.1));
    expect(broken(0.1).length).toBeGreaterThan(200);
    expect(broken(0.1).length).toBeLessThan(400);
    expect(broken(0)).toEqual([]);
    const record = records[0]!;
    const kinds: Malformation[] = ['bad_end_time', 'bad_amount', 'missing_call_uuid'];
    for (const [kind, variant] of kinds.flatMap((k) => [0, 1, 2].map((v) => [k, v] as const))) {
      const bad = malformTrunkCallRecord(record, kind, variant);
      if (kind === 'bad_end_time') expect(toEpochMicrosOrUndefined(bad.end_time)).toBeUndefined();
      if (kind === 'bad_amount') expect(['abc', '1e309']).toContain(bad.total_amount);
      if (kind === 'missing_call_uuid') expect('call_uuid' in bad).toBe(false);
    }
  });
});

function toEpochMicrosOrUndefined(value: unknown): number | undefined {
  try {
    return toEpochMicros(String(value));
  } catch {
    return undefined;
  }
}

describe('endpoints, caller IDs, packs and messages', () => {
  const data = dataset();

  it('endpoints: unregistered ones lack the three sip_* keys; registered ones have them all', () => {
    const endpoints = data.initialEndpoints();
    expect(endpoints).toHaveLength(45);
    const registered = endpoints.filter((e) => e.sip_registered === 'true');
    const unregistered = endpoints.filter((e) => e.sip_registered === 'false');
    expect(registered.length).toBeGreaterThan(5);
    expect(unregistered.length).toBeGreaterThan(5);
    for (const endpoint of unregistered) {
      expect(Object.keys(endpoint)).not.toContain('sip_contact');
      expect(Object.keys(endpoint)).not.toContain('sip_expires');
      expect(Object.keys(endpoint)).not.toContain('sip_user_agent');
    }
    for (const endpoint of registered) {
      expect(endpoint.sip_expires).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      expect(endpoint.sip_contact).toMatch(/^sip:/);
      expect(typeof endpoint.sip_user_agent).toBe('string');
    }
    for (const endpoint of endpoints) {
      expect(endpoint.endpoint_id).toMatch(/^\d+$/);
      expect(endpoint.resource_uri).toBe(
        `/v1/Account/MAACCOUNT1/Endpoint/${endpoint.endpoint_id}/`,
      );
      expect(endpoint.sip_uri).toBe(`sip:${endpoint.username}@phone.simulator.telesync.test`);
      expect(endpoint.application).toMatch(/^\/v1\/Account\/MAACCOUNT1\/Application\/\d+\/$/);
    }
    expect(new Set(endpoints.map((e) => e.endpoint_id)).size).toBe(45);
    expect(endpoints.some((e) => e.sub_account === null)).toBe(true);
  });

  it('caller IDs: ISO microsecond times, created before modified, unique numbers', () => {
    const ids = data.callerIds();
    expect(ids).toHaveLength(25);
    for (const id of ids) {
      expect(id.created_at).toMatch(ISO_MICROS_Z);
      expect(id.modified_at).toMatch(ISO_MICROS_Z);
      expect(toEpochMicros(id.created_at)).toBeLessThanOrEqual(toEpochMicros(id.modified_at));
      expect(id.phone_number).toMatch(/^\+\d{11,12}$/);
      expect(id.resource_uri).toBe(
        `/v1/Account/MAACCOUNT1/VerifiedCallerId/${id.phone_number.slice(1)}`,
      );
      expect(id.country).toMatch(/^[A-Z]{2}$/);
      expect(id.verification_uuid).toMatch(UUID_V4);
    }
    expect(new Set(ids.map((id) => id.phone_number)).size).toBe(25);
    expect(ids.some((id) => id.subaccount === '')).toBe(true);
  });

  it('packs: each number_priority entry is a permutation of the three number types', () => {
    const packs = data.packs();
    expect(packs).toHaveLength(5);
    for (const pack of packs) {
      expect(pack.created_on).toMatch(ISO_MICROS_Z);
      expect(typeof pack.local_connect).toBe('boolean');
      expect(typeof pack.sticky_sender).toBe('boolean');
      expect(pack.number_priority.map((p) => `${p.country_iso}/${p.service_type}`)).toEqual([
        'US/SMS',
        'US/MMS',
        'CA/SMS',
        'CA/MMS',
      ]);
      for (const entry of pack.number_priority) {
        expect(Object.values(entry.priority).sort()).toEqual(['longcode', 'shortcode', 'tollfree']);
      }
      expect(pack.application_type === '').toBe(pack.application_id === '');
    }
  });

  it('messages: exact amounts, a known pack, and is_domestic twice in the JSON text', () => {
    const packUuids = data.packs().map((p) => p.uuid);
    for (let k = 0; k < 300; k++) {
      const message = data.messageAt(k);
      expect(message.total_amount).toBe(decimalTimes(message.total_rate, message.units));
      expect(message.carrier_fees).toBe(decimalTimes(message.carrier_fees_rate, message.units));
      expect(packUuids).toContain(message.powerpack_id);
      expect(message.message_time).toMatch(SERVICE_TIME_FRACTION);
      expect(message.conversation_expiration_timestamp).toMatch(SERVICE_TIME);
      expect(message.error_code).toBe('000');
      expect(message.isDomestic).toBe(message.destination_country_iso2 === 'US');
    }
    const message = data.messageAt(3);
    const text = writeMessageJson(message, 'api-1');
    const flag = String(message.isDomestic);
    expect(text.split('"is_domestic"')).toHaveLength(3);
    expect(text).toContain(`"is_domestic":"${flag}"`);
    expect(text).toContain(`"is_domestic":${flag}`);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(parsed.is_domestic).toBe(message.isDomestic);
    expect(parsed.api_id).toBe('api-1');
    expect(parsed.dlt_entity_id).toBe('');
  });
});

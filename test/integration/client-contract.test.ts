import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/api-errors.js';
import {
  parseListBody,
  type ReceivedList,
  type ReceivedRecord,
} from '../../src/api/received-json.js';
import type { StartStreamParams } from '../../src/api/stream-rules.js';
import {
  InvalidIdentifierError,
  isNotFound,
  StreamRulesError,
  TelephonyClient,
} from '../../src/api/telephony-client.js';
import type { TrunkCallFilters } from '../../src/api/trunk-call-query.js';
import { HttpTransport } from '../../src/api/transport.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { specFields } from '../support/spec-fields.js';

// Contract tests: the real client (HttpTransport + TelephonyClient) against the simulator over
// HTTP, on every operation, filter and 400 of the spec (sections 4 and 7) and of
// docs/assumptions.md. Expectations are built without the client: from plain fetch + JSON.parse,
// and from predicates written here from the spec's words. The simulators' clocks are fixed or moved
// by hand; nothing here depends on timing.

// ---- time, written here without the product's helpers -------------------------------------------

const SECOND = 1_000_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The main simulator's fixed clock, epoch microseconds (a fraction, to test the µs edges). */
const T0 = Date.parse('2024-06-01T12:00:00.250Z') * 1000;

/** The filter form of 4.6, `YYYY-MM-DD HH:MM:SS.uuuuuu` UTC. */
function wireTime(micros: number): string {
  const iso = new Date(Math.floor(micros / 1000)).toISOString();
  const fraction = micros - Math.floor(micros / SECOND) * SECOND;
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${String(fraction).padStart(6, '0')}`;
}

const SERVICE_TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d$/;

/** The instant of a record time `YYYY-MM-DD HH:MM:SS+HH:MM` (2.6), epoch microseconds. */
function recordMicros(text: string): number {
  expect(text).toMatch(SERVICE_TIME);
  const ms = Date.parse(text.replace(' ', 'T'));
  expect(Number.isFinite(ms)).toBe(true);
  return ms * 1000;
}

// ---- the accounts, simulators and clients --------------------------------------------------------

const ACCOUNT = { authId: 'MACONTRACT0000000001', authToken: 'tok_contract_5ecret_9a8b7c6d5e4f' };
const A = `/v1/Account/${ACCOUNT.authId}`;
const CREDENTIALS = Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let sim: RunningSimulator;
let transport: HttpTransport;
let client: TelephonyClient;
const transports: HttpTransport[] = [];

function transportFor(
  target: RunningSimulator,
  overrides: { authId?: string; authToken?: string; maxRetries?: number } = {},
): HttpTransport {
  const made = new HttpTransport({
    baseUrl: target.url,
    authId: overrides.authId ?? ACCOUNT.authId,
    authToken: overrides.authToken ?? ACCOUNT.authToken,
    maxRps: 10_000,
    concurrency: 4,
    timeoutMs: 15_000,
    maxRetries: overrides.maxRetries ?? 0,
    backoff: { baseDelayMs: 1, maxDelayMs: 5 },
    random: () => 0,
  });
  transports.push(made);
  return made;
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 'client-contract',
    calls: 20_000,
    days: 90,
    endpoints: 45,
    callerIds: 25,
    messages: 200,
    packs: 5,
    liveCalls: 5,
    accounts: [ACCOUNT],
    now: () => T0,
  });
  transport = transportFor(sim);
  client = new TelephonyClient(transport, ACCOUNT.authId);
});

afterAll(async () => {
  await Promise.all(transports.splice(0).map((made) => made.close()));
  await sim?.close();
});

function summary() {
  const account = sim.dataset().accounts[0];
  if (account === undefined) throw new Error('the simulator has no account');
  return account;
}

// ---- plain HTTP, for expectations the client has no part in --------------------------------------

interface RawReply {
  status: number;
  contentType: string | null;
  text: string;
  json: unknown;
}

interface Envelope {
  api_id: string;
  meta: {
    limit: number;
    offset: number;
    next: string | null;
    previous: string | null;
    total_count: number;
  };
  objects: Record<string, unknown>[];
}

async function raw(
  path: string,
  init: { method?: string; body?: string; target?: RunningSimulator } = {},
): Promise<RawReply> {
  const response = await fetch(`${(init.target ?? sim).url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Basic ${CREDENTIALS}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, contentType: response.headers.get('content-type'), text, json };
}

/** Expects an error answer with the body of assumption A2 and returns its text. */
function rawError(reply: RawReply, status: number): string {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.contentType).toBe('application/json');
  const body = reply.json as { api_id?: unknown; error?: unknown };
  expect(body.api_id).toMatch(UUID);
  expect(typeof body.error).toBe('string');
  return body.error as string;
}

/** Every object of a list, paged by offset with plain fetch (not meta.next, not the client). */
async function rawAll(
  path: string,
  params: Record<string, string> = {},
  target: RunningSimulator = sim,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let offset = 0; ; offset += 20) {
    const query = new URLSearchParams({ ...params, limit: '20', offset: String(offset) });
    const reply = await raw(`${path}?${query.toString()}`, { target });
    expect(reply.status, reply.text).toBe(200);
    const body = reply.json as Envelope;
    out.push(...body.objects);
    if (body.objects.length === 0 || out.length >= body.meta.total_count) {
      expect(out).toHaveLength(body.meta.total_count);
      return out;
    }
  }
}

const texts = (objects: readonly unknown[]): string[] =>
  objects.map((object) => JSON.stringify(object));
const recordTexts = (records: readonly ReceivedRecord[]): (string | undefined)[] =>
  records.map((record) => record.text);

// ---- what the client returns ---------------------------------------------------------------------

interface TrunkCall {
  call_uuid: string;
  end_time: string;
  from_number: string;
  to_number: string;
  call_direction: string;
  bill_duration: number;
  hangup_cause_code: number;
  hangup_source: string;
  stir_verification: string;
  Stir_attestation: string;
  [field: string]: unknown;
}

const valueOf = <T = Record<string, unknown>>(record: ReceivedRecord): T => {
  expect(record.problem).toBeUndefined();
  return record.value as T;
};

async function collect(
  pages: AsyncIterable<ReceivedList>,
): Promise<{ pages: ReceivedList[]; records: ReceivedRecord[] }> {
  const all: ReceivedList[] = [];
  for await (const page of pages) all.push(page);
  return { pages: all, records: all.flatMap((page) => page.records) };
}

type RangeFree = Omit<TrunkCallFilters, 'limit' | 'offset'>;

/** Every call the client finds for `filters`, checking that the pages agree on total_count. */
async function clientCalls(filters: RangeFree, target = client): Promise<ReceivedRecord[]> {
  const { pages, records } = await collect(target.iterateTrunkCalls(filters));
  const totals = new Set(pages.map((page) => page.meta.total_count));
  expect(totals.size).toBe(1);
  expect(records).toHaveLength(pages[0]?.meta.total_count ?? -1);
  return records;
}

/** The value met most often (the first of them on a tie). */
function mostCommon(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
}

const uuidsOf = (records: readonly ReceivedRecord[]): string[] =>
  records.map((record) => valueOf<TrunkCall>(record).call_uuid);

/** The error a request fails with; fails the test when it succeeds or throws something else. */
async function apiFailure(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected the request to fail with an ApiError');
}

async function rulesFailure(promise: Promise<unknown>): Promise<StreamRulesError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof StreamRulesError) return error;
    throw error;
  }
  throw new Error('expected the stream start to be refused with StreamRulesError');
}

function expectHttpError(error: ApiError, status: number): void {
  expect(error.kind).toBe('http');
  expect(error.status).toBe(status);
  expect(error.retryable).toBe(false);
  expect(error.apiId).toMatch(UUID);
  expect(typeof error.serviceMessage).toBe('string');
}

// ---- the spec's fields (section 2), from the test suite's own transcription of the spec ---------

const ENDPOINT_FIELDS = Object.keys(specFields('sip_endpoints'));
const REGISTRATION_FIELDS = ['sip_contact', 'sip_expires', 'sip_user_agent'];
const CALLER_ID_FIELDS = Object.keys(specFields('verified_caller_ids'));
const MESSAGE_FIELDS = Object.keys(specFields('messages'));
const PACK_FIELDS = Object.keys(specFields('powerpacks'));
const STREAM_FIELDS = Object.keys(specFields('call_streams'));
const TRUNK_FIELDS = Object.keys(specFields('trunk_calls'));
const sorted = (keys: readonly string[]): string[] => [...keys].sort();

// =================================================================================================

describe('4.1 SIP endpoints', () => {
  it('pages through every endpoint by meta.next, total_count equal to the sum of the pages', async () => {
    const { pages, records } = await collect(client.iterateEndpoints());
    expect(pages).toHaveLength(3);
    expect(pages.map((page) => page.records.length)).toEqual([20, 20, 5]);
    expect(pages.map((page) => page.meta.offset)).toEqual([0, 20, 40]);
    for (const page of pages) {
      expect(page.meta.total_count).toBe(45);
      expect(page.meta.limit).toBe(20);
      expect(page.apiId).toMatch(UUID);
    }
    // A6: meta.next is a path relative to the base address; null on the last page.
    const next = pages[0]?.meta.next ?? '';
    expect(next.startsWith(`${A}/Endpoint/?`)).toBe(true);
    expect(new URL(next, 'http://base.invalid').searchParams.get('offset')).toBe('20');
    expect(pages[0]?.meta.previous).toBeNull();
    const previous = pages[2]?.meta.previous ?? '';
    expect(new URL(previous, 'http://base.invalid').searchParams.get('offset')).toBe('20');
    expect(pages[2]?.meta.next).toBeNull();

    const ids = records.map((record) => valueOf<{ endpoint_id: string }>(record).endpoint_id);
    expect(new Set(ids).size).toBe(45);
    expect(summary().endpoints).toBe(45);
    // Byte for byte what plain fetch, paged by offset, gets.
    expect(recordTexts(records)).toEqual(texts(await rawAll(`${A}/Endpoint/`)));
  });

  it('leaves the three sip_* keys out of the raw text of an unregistered endpoint, and keeps them for a registered one', async () => {
    const { records } = await collect(client.iterateEndpoints());
    const registered = records.filter((r) => valueOf(r).sip_registered === 'true');
    const unregistered = records.filter((r) => valueOf(r).sip_registered === 'false');
    expect(registered.length).toBeGreaterThan(0);
    expect(unregistered.length).toBeGreaterThan(0);
    expect(registered.length + unregistered.length).toBe(records.length);
    for (const record of unregistered) {
      for (const key of REGISTRATION_FIELDS) expect(record.text).not.toContain(`"${key}"`);
      expect(sorted(Object.keys(valueOf(record)))).toEqual(
        sorted(ENDPOINT_FIELDS.filter((key) => !REGISTRATION_FIELDS.includes(key))),
      );
    }
    for (const record of registered) {
      for (const key of REGISTRATION_FIELDS) expect(record.text).toContain(`"${key}":"`);
      expect(sorted(Object.keys(valueOf(record)))).toEqual(sorted(ENDPOINT_FIELDS));
      expect(valueOf(record).sip_expires).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    }
  });

  it('refuses a page size over 20 with a 400 (A5, A31)', async () => {
    const error = await apiFailure(client.listEndpoints({ limit: 21 }));
    expectHttpError(error, 400);
    expect(error.serviceMessage).toMatch(/limit must be at most 20/);
    const page = await client.listEndpoints({ limit: 20, offset: 40 });
    expect(page.records).toHaveLength(5);
  });
});

describe('4.2 verified caller IDs', () => {
  type CallerId = { alias: string; country: string; subaccount: string; phone_number: string };
  let all: Record<string, unknown>[];
  beforeAll(async () => {
    all = await rawAll(`${A}/VerifiedCallerId/`);
  });

  const expectNarrowed = (records: readonly ReceivedRecord[], keep: (id: CallerId) => boolean) => {
    const expected = all.filter((id) => keep(id as unknown as CallerId));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(all.length);
    expect(recordTexts(records)).toEqual(texts(expected));
  };

  it('lists every caller ID over two pages, each with the fields of 2.2', async () => {
    const { pages, records } = await collect(client.iterateVerifiedCallerIds());
    expect(pages.map((page) => page.records.length)).toEqual([20, 5]);
    expect(all).toHaveLength(25);
    expect(recordTexts(records)).toEqual(texts(all));
    for (const record of records) {
      const id = valueOf(record);
      expect(sorted(Object.keys(id))).toEqual(sorted(CALLER_ID_FIELDS));
      expect(id.phone_number).toMatch(/^\+\d+$/);
      expect(id.resource_uri).toBe(
        `${A}/VerifiedCallerId/${String(id.phone_number).replace('+', '')}`,
      );
      expect(id.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    }
  });

  it('keeps the page size and the filters on every page it follows by meta.next (A6)', async () => {
    const { pages, records } = await collect(client.iterateVerifiedCallerIds({ limit: 5 }));
    expect(pages.map((page) => page.records.length)).toEqual([5, 5, 5, 5, 5]);
    expect(recordTexts(records)).toEqual(texts(all));

    const country = mostCommon(all.map((id) => (id as unknown as CallerId).country));
    const expected = all.filter((id) => (id as unknown as CallerId).country === country);
    expect(expected.length).toBeGreaterThan(2);
    const filtered = await collect(client.iterateVerifiedCallerIds({ country, limit: 2 }));
    expect(filtered.pages).toHaveLength(Math.ceil(expected.length / 2));
    expect(recordTexts(filtered.records)).toEqual(texts(expected));
  });

  it('narrows to one country with country=', async () => {
    const country = (all[0] as unknown as CallerId).country;
    const { records } = await collect(client.iterateVerifiedCallerIds({ country }));
    expect(records.every((r) => valueOf<CallerId>(r).country === country)).toBe(true);
    expectNarrowed(records, (id) => id.country === country);
  });

  it('narrows to one friendly name with alias= (exact match, spaces and all)', async () => {
    const alias = (all[1] as unknown as CallerId).alias;
    expect(alias).toContain(' ');
    const { records } = await collect(client.iterateVerifiedCallerIds({ alias }));
    expectNarrowed(records, (id) => id.alias === alias);
    const none = await client.listVerifiedCallerIds({ alias: alias.slice(0, -1) });
    expect(none.meta.total_count).toBe(0);
    expect(none.records).toEqual([]);
  });

  it('narrows to one sub-account with subaccount=', async () => {
    const subaccount = all
      .map((id) => (id as unknown as CallerId).subaccount)
      .find((value) => value !== '');
    expect(subaccount).toBeDefined();
    const { records } = await collect(client.iterateVerifiedCallerIds({ subaccount: subaccount! }));
    expectNarrowed(records, (id) => id.subaccount === subaccount);
  });

  it('combines country and subaccount', async () => {
    const withSub = all.find((id) => (id as unknown as CallerId).subaccount !== '') as unknown as
      CallerId | undefined;
    expect(withSub).toBeDefined();
    const filters = { country: withSub!.country, subaccount: withSub!.subaccount };
    const { records } = await collect(client.iterateVerifiedCallerIds(filters));
    const expected = all.filter((id) => {
      const caller = id as unknown as CallerId;
      return caller.country === filters.country && caller.subaccount === filters.subaccount;
    });
    expect(expected.length).toBeGreaterThan(0);
    expect(recordTexts(records)).toEqual(texts(expected));
  });

  it('answers the phone-number segment with that one number, with or without the plus (A9)', async () => {
    const target = all[7] as unknown as CallerId;
    for (const phoneNumber of [target.phone_number, target.phone_number.slice(1)]) {
      const page = await client.listVerifiedCallerIds({ phoneNumber });
      expect(page.meta.total_count).toBe(1);
      expect(recordTexts(page.records)).toEqual(texts([all[7]]));
    }
  });

  it('404s an unknown phone number, which isNotFound recognises', async () => {
    const error = await apiFailure(client.listVerifiedCallerIds({ phoneNumber: '+19995550000' }));
    expectHttpError(error, 404);
    expect(isNotFound(error)).toBe(true);
    expect(isNotFound(new Error('404'))).toBe(false);
  });
});

describe('4.3 message detail record', () => {
  it('keeps both values of is_domestic, which the record text carries twice', async () => {
    const uuid = summary().exampleMessageUuids[0]!;
    const record = await client.getMessage(uuid);
    const message = valueOf(record);
    expect(message.message_uuid).toBe(uuid);
    expect(message.resource_uri).toBe(`${A}/Message/${uuid}/`);
    expect(record.text?.split('"is_domestic":')).toHaveLength(3);
    const twins = record.duplicateKeys?.is_domestic;
    expect(twins).toHaveLength(2);
    const asBoolean = twins?.find((value) => typeof value === 'boolean');
    expect(twins).toEqual([String(asBoolean), asBoolean]);
    expect(Object.keys(record.duplicateKeys ?? {})).toEqual(['is_domestic']);
    expect(sorted(Object.keys(message))).toEqual(sorted(MESSAGE_FIELDS));
    expect(message.error_code).toBe('000');
    expect(message.message_time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d$/);

    // The same bytes as plain fetch, apart from the per-request api_id.
    const reply = await raw(`${A}/Message/${uuid}/`);
    expect(reply.status).toBe(200);
    const withoutApiId = (text: string | undefined): string | undefined =>
      text?.replace(/"api_id":"[^"]*"/, '"api_id":""');
    expect(withoutApiId(record.text)).toBe(withoutApiId(reply.text));
  });

  it('404s an unknown message UUID', async () => {
    const error = await apiFailure(client.getMessage(randomUUID()));
    expectHttpError(error, 404);
    expect(isNotFound(error)).toBe(true);
  });
});

describe('4.4 sender pack', () => {
  it('returns the pack with api_id, and number_priority ranking each number type once per entry', async () => {
    const uuid = summary().packUuids[0]!;
    const record = await client.getPowerpack(uuid);
    const pack = valueOf(record);
    expect(pack.uuid).toBe(uuid);
    expect(pack.api_id).toMatch(UUID);
    expect(sorted(Object.keys(pack))).toEqual(sorted([...PACK_FIELDS, 'api_id']));
    expect(typeof pack.local_connect).toBe('boolean');
    expect(typeof pack.sticky_sender).toBe('boolean');
    expect(pack.created_on).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(pack.number_pool).toMatch(new RegExp(`^${A}/NumberPool/[^/]+/$`));
    const priorities = pack.number_priority as {
      country_iso: string;
      service_type: string;
      priority: Record<string, string>;
    }[];
    expect(priorities.length).toBeGreaterThan(0);
    for (const entry of priorities) {
      expect(['US', 'CA']).toContain(entry.country_iso);
      expect(['SMS', 'MMS']).toContain(entry.service_type);
      expect(sorted(Object.keys(entry.priority))).toEqual(['priority1', 'priority2', 'priority3']);
      expect(sorted(Object.values(entry.priority))).toEqual(['longcode', 'shortcode', 'tollfree']);
    }
  });

  it('404s an unknown pack', async () => {
    const error = await apiFailure(client.getPowerpack(randomUUID()));
    expectHttpError(error, 404);
    expect(isNotFound(error)).toBe(true);
  });
});

describe('4.5 streams: start and list', () => {
  const liveCall = (k: number): string => summary().liveCallUuids[k]!;

  it('starts a stream that then lists as running: end_time null, nothing billed yet (A7, A23)', async () => {
    const call = liveCall(0);
    const url = 'wss://media.example.com/contract/first';
    const started = await client.startStream(call, {
      service_url: url,
      audio_track: 'both',
      stream_timeout: 120,
    });
    expect(started.api_id).toMatch(UUID);
    expect(started.message).toBe('audio streaming started');
    expect(started.stream_id).toMatch(UUID);

    const page = await client.listCallStreams(call);
    const record = page.records.find((r) => valueOf(r).stream_id === started.stream_id);
    expect(record).toBeDefined();
    const stream = valueOf(record!);
    expect(sorted(Object.keys(stream))).toEqual(sorted(STREAM_FIELDS));
    expect(stream).toMatchObject({
      call_uuid: call,
      service_auth_id: ACCOUNT.authId,
      resource_uri: `${A}/Call/${call}/Stream/${started.stream_id}/`,
      service_url: url,
      audio_track: 'both',
      bidirectional: false,
      end_time: null,
      bill_duration: 0,
      rounded_bill_duration: 0,
      billed_amount: '0',
    });
    expect(stream.start_time).toMatch(SERVICE_TIME);
    expect(recordTexts(page.records)).toEqual(texts(await rawAll(`${A}/Call/${call}/Stream/`)));
  });

  it('refuses a second start at the same service_url with a 400 carrying the service’s message, and allows another URL', async () => {
    const call = liveCall(0);
    const url = 'wss://media.example.com/contract/twice';
    await client.startStream(call, { service_url: url });
    sim.resetStats();
    const error = await apiFailure(client.startStream(call, { service_url: url }));
    expectHttpError(error, 400);
    expect(error.method).toBe('POST');
    expect(error.serviceMessage).toContain(`an active stream already exists at ${url}`);
    expect(error.message).toContain(error.serviceMessage!);
    expect(sim.stats().requests.byStatus).toEqual({ '400': 1 });

    const other = await client.startStream(call, { service_url: `${url}-other` });
    const urls = (await collect(client.iterateCallStreams(call))).records.map(
      (r) => valueOf(r).service_url,
    );
    expect(urls.filter((u) => u === url)).toHaveLength(1);
    expect(urls).toContain(`${url}-other`);
    expect(other.stream_id).toMatch(UUID);
  });

  it('404s a stream start on a completed call and on an unknown call (A30)', async () => {
    const completed = summary().callsWithStreams[0]!;
    for (const call of [completed, randomUUID()]) {
      const error = await apiFailure(
        client.startStream(call, { service_url: 'wss://media.example.com/contract/none' }),
      );
      expectHttpError(error, 404);
      expect(isNotFound(error)).toBe(true);
    }
  });

  it('lists the recorded streams of completed calls, each billed by the minute rounded up (A8)', async () => {
    const calls = summary().callsWithStreams;
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      const { records } = await collect(client.iterateCallStreams(call));
      expect(records.length).toBeGreaterThan(0);
      expect(recordTexts(records)).toEqual(texts(await rawAll(`${A}/Call/${call}/Stream/`)));
      for (const record of records) {
        const stream = valueOf(record);
        expect(sorted(Object.keys(stream))).toEqual(sorted(STREAM_FIELDS));
        expect(stream.call_uuid).toBe(call);
        expect(stream.resource_uri).toBe(`${A}/Call/${call}/Stream/${String(stream.stream_id)}/`);
        expect(String(stream.service_url).startsWith('wss://')).toBe(true);
        expect(['inbound', 'outbound', 'both']).toContain(stream.audio_track);
        if (stream.bidirectional === true) expect(stream.audio_track).toBe('inbound');
        const seconds = stream.bill_duration as number;
        expect(stream.rounded_bill_duration).toBe(Math.ceil(seconds / 60) * 60);
        expect(stream.end_time).toMatch(SERVICE_TIME);
        expect(recordMicros(String(stream.end_time))).toBe(
          recordMicros(String(stream.start_time)) + seconds * SECOND,
        );
      }
    }
  });

  it('404s the stream list of an unknown call', async () => {
    const error = await apiFailure(client.listCallStreams(randomUUID()));
    expectHttpError(error, 404);
    expect(isNotFound(error)).toBe(true);
  });

  it('sends valid edge values and the simulator accepts them as given', async () => {
    const call = liveCall(2);
    const accepted: StartStreamParams[] = [
      { service_url: 'wss://media.example.com/edge/bidi', bidirectional: true },
      {
        service_url: 'wss://media.example.com/edge/all',
        bidirectional: true,
        audio_track: 'inbound',
        stream_timeout: 1,
        status_callback_url: 'https://hooks.example.com/stream',
        status_callback_method: 'GET',
        content_type: 'audio/x-mulaw;rate=8000',
        // 511 bytes: "under 512 bytes in total".
        extra_headers: `key1=${'v'.repeat(511 - 'key1='.length)}`,
      },
      {
        service_url: 'wss://media.example.com/edge/rate',
        audio_track: 'outbound',
        content_type: 'audio/x-l16;rate=16000',
        extra_headers: 'Key1=Value1,key2=2',
      },
    ];
    expect(Buffer.byteLength(accepted[1]!.extra_headers!)).toBe(511);
    for (const params of accepted) {
      const started = await client.startStream(call, params);
      const { records } = await collect(client.iterateCallStreams(call));
      const stream = records.map((r) => valueOf(r)).find((s) => s.stream_id === started.stream_id);
      expect(stream).toMatchObject({
        service_url: params.service_url,
        audio_track: params.audio_track ?? 'inbound',
        bidirectional: params.bidirectional ?? false,
      });
    }
  });
});

describe('4.5 stream rules: refused by the client before sending, and by the simulator on the wire', () => {
  const OK_URL = 'wss://media.example.com/rules';
  const withUrl = (params: Record<string, unknown>): Record<string, unknown> => ({
    service_url: OK_URL,
    ...params,
  });
  const BAD: { rule: string; field: string; body: Record<string, unknown> }[] = [
    { rule: 'service_url is required (absent)', field: 'service_url', body: {} },
    { rule: 'service_url is required (empty)', field: 'service_url', body: { service_url: '' } },
    {
      rule: 'service_url must be a secure WebSocket URL, not https',
      field: 'service_url',
      body: { service_url: 'https://media.example.com/audio' },
    },
    {
      rule: 'service_url must be a secure WebSocket URL, not ws',
      field: 'service_url',
      body: { service_url: 'ws://media.example.com/audio' },
    },
    {
      rule: 'service_url must be a valid URL',
      field: 'service_url',
      body: { service_url: 'not a url' },
    },
    {
      rule: 'audio_track must be inbound, outbound or both',
      field: 'audio_track',
      body: withUrl({ audio_track: 'left' }),
    },
    {
      rule: 'bidirectional must be true or false',
      field: 'bidirectional',
      body: withUrl({ bidirectional: 'true' }),
    },
    {
      rule: 'a bidirectional stream must not use audio_track outbound',
      field: 'audio_track',
      body: withUrl({ bidirectional: true, audio_track: 'outbound' }),
    },
    {
      rule: 'a bidirectional stream must not use audio_track both',
      field: 'audio_track',
      body: withUrl({ bidirectional: true, audio_track: 'both' }),
    },
    {
      rule: 'stream_timeout must be positive, not 0',
      field: 'stream_timeout',
      body: withUrl({ stream_timeout: 0 }),
    },
    {
      rule: 'stream_timeout must be positive, not -30',
      field: 'stream_timeout',
      body: withUrl({ stream_timeout: -30 }),
    },
    {
      rule: 'stream_timeout must be a whole number',
      field: 'stream_timeout',
      body: withUrl({ stream_timeout: 1.5 }),
    },
    {
      rule: 'stream_timeout must be an integer, not text',
      field: 'stream_timeout',
      body: withUrl({ stream_timeout: '60' }),
    },
    {
      rule: 'status_callback_url must be a URL',
      field: 'status_callback_url',
      body: withUrl({ status_callback_url: 'callback' }),
    },
    {
      rule: 'status_callback_method must be GET or POST',
      field: 'status_callback_method',
      body: withUrl({ status_callback_method: 'PUT' }),
    },
    {
      rule: 'content_type must be one of the three codecs',
      field: 'content_type',
      body: withUrl({ content_type: 'audio/x-l16;rate=44100' }),
    },
    {
      rule: 'content_type mulaw is 8000 only',
      field: 'content_type',
      body: withUrl({ content_type: 'audio/x-mulaw;rate=16000' }),
    },
    {
      rule: 'extra_headers must be key=value pairs',
      field: 'extra_headers',
      body: withUrl({ extra_headers: 'key1=value1,key2' }),
    },
    {
      rule: 'extra_headers keys only A-Z, a-z, 0-9',
      field: 'extra_headers',
      body: withUrl({ extra_headers: 'key-1=value1' }),
    },
    {
      rule: 'extra_headers values only A-Z, a-z, 0-9',
      field: 'extra_headers',
      body: withUrl({ extra_headers: 'key1=value 1' }),
    },
    {
      rule: 'extra_headers under 512 bytes (512 is refused)',
      field: 'extra_headers',
      body: withUrl({ extra_headers: `key1=${'v'.repeat(512 - 'key1='.length)}` }),
    },
  ];

  it.each(BAD)('client refuses, sending nothing: $rule', async ({ field, body }) => {
    const call = summary().liveCallUuids[3]!;
    sim.resetStats();
    const sentBefore = transport.meter.requests;
    const error = await rulesFailure(
      client.startStream(call, body as unknown as StartStreamParams),
    );
    expect(error.violations.map((v) => v.field)).toContain(field);
    expect(error.message).toContain(field);
    expect(sim.stats().requests.total).toBe(0);
    expect(transport.meter.requests).toBe(sentBefore);
  });

  it.each(BAD)(
    'simulator refuses the same body sent raw with a 400 naming the rule: $rule',
    async ({ field, body }) => {
      const call = summary().liveCallUuids[4]!;
      const reply = await raw(`${A}/Call/${call}/Stream/`, {
        method: 'POST',
        body: JSON.stringify(body),
      });
      const message = rawError(reply, 400);
      expect(message).toContain(field);
      // The same words the client's refusal uses: one rule book, applied at both ends.
      const refused = await rulesFailure(
        client.startStream(call, body as unknown as StartStreamParams),
      );
      for (const violation of refused.violations) expect(message).toContain(violation.message);
    },
  );

  it('lists every broken rule in one 400, and refuses a body that is not a JSON object', async () => {
    const call = summary().liveCallUuids[4]!;
    const reply = await raw(`${A}/Call/${call}/Stream/`, {
      method: 'POST',
      body: JSON.stringify({
        service_url: 'https://media.example.com/x',
        stream_timeout: 0,
        content_type: 'audio/mp3',
        status_callback_method: 'PATCH',
      }),
    });
    const message = rawError(reply, 400);
    for (const field of ['service_url', 'stream_timeout', 'content_type', 'status_callback_method'])
      expect(message).toContain(field);
    rawError(
      await raw(`${A}/Call/${call}/Stream/`, { method: 'POST', body: 'service_url=wss://a/b' }),
      400,
    );
    rawError(await raw(`${A}/Call/${call}/Stream/`, { method: 'POST', body: '[]' }), 400);
    // Nothing was started by any refused body.
    expect((await client.listCallStreams(call)).meta.total_count).toBe(0);
  });
});

// =================================================================================================

describe('4.6 trunk call list: filters', () => {
  /** Every call of the last day as plain fetch sees it: the universe the filters are checked in. */
  const LOW = T0 - DAY;
  let universe: TrunkCall[];
  const inUniverse = { gte: LOW, lte: T0 };

  beforeAll(async () => {
    universe = (await rawAll(`${A}/Trunk/Call/`, {
      end_time__gte: wireTime(LOW),
      end_time__lte: wireTime(T0),
    })) as TrunkCall[];
    expect(universe.length).toBeGreaterThan(100);
  });

  /**
   * The client, asked for `filters` over the universe's range, returns exactly the universe's calls
   * that `keep` accepts, in the same order and byte for byte, and countTrunkCalls agrees.
   */
  async function expectFilter(
    filters: Omit<RangeFree, 'end_time'>,
    keep: (call: TrunkCall) => boolean,
    options: { narrows?: boolean } = {},
  ): Promise<TrunkCall[]> {
    const query = { ...filters, end_time: inUniverse };
    const expected = universe.filter(keep);
    const records = await clientCalls(query);
    expect(recordTexts(records)).toEqual(texts(expected));
    expect(await client.countTrunkCalls(query)).toBe(expected.length);
    if (options.narrows !== false) {
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(universe.length);
    }
    return expected;
  }

  it('serves records with exactly the fields of 2.6, all ended inside the range', () => {
    for (const call of universe) {
      expect(sorted(Object.keys(call))).toEqual(sorted(TRUNK_FIELDS));
      const end = recordMicros(call.end_time);
      expect(end).toBeGreaterThanOrEqual(LOW);
      expect(end).toBeLessThanOrEqual(T0);
      expect(call.resource_uri).toBe(`${A}/Call/${call.call_uuid}/`);
    }
    expect(new Set(universe.map((call) => call.call_uuid)).size).toBe(universe.length);
  });

  describe('end_time', () => {
    // A call in the middle of the universe; its own end_time is the boundary.
    let pivot: TrunkCall;
    let at: number;
    beforeAll(() => {
      pivot = universe[Math.floor(universe.length / 2)]!;
      at = recordMicros(pivot.end_time);
    });
    const endOf = (call: TrunkCall): number => recordMicros(call.end_time);
    const expectCalls = async (filters: RangeFree, keep: (end: number) => boolean) => {
      const expected = universe.filter((call) => keep(endOf(call)));
      expect(recordTexts(await clientCalls(filters))).toEqual(texts(expected));
      return expected.map((call) => call.call_uuid);
    };

    it('lists only calls that ended at that instant with a bare end_time', async () => {
      const uuids = await expectCalls({ end_time: { eq: at } }, (end) => end === at);
      expect(uuids).toContain(pivot.call_uuid);
      expect(await clientCalls({ end_time: { eq: at + 1 } })).toEqual([]);
      expect(await clientCalls({ end_time: { eq: at - 1 } })).toEqual([]);
    });

    it('lists only calls that ended after the instant with end_time__gt (its own call excluded)', async () => {
      const uuids = await expectCalls({ end_time: { gt: at } }, (end) => end > at);
      expect(uuids).not.toContain(pivot.call_uuid);
      expect(uuidsOf(await clientCalls({ end_time: { gt: at - 1 } }))).toContain(pivot.call_uuid);
    });

    it('lists only calls that ended at or after the instant with end_time__gte (its own call included)', async () => {
      const uuids = await expectCalls({ end_time: { gte: at } }, (end) => end >= at);
      expect(uuids).toContain(pivot.call_uuid);
      expect(uuidsOf(await clientCalls({ end_time: { gte: at + 1 } }))).not.toContain(
        pivot.call_uuid,
      );
    });

    it('lists only calls that ended before the instant with end_time__lt (its own call excluded)', async () => {
      const uuids = await expectCalls(
        { end_time: { gte: LOW, lt: at } },
        (end) => end >= LOW && end < at,
      );
      expect(uuids).not.toContain(pivot.call_uuid);
      const nudged = await clientCalls({ end_time: { gte: LOW, lt: at + 1 } });
      expect(uuidsOf(nudged)).toContain(pivot.call_uuid);
    });

    it('lists only calls that ended at or before the instant with end_time__lte (its own call included)', async () => {
      const uuids = await expectCalls(
        { end_time: { gte: LOW, lte: at } },
        (end) => end >= LOW && end <= at,
      );
      expect(uuids).toContain(pivot.call_uuid);
      const nudged = await clientCalls({ end_time: { gte: LOW, lte: at - 1 } });
      expect(uuidsOf(nudged)).not.toContain(pivot.call_uuid);
    });

    it('lists only calls that ended inside an end_time__gt/__lt range, both ends open', async () => {
      const first = universe[universe.length - 1]!;
      const last = universe[0]!;
      const uuids = await expectCalls(
        { end_time: { gt: endOf(first), lt: endOf(last) } },
        (end) => end > endOf(first) && end < endOf(last),
      );
      expect(uuids).not.toContain(first.call_uuid);
      expect(uuids).not.toContain(last.call_uuid);
      expect(uuids.length).toBeGreaterThan(0);
    });

    it('reads a one-sided bound per A16: a lower bound runs to now, an upper bound from the 90-day horizon', async () => {
      const total90 = summary().callsLast90Days;
      expect(await client.countTrunkCalls({ end_time: { lte: T0 } })).toBe(total90);
      expect(await client.countTrunkCalls({ end_time: { lt: at } })).toBe(
        total90 - universe.filter((call) => endOf(call) >= at).length,
      );
      expect(await client.countTrunkCalls({ end_time: { lte: at } })).toBe(
        total90 - universe.filter((call) => endOf(call) > at).length,
      );
      expect(await client.countTrunkCalls({ end_time: { gte: LOW } })).toBe(universe.length);
    });

    it('takes the filter in every form of 4.6: minutes, seconds, and 1 to 6 fraction digits', async () => {
      // One lower bound, the minute that holds the pivot, spelt in each form 4.6 allows.
      const minuteFloor = Math.floor(at / MINUTE) * MINUTE;
      const iso = new Date(minuteFloor / 1000).toISOString();
      const minuteText = `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
      const forms: [string, number][] = [
        [minuteText, minuteFloor],
        [`${minuteText}:00`, minuteFloor],
        [`${minuteText}:00.5`, minuteFloor + 500_000],
        [`${minuteText}:00.000001`, minuteFloor + 1],
      ];
      for (const [text, micros] of forms) {
        const query = new URLSearchParams({ end_time__gte: text, limit: '1' });
        const reply = await raw(`${A}/Trunk/Call/?${query.toString()}`);
        expect(reply.status, `${text}: ${reply.text}`).toBe(200);
        expect((reply.json as Envelope).meta.total_count).toBe(
          universe.filter((call) => endOf(call) >= micros).length,
        );
      }
    });
  });

  describe('bill_duration', () => {
    let b: number;
    beforeAll(() => {
      const durations = universe.map((call) => call.bill_duration).sort((x, y) => x - y);
      b = durations[Math.floor(durations.length / 2)]!;
    });

    it('lists only calls of exactly that many seconds with a bare bill_duration', async () => {
      await expectFilter({ bill_duration: { eq: b } }, (c) => c.bill_duration === b);
    });
    it('lists only longer calls with bill_duration__gt', async () => {
      await expectFilter({ bill_duration: { gt: b } }, (c) => c.bill_duration > b);
    });
    it('lists only calls at least that long with bill_duration__gte', async () => {
      await expectFilter({ bill_duration: { gte: b } }, (c) => c.bill_duration >= b);
    });
    it('lists only shorter calls with bill_duration__lt', async () => {
      await expectFilter({ bill_duration: { lt: b } }, (c) => c.bill_duration < b);
    });
    it('lists only calls at most that long with bill_duration__lte', async () => {
      await expectFilter({ bill_duration: { lte: b } }, (c) => c.bill_duration <= b);
    });
    it('combines a lower and an upper bill_duration bound', async () => {
      await expectFilter(
        { bill_duration: { gte: 30, lt: b } },
        (c) => c.bill_duration >= 30 && c.bill_duration < b,
      );
    });
  });

  describe('from_number and to_number', () => {
    it('lists only calls from one number when from_number is a whole number', async () => {
      const number = mostCommon(universe.map((call) => call.from_number));
      const matched = await expectFilter({ from_number: number }, (c) => c.from_number === number);
      expect(matched.length).toBeGreaterThan(1);
    });

    it('lists every call whose from_number starts with a prefix', async () => {
      const prefix = mostCommon(universe.map((call) => call.from_number)).slice(0, 4);
      const matched = await expectFilter({ from_number: prefix }, (c) =>
        c.from_number.startsWith(prefix),
      );
      expect(new Set(matched.map((call) => call.from_number)).size).toBeGreaterThan(1);
    });

    it('lists only calls to one number when to_number is a whole number', async () => {
      const number = mostCommon(
        universe.map((call) => call.to_number).filter((to) => !to.startsWith('sip:')),
      );
      await expectFilter({ to_number: number }, (c) => c.to_number === number);
    });

    it('lists calls to SIP URIs with the prefix "sip:", and to one SIP user with a longer one', async () => {
      const sip = await expectFilter({ to_number: 'sip:' }, (c) => c.to_number.startsWith('sip:'));
      expect(sip.every((call) => call.call_direction === 'inbound')).toBe(true);
      const user = sip[0]!.to_number.slice(0, sip[0]!.to_number.indexOf('@') + 1);
      await expectFilter({ to_number: user }, (c) => c.to_number.startsWith(user));
      await expectFilter(
        { to_number: sip[0]!.to_number },
        (c) => c.to_number === sip[0]!.to_number,
      );
    });

    it('lists nothing for a prefix no call has', async () => {
      await expectFilter({ from_number: '0000' }, () => false, { narrows: false });
    });
  });

  it('splits the calls into inbound and outbound with call_direction', async () => {
    const inbound = await expectFilter(
      { call_direction: 'inbound' },
      (c) => c.call_direction === 'inbound',
    );
    const outbound = await expectFilter(
      { call_direction: 'outbound' },
      (c) => c.call_direction === 'outbound',
    );
    expect(inbound.length + outbound.length).toBe(universe.length);
  });

  it('lists only calls with one hangup cause with hangup_cause_code, for every code present', async () => {
    const codes = [...new Set(universe.map((call) => call.hangup_cause_code))];
    expect(codes.length).toBeGreaterThan(1);
    let total = 0;
    for (const code of codes) {
      total += (
        await expectFilter({ hangup_cause_code: code }, (c) => c.hangup_cause_code === code)
      ).length;
    }
    expect(total).toBe(universe.length);
    await expectFilter({ hangup_cause_code: 1234 }, () => false, { narrows: false });
  });

  it('maps hangup_source customer, carrier and trunk onto the records’ Caller, Callee and Error (A29)', async () => {
    // A29: customer = caller of an outbound call or callee of an inbound one; carrier = the
    // other party; trunk = Error.
    const side = (call: TrunkCall): string => {
      if (call.hangup_source === 'Error') return 'trunk';
      const customer = call.call_direction === 'outbound' ? 'Caller' : 'Callee';
      return call.hangup_source === customer ? 'customer' : 'carrier';
    };
    expect(
      universe.every((call) => ['Caller', 'Callee', 'Error'].includes(call.hangup_source)),
    ).toBe(true);
    let total = 0;
    for (const source of ['customer', 'carrier', 'trunk'] as const) {
      total += (await expectFilter({ hangup_source: source }, (c) => side(c) === source)).length;
    }
    expect(total).toBe(universe.length);
  });

  it('lists only calls of one STIR verification, matching the attestation of 4.6', async () => {
    const attestation: Record<string, (value: string) => boolean> = {
      Verified: (value) => value === 'A',
      'Not Verified': (value) => value === 'B' || value === 'C',
      'Not Applicable': (value) => value === '',
    };
    let total = 0;
    for (const value of ['Verified', 'Not Verified', 'Not Applicable'] as const) {
      const matched = await expectFilter(
        { stir_verification: value },
        (c) => c.stir_verification === value,
      );
      expect(matched.every((call) => attestation[value]!(call.Stir_attestation))).toBe(true);
      total += matched.length;
    }
    expect(total).toBe(universe.length);
    const notApplicable = universe.filter((c) => c.stir_verification === 'Not Applicable');
    expect(notApplicable.every((call) => !call.from_number.startsWith('1'))).toBe(true);
  });

  it('combines filters: every one must hold', async () => {
    await expectFilter(
      {
        call_direction: 'inbound',
        to_number: 'sip:',
        hangup_source: 'customer',
        bill_duration: { gte: 10 },
      },
      (c) =>
        c.call_direction === 'inbound' &&
        c.to_number.startsWith('sip:') &&
        c.hangup_source === 'Callee' &&
        c.bill_duration >= 10,
    );
    const prefix = universe.find((c) => c.call_direction === 'outbound')!.from_number.slice(0, 4);
    await expectFilter(
      {
        call_direction: 'outbound',
        from_number: prefix,
        stir_verification: 'Verified',
        hangup_cause_code: 4000,
        bill_duration: { lte: 600 },
      },
      (c) =>
        c.call_direction === 'outbound' &&
        c.from_number.startsWith(prefix) &&
        c.stir_verification === 'Verified' &&
        c.hangup_cause_code === 4000 &&
        c.bill_duration <= 600,
    );
  });
});

describe('4.6 trunk call list: paging and order', () => {
  const RANGE = { gte: T0 - 12 * HOUR, lte: T0 };

  it('returns every call of a range once over its pages, as many as countTrunkCalls says', async () => {
    const { pages, records } = await collect(client.iterateTrunkCalls({ end_time: RANGE }));
    const count = await client.countTrunkCalls({ end_time: RANGE });
    expect(count).toBeGreaterThan(40);
    expect(records).toHaveLength(count);
    expect(new Set(uuidsOf(records)).size).toBe(count);
    expect(pages.map((page) => page.meta.offset)).toEqual(pages.map((_, k) => k * 20));
    expect(pages.slice(0, -1).every((page) => page.records.length === 20)).toBe(true);
    expect(pages.every((page) => page.meta.total_count === count)).toBe(true);
    const expected = await rawAll(`${A}/Trunk/Call/`, {
      end_time__gte: wireTime(RANGE.gte),
      end_time__lte: wireTime(RANGE.lte),
    });
    expect(recordTexts(records)).toEqual(texts(expected));
  });

  it('serves a page at any limit and offset as that slice of the whole list', async () => {
    const all = await clientCalls({ end_time: RANGE });
    const page = await client.listTrunkCalls({ end_time: RANGE, limit: 7, offset: 13 });
    expect(page.meta).toMatchObject({ limit: 7, offset: 13, total_count: all.length });
    expect(recordTexts(page.records)).toEqual(recordTexts(all.slice(13, 20)));
    const beyond = await client.listTrunkCalls({ end_time: RANGE, offset: all.length });
    expect(beyond.records).toEqual([]);
    expect(beyond.meta.total_count).toBe(all.length);
    const last = await client.listTrunkCalls({ end_time: RANGE, limit: 1, offset: all.length - 1 });
    expect(recordTexts(last.records)).toEqual(recordTexts(all.slice(-1)));
  });

  it('keeps a stable order, newest end_time first (A17): two reads are equal', async () => {
    const first = await clientCalls({ end_time: RANGE });
    const second = await clientCalls({ end_time: RANGE });
    expect(recordTexts(second)).toEqual(recordTexts(first));
    const ends = first.map((record) => recordMicros(valueOf<TrunkCall>(record).end_time));
    for (let k = 1; k < ends.length; k++) expect(ends[k]).toBeLessThanOrEqual(ends[k - 1]!);
  });
});

describe('4.6 trunk call list: rules', () => {
  it('lists the last 7 days when no end_time filter is given (rule 2)', async () => {
    const page = await client.listTrunkCalls({});
    const total = page.meta.total_count;
    expect(total).toBe(summary().callsLast7Days);
    expect(total).toBeGreaterThan(0);
    expect(await client.countTrunkCalls({ end_time: { gte: T0 - 7 * DAY, lte: T0 } })).toBe(total);
    // The oldest call of the default window is inside it, the next older one is not.
    const oldest = await client.listTrunkCalls({ limit: 1, offset: total - 1 });
    const oldestEnd = recordMicros(valueOf<TrunkCall>(oldest.records[0]!).end_time);
    expect(oldestEnd).toBeGreaterThanOrEqual(T0 - 7 * DAY);
    const older = await client.listTrunkCalls({
      end_time: { gte: T0 - 8 * DAY, lt: T0 - 7 * DAY },
      limit: 1,
    });
    expect(recordMicros(valueOf<TrunkCall>(older.records[0]!).end_time)).toBeLessThan(T0 - 7 * DAY);
    for (const record of page.records) {
      const end = recordMicros(valueOf<TrunkCall>(record).end_time);
      expect(end).toBeGreaterThanOrEqual(T0 - 7 * DAY);
      expect(end).toBeLessThanOrEqual(T0);
    }
    // A field filter alone keeps the 7-day default.
    const inbound = await client.countTrunkCalls({ call_direction: 'inbound' });
    const outbound = await client.countTrunkCalls({ call_direction: 'outbound' });
    expect(inbound + outbound).toBe(total);
  });

  it('reaches back exactly 90 days and no further (rule 1, A15)', async () => {
    const horizon = T0 - 90 * DAY;
    expect(await client.countTrunkCalls({ end_time: { gte: horizon } })).toBe(
      summary().callsLast90Days,
    );
    // __gt one microsecond before the horizon admits nothing older than the horizon itself.
    expect(await client.countTrunkCalls({ end_time: { gt: horizon - 1 } })).toBe(
      summary().callsLast90Days,
    );
    for (const end_time of [{ gte: horizon - 1 }, { gt: horizon - 2 }, { eq: horizon - DAY }]) {
      const error = await apiFailure(client.listTrunkCalls({ end_time }));
      expectHttpError(error, 400);
      expect(error.serviceMessage).toMatch(/90-day horizon/);
    }
    // A range that ends before the horizon is empty, not an error (A32).
    expect(await client.countTrunkCalls({ end_time: { lte: horizon - DAY } })).toBe(0);
  });

  it('accepts a range of exactly 30 days and refuses one a microsecond longer (rule 3, A32)', async () => {
    const from = T0 - 45 * DAY;
    const accepted: TrunkCallFilters['end_time'][] = [
      { gte: from, lt: from + 30 * DAY },
      { gte: from, lte: from + 30 * DAY },
      { gt: from, lte: from + 30 * DAY },
      { gte: T0 - 30 * DAY, lte: T0 },
    ];
    for (const end_time of accepted) {
      const count = await client.countTrunkCalls({ end_time });
      expect(count).toBeGreaterThan(0);
    }
    const refused: TrunkCallFilters['end_time'][] = [
      { gte: from, lt: from + 30 * DAY + 1 },
      { gte: from, lte: from + 30 * DAY + 1 },
      { gt: from - 1, lte: from + 30 * DAY },
      { gte: T0 - 60 * DAY, lte: T0 },
    ];
    for (const end_time of refused) {
      const error = await apiFailure(client.listTrunkCalls({ end_time }));
      expectHttpError(error, 400);
      expect(error.serviceMessage).toMatch(/more than 30 days/);
    }
    // The same edge in the minute form, sent raw.
    const rawRange = (lt: string) =>
      raw(
        `${A}/Trunk/Call/?${new URLSearchParams({ end_time__gte: '2024-05-01 00:00', end_time__lt: lt }).toString()}`,
      );
    expect((await rawRange('2024-05-31 00:00')).status).toBe(200);
    expect(rawError(await rawRange('2024-05-31 00:00:00.000001'), 400)).toMatch(/30 days/);
  });

  it('returns an empty list, not an error, for a range whose lower bound is above its upper', async () => {
    expect(await client.countTrunkCalls({ end_time: { gte: T0 - DAY, lt: T0 - 2 * DAY } })).toBe(0);
  });
});

describe('4.6 trunk call list: every 400', () => {
  const listRaw = (query: string) => raw(`${A}/Trunk/Call/?${query}`);

  it('refuses limit 21, from the client and raw (A5)', async () => {
    const error = await apiFailure(client.listTrunkCalls({ limit: 21 }));
    expectHttpError(error, 400);
    expect(error.serviceMessage).toMatch(/limit must be at most 20/);
    expect(rawError(await listRaw('limit=21'), 400)).toMatch(/limit must be at most 20/);
    expect(rawError(await listRaw('limit=0'), 400)).toMatch(/limit/);
    const twenty = await client.listTrunkCalls({ limit: 20 });
    expect(twenty.meta.limit).toBe(20);
    expect(twenty.records).toHaveLength(20);
  });

  it('refuses an end_time that is not of the form YYYY-MM-DD HH:MM[:ss[.uuuuuu]], naming the parameter', async () => {
    const forms = [
      'yesterday',
      '2024-06-01T11:00:00Z',
      '2024-06-01 11:00:00+00:00',
      '2024-06-01 11',
      '2024-02-30 10:00',
      '2024-06-01 24:00',
      '2024-06-01 11:00:00.1234567',
      '1717239600',
      '',
    ];
    for (const form of forms) {
      for (const name of [
        'end_time',
        'end_time__gt',
        'end_time__gte',
        'end_time__lt',
        'end_time__lte',
      ]) {
        const message = rawError(
          await listRaw(new URLSearchParams({ [name]: form }).toString()),
          400,
        );
        expect(message).toContain(name);
      }
    }
    // The client cannot spell a bad form, but a bad instant still reaches the service and is refused.
    const error = await apiFailure(client.listTrunkCalls({ end_time: { gte: Number.NaN } }));
    expectHttpError(error, 400);
    expect(error.serviceMessage).toMatch(/end_time__gte must have the form/);
  });

  it('refuses an unknown, misspelt or repeated parameter, naming it (A31)', async () => {
    expect(rawError(await listRaw('foo=1'), 400)).toMatch(/unknown parameter foo/);
    expect(rawError(await listRaw('end_time__gtee=2024-06-01%2011:00'), 400)).toMatch(
      /unknown parameter end_time__gtee/,
    );
    expect(rawError(await listRaw('bill_duration__ge=5'), 400)).toMatch(
      /unknown parameter bill_duration__ge/,
    );
    expect(rawError(await listRaw('call_direction=inbound&call_direction=outbound'), 400)).toMatch(
      /call_direction is given 2 times/,
    );
  });

  it('refuses a filter value outside the allowed set, naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      ['call_direction=sideways', /call_direction must be one of inbound, outbound/],
      // Records say Caller/Callee/Error; the filter takes only the sides of A29.
      ['hangup_source=Caller', /hangup_source must be one of customer, carrier, trunk/],
      ['hangup_source=Error', /hangup_source/],
      ['stir_verification=verified', /stir_verification must be one of/],
      ['bill_duration=abc', /bill_duration must be a whole number/],
      ['bill_duration__gt=1.5', /bill_duration__gt must be a whole number/],
      ['hangup_cause_code=normal', /hangup_cause_code must be a whole number/],
      ['offset=-1', /offset/],
    ];
    for (const [query, message] of cases)
      expect(rawError(await listRaw(query), 400)).toMatch(message);
  });

  it('lists every problem of a request in one 400', async () => {
    const message = rawError(
      await listRaw('limit=21&call_direction=up&end_time__gte=later&nope=1'),
      400,
    );
    for (const name of ['limit', 'call_direction', 'end_time__gte', 'nope'])
      expect(message).toContain(name);
  });
});

// =================================================================================================

describe('4.6 rule 5: only completed calls, with a clock moved by hand', () => {
  let clock = T0;
  let moving: RunningSimulator;
  let movingClient: TelephonyClient;
  beforeAll(async () => {
    moving = await startSimulator({
      seed: 'client-contract-clock',
      calls: 20_000,
      accounts: [ACCOUNT],
      now: () => clock,
    });
    movingClient = new TelephonyClient(transportFor(moving), ACCOUNT.authId);
  });
  afterAll(async () => {
    await moving?.close();
  });

  it('does not list a call whose end_time is still in the future until the clock reaches it', async () => {
    clock = T0;
    const added = moving.addCall({ endTime: T0 + 90 * SECOND });
    const uuid = added.call_uuid as string;
    const end = recordMicros(added.end_time as string);
    expect(end).toBeGreaterThan(clock);
    const around = { gte: T0 - HOUR, lte: T0 + HOUR };
    const seen = async (filters: RangeFree): Promise<boolean> =>
      uuidsOf(await clientCalls(filters, movingClient)).includes(uuid);

    expect(await seen({ end_time: around })).toBe(false);
    expect(await seen({ end_time: { eq: end } })).toBe(false);
    expect(await seen({})).toBe(false);

    clock = end - 1;
    expect(await seen({ end_time: around })).toBe(false);

    clock = end;
    expect(await seen({ end_time: around })).toBe(true);
    expect(await seen({ end_time: { eq: end } })).toBe(true);
    expect(await seen({})).toBe(true);
    const listed = (await clientCalls({ end_time: { eq: end } }, movingClient)).find(
      (record) => valueOf<TrunkCall>(record).call_uuid === uuid,
    );
    expect(listed?.text).toBe(JSON.stringify(added));
  });

  it('lists no call that ends after now, and lists the next ones as the clock passes them', async () => {
    clock = T0;
    const ahead = { gte: T0 + SECOND, lte: T0 + 3 * HOUR };
    const before = await clientCalls({ end_time: ahead }, movingClient);
    expect(before).toEqual([]);
    clock = T0 + 3 * HOUR;
    const after = await clientCalls({ end_time: ahead }, movingClient);
    expect(after.length).toBeGreaterThan(1);
    for (const record of after) {
      const end = recordMicros(valueOf<TrunkCall>(record).end_time);
      expect(end).toBeGreaterThanOrEqual(ahead.gte);
      expect(end).toBeLessThanOrEqual(clock);
    }
    expect(await movingClient.countTrunkCalls({})).toBe(
      moving.dataset().accounts[0]!.callsLast7Days,
    );
  });

  it('stops a stream at its stream_timeout: billed, with an end_time, and its URL free again', async () => {
    clock = T0;
    const call = moving.dataset().accounts[0]!.liveCallUuids[0]!;
    const url = 'wss://media.example.com/contract/timeout';
    const started = await movingClient.startStream(call, { service_url: url, stream_timeout: 60 });
    expect((await apiFailure(movingClient.startStream(call, { service_url: url }))).status).toBe(
      400,
    );
    clock = T0 + 61 * SECOND;
    const stream = (await movingClient.listCallStreams(call)).records
      .map((record) => valueOf(record))
      .find((record) => record.stream_id === started.stream_id);
    expect(stream).toMatchObject({ bill_duration: 60, rounded_bill_duration: 60 });
    expect(stream?.end_time).toMatch(SERVICE_TIME);
    expect(recordMicros(String(stream?.end_time))).toBe(
      recordMicros(String(stream?.start_time)) + 60 * SECOND,
    );
    const again = await movingClient.startStream(call, { service_url: url });
    expect(again.stream_id).not.toBe(started.stream_id);
  });
});

// =================================================================================================

describe('authentication and unknown paths', () => {
  it('answers wrong credentials with a 401 that is not retried: exactly one request reaches the service', async () => {
    const wrong = new TelephonyClient(
      transportFor(sim, { authToken: 'tok_wrong_0000000000000000', maxRetries: 3 }),
      ACCOUNT.authId,
    );
    sim.resetStats();
    const error = await apiFailure(wrong.listEndpoints());
    expectHttpError(error, 401);
    expect(error.attempts ?? 1).toBe(1);
    expect(sim.stats().requests.total).toBe(1);
    expect(sim.stats().requests.byStatus).toEqual({ '401': 1 });
  });

  it('answers credentials of another account than the path’s with a 401 naming both (A33)', async () => {
    const foreign = new TelephonyClient(transport, 'MAOTHERACCOUNT00000001');
    const error = await apiFailure(foreign.listEndpoints());
    expectHttpError(error, 401);
    expect(error.serviceMessage).toContain(ACCOUNT.authId);
    expect(error.serviceMessage).toContain('MAOTHERACCOUNT00000001');
  });

  it('answers an unknown path with a 404 and a wrong method with a 405', async () => {
    for (const path of [`${A}/NoSuchThing/`, `${A}/Trunk/`, '/v2/Account/x/Endpoint/']) {
      const error = await apiFailure(transport.request({ method: 'GET', path }, parseListBody));
      expectHttpError(error, 404);
      expect(isNotFound(error)).toBe(true);
      expect(error.path).toBe(path);
    }
    rawError(await raw(`${A}/NoSuchThing/`), 404);
    const wrongMethod = await apiFailure(
      transport.request({ method: 'POST', path: `${A}/Endpoint/`, body: {} }, parseListBody),
    );
    expectHttpError(wrongMethod, 405);
  });
});

describe('the auth token never appears in an error', () => {
  function allText(error: unknown): string {
    const parts: string[] = [];
    let current: unknown = error;
    while (current instanceof Error) {
      parts.push(String(current), current.message, current.stack ?? '', JSON.stringify(current));
      if (current instanceof ApiError) parts.push(JSON.stringify(current.details()));
      current = current.cause;
    }
    return parts.join('\n');
  }

  it('keeps the token and the Basic credentials out of every failure, even when the service echoes it', async () => {
    const wrongToken = 'tok_wrong_but_still_secret_1234';
    const wrongClient = new TelephonyClient(
      transportFor(sim, { authToken: wrongToken }),
      ACCOUNT.authId,
    );
    const call = summary().liveCallUuids[2]!;
    // A stream URL that carries the token: the duplicate-stream 400 echoes it back in its body.
    const echoing = `wss://media.example.com/${ACCOUNT.authToken}`;
    await client.startStream(call, { service_url: echoing });
    const errors: unknown[] = [
      await apiFailure(client.startStream(call, { service_url: echoing })),
      await apiFailure(wrongClient.listEndpoints()),
      await apiFailure(new TelephonyClient(transport, 'MAOTHER').getMessage(randomUUID())),
      await apiFailure(client.getMessage(randomUUID())),
      await apiFailure(client.getPowerpack(randomUUID())),
      await apiFailure(client.listTrunkCalls({ limit: 21 })),
      await apiFailure(client.listTrunkCalls({ end_time: { gte: T0 - 100 * DAY } })),
      await apiFailure(client.listVerifiedCallerIds({ phoneNumber: '+10000000000' })),
      await rulesFailure(client.startStream(call, { service_url: 'ws://insecure.example.com/a' })),
    ];
    const echoed = errors[0] as ApiError;
    expect(echoed.serviceMessage).toContain('[redacted]');
    const wrongCredentials = Buffer.from(`${ACCOUNT.authId}:${wrongToken}`).toString('base64');
    for (const error of errors) {
      const text = allText(error);
      for (const secret of [ACCOUNT.authToken, CREDENTIALS, wrongToken, wrongCredentials])
        expect(text).not.toContain(secret);
    }
  });
});

describe('identifiers with URL-special characters', () => {
  // Refused before any request: an identifier that is not of its form never goes into a path.
  it('a phone number holding "%" is refused as not a phone number', async () => {
    const error = await client
      .listVerifiedCallerIds({ phoneNumber: '100%' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidIdentifierError);
  });
  it('an encoded "+" is the text "%2B", not a plus sign, and is refused', async () => {
    const error = await client
      .listVerifiedCallerIds({ phoneNumber: '%2B447700900000' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidIdentifierError);
  });
});

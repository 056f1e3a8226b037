import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import {
  formatFilterMicros,
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_SECOND,
  toEpochMicros,
} from '../../src/util/micros.js';

// The service's behaviour over real HTTP: every route, envelope, rule and error, with a clock the
// tests move by hand (no test waits on a timer).

const T0 = toEpochMicros('2024-06-01T12:00:00.250000Z');
let now = T0;
const ACCOUNT_A = { authId: 'MAAAAAAAAAAAAAAAAAAA', authToken: 'token-a-0123456789' };
const ACCOUNT_B = { authId: 'MABBBBBBBBBBBBBBBBBB', authToken: 'token-b-0123456789' };
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const A = `/v1/Account/${ACCOUNT_A.authId}`;

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}
interface Envelope<T = Record<string, unknown>> {
  api_id: string;
  meta: {
    limit: number;
    offset: number;
    next: string | null;
    previous: string | null;
    total_count: number;
  };
  objects: T[];
}
type TrunkRecord = Record<string, unknown> & { call_uuid: string; end_time: string };

let sim: RunningSimulator;

function basic(account: { authId: string; authToken: string }): string {
  return `Basic ${Buffer.from(`${account.authId}:${account.authToken}`).toString('base64')}`;
}

async function request(
  path: string,
  init: { method?: string; body?: string; authorization?: string | null } = {},
): Promise<Reply> {
  const authorization = init.authorization === undefined ? basic(ACCOUNT_A) : init.authorization;
  const response = await fetch(`${sim.url}${path}`, {
    method: init.method ?? 'GET',
    headers: authorization === null ? {} : { authorization },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

async function list<T = Record<string, unknown>>(path: string): Promise<Envelope<T>> {
  const reply = await request(path);
  expect(reply.status, reply.text).toBe(200);
  return reply.json as Envelope<T>;
}

/** Expects an error answer with the A2 body and returns its message. */
function expectError(reply: Reply, status: number): string {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/json');
  const body = reply.json as { api_id: unknown; error: unknown };
  expect(Object.keys(body).sort()).toEqual(['api_id', 'error']);
  expect(body.api_id).toMatch(UUID_V4);
  expect(typeof body.error).toBe('string');
  return body.error as string;
}

/** Every page of a list, following meta.next. */
async function allPages<T>(path: string): Promise<{ items: T[]; pages: Envelope<T>[] }> {
  const pages: Envelope<T>[] = [];
  let next: string | null = path;
  while (next !== null) {
    const page: Envelope<T> = await list<T>(next);
    pages.push(page);
    next = page.meta.next;
  }
  return { items: pages.flatMap((page) => page.objects), pages };
}

const filterTime = (micros: number): string => encodeURIComponent(formatFilterMicros(micros));

beforeAll(async () => {
  sim = await startSimulator({
    seed: 'api-test',
    accounts: [ACCOUNT_A, ACCOUNT_B],
    calls: 20_000,
    days: 90,
    now: () => now,
  });
});

afterAll(async () => {
  await sim.close();
});

beforeEach(() => {
  now = T0;
});

describe('list envelopes and paging', () => {
  it('lists the 45 endpoints over three pages, following meta.next and meta.previous', async () => {
    const { items, pages } = await allPages<Record<string, unknown>>(`${A}/Endpoint/`);
    expect(pages).toHaveLength(3);
    expect(items).toHaveLength(45);
    expect(new Set(items.map((item) => item.endpoint_id)).size).toBe(45);
    const [first, second, third] = pages as [Envelope, Envelope, Envelope];
    expect(Object.keys(first)).toEqual(['api_id', 'meta', 'objects']);
    expect(first.api_id).toMatch(UUID_V4);
    expect(first.meta).toEqual({
      limit: 20,
      offset: 0,
      next: `${A}/Endpoint/?limit=20&offset=20`,
      previous: null,
      total_count: 45,
    });
    expect(second.meta.previous).toBe(`${A}/Endpoint/?limit=20&offset=0`);
    expect(third.meta).toMatchObject({ offset: 40, next: null, total_count: 45 });
    expect(third.objects).toHaveLength(5);
    // Every answer has its own api_id.
    expect(new Set(pages.map((page) => page.api_id)).size).toBe(3);
  });

  it('accepts paths with or without the trailing slash', async () => {
    const withSlash = await list(`${A}/Endpoint/?limit=3`);
    const without = await list(`${A}/Endpoint?limit=3`);
    expect(without.objects).toEqual(withSlash.objects);
  });

  it('omits the three sip_* keys of unregistered endpoints in the body itself', async () => {
    const reply = await request(`${A}/Endpoint/?limit=20`);
    const raw = (reply.json as Envelope).objects;
    const unregistered = raw.filter((endpoint) => endpoint.sip_registered === 'false');
    const registered = raw.filter((endpoint) => endpoint.sip_registered === 'true');
    expect(unregistered.length).toBeGreaterThan(0);
    expect(registered.length).toBeGreaterThan(0);
    for (const endpoint of unregistered) {
      for (const key of ['sip_contact', 'sip_expires', 'sip_user_agent'])
        expect(endpoint).not.toHaveProperty(key);
    }
    for (const endpoint of registered)
      expect(endpoint.sip_expires).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });

  it('refuses limit over 20 and unknown parameters on every list', async () => {
    expect(expectError(await request(`${A}/Endpoint/?limit=21`), 400)).toMatch(
      /limit must be at most 20/,
    );
    expect(expectError(await request(`${A}/VerifiedCallerId/?limit=50`), 400)).toMatch(
      /at most 20/,
    );
    expect(expectError(await request(`${A}/Endpoint/?colour=red`), 400)).toMatch(
      /unknown parameter colour/,
    );
    expect(expectError(await request(`${A}/Message/x/?a=1`), 400)).toMatch(/no query parameters/);
  });
});

describe('verified caller IDs', () => {
  it('lists all, filters by country, alias and subaccount, and finds one number by its segment', async () => {
    const all = (await allPages<Record<string, string>>(`${A}/VerifiedCallerId/`)).items;
    expect(all).toHaveLength(25);
    const us = await list<Record<string, string>>(`${A}/VerifiedCallerId/?country=US`);
    expect(us.meta.total_count).toBe(all.filter((item) => item.country === 'US').length);
    expect(us.objects.every((item) => item.country === 'US')).toBe(true);
    expect(us.meta.next).toBeNull();

    const sample = all[3]!;
    const byAlias = await list<Record<string, string>>(
      `${A}/VerifiedCallerId/?alias=${encodeURIComponent(sample.alias!)}`,
    );
    expect(byAlias.objects.map((item) => item.alias)).toContain(sample.alias);
    expect(byAlias.objects.every((item) => item.alias === sample.alias)).toBe(true);
    const none = await list(`${A}/VerifiedCallerId/?subaccount=SANOBODY`);
    expect(none.meta.total_count).toBe(0);
    expect(none.objects).toEqual([]);

    const digits = sample.phone_number!.slice(1);
    for (const segment of [digits, encodeURIComponent(`+${digits}`)]) {
      const one = await list<Record<string, string>>(`${A}/VerifiedCallerId/${segment}`);
      expect(one.meta.total_count).toBe(1);
      expect(one.objects).toEqual([sample]);
    }
    expect(expectError(await request(`${A}/VerifiedCallerId/19999999999`), 404)).toMatch(
      /\+19999999999/,
    );
    expect(expectError(await request(`${A}/VerifiedCallerId/?country=usa`), 400)).toMatch(
      /2-letter/,
    );
  });
});

describe('messages and packs', () => {
  it('serves a message with is_domestic twice in the body text', async () => {
    const [uuid] = sim.dataset().accounts[0]!.exampleMessageUuids;
    const reply = await request(`${A}/Message/${uuid}/`);
    expect(reply.status).toBe(200);
    const occurrences = reply.text.match(/"is_domestic":/g) ?? [];
    expect(occurrences).toHaveLength(2);
    const body = reply.json as Record<string, unknown>;
    const flag = String(body.is_domestic);
    expect(reply.text).toContain(`"is_domestic":"${flag}"`);
    expect(reply.text).toContain(`"is_domestic":${flag}`);
    expect(body.message_uuid).toBe(uuid);
    expect(body.resource_uri).toBe(`${A}/Message/${uuid}/`);
    expect(body.api_id).toMatch(UUID_V4);
    expect(sim.dataset().accounts[0]!.packUuids).toContain(body.powerpack_id);
    const again = await request(`${A}/Message/${uuid}`);
    expect((again.json as Record<string, unknown>).api_id).not.toBe(body.api_id);
    expect({ ...(again.json as object), api_id: '' }).toEqual({ ...body, api_id: '' });
  });

  it('404s an unknown or malformed message UUID, and another account’s message', async () => {
    expectError(await request(`${A}/Message/00000000-0000-4000-8000-000000000000/`), 404);
    expectError(await request(`${A}/Message/not-a-uuid/`), 404);
    const [otherUuid] = sim.dataset().accounts[1]!.exampleMessageUuids;
    expectError(await request(`${A}/Message/${otherUuid}/`), 404);
  });

  it('serves a pack with api_id and its priorities, and 404s an unknown one', async () => {
    const [uuid] = sim.dataset().accounts[0]!.packUuids;
    const reply = await request(`${A}/Powerpack/${uuid}/`);
    expect(reply.status).toBe(200);
    const pack = reply.json as Record<string, unknown>;
    expect(pack.api_id).toMatch(UUID_V4);
    expect(pack.uuid).toBe(uuid);
    expect(typeof pack.local_connect).toBe('boolean');
    expect(pack.number_priority).toHaveLength(4);
    expectError(await request(`${A}/Powerpack/00000000-0000-4000-8000-000000000000/`), 404);
  });
});

describe('authentication and routing', () => {
  it('401s missing, wrong and foreign credentials', async () => {
    const missing = await request(`${A}/Endpoint/`, { authorization: null });
    expect(expectError(missing, 401)).toMatch(/authentication required/);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Basic/);
    const wrong = await request(`${A}/Endpoint/`, {
      authorization: basic({ ...ACCOUNT_A, authToken: 'nope' }),
    });
    expect(expectError(wrong, 401)).not.toContain(ACCOUNT_A.authToken);
    const foreign = await request(`${A}/Endpoint/`, { authorization: basic(ACCOUNT_B) });
    expect(expectError(foreign, 401)).toMatch(/for account MABBB/);
    // B's own path works with B's credentials.
    const own = await request(`/v1/Account/${ACCOUNT_B.authId}/Endpoint/?limit=1`, {
      authorization: basic(ACCOUNT_B),
    });
    expect(own.status).toBe(200);
  });

  it('404s unknown paths and 405s wrong methods', async () => {
    expectError(await request('/nothing/here'), 404);
    expectError(await request(`${A}/Nope/`), 404);
    expectError(await request(`${A}/Trunk/Call/extra/`), 404);
    expectError(await request(`/v2/Account/${ACCOUNT_A.authId}/Endpoint/`), 404);
    const wrong = await request(`${A}/Endpoint/`, { method: 'DELETE' });
    expect(expectError(wrong, 405)).toMatch(/use GET/);
    expect(wrong.headers.get('allow')).toBe('GET');
    const post = await request(`${A}/Trunk/Call/`, { method: 'POST', body: '{}' });
    expectError(post, 405);
  });
});

describe('trunk call list (spec 4.6)', () => {
  it('lists the last 7 days by default, newest first, with total_count of the window', async () => {
    const page = await list<TrunkRecord>(`${A}/Trunk/Call/`);
    expect(page.meta.total_count).toBe(sim.dataset().accounts[0]!.callsLast7Days);
    expect(page.meta.total_count).toBeGreaterThan(1_400);
    expect(page.meta.total_count).toBeLessThan(1_700);
    expect(page.objects).toHaveLength(20);
    const ends = page.objects.map((record) => toEpochMicros(record.end_time));
    for (let k = 1; k < ends.length; k++) expect(ends[k]).toBeLessThanOrEqual(ends[k - 1]!);
    expect(ends[0]).toBeLessThanOrEqual(now);
    expect(ends[ends.length - 1]).toBeGreaterThanOrEqual(now - 7 * MICROS_PER_DAY);
    expect(page.meta.next).toBe(`${A}/Trunk/Call/?limit=20&offset=20`);
    for (const record of page.objects) {
      expect(record.call_uuid).toMatch(UUID_V4);
      expect(record.api_id).toMatch(UUID_V4);
      expect(record.Stir_attestation).toBeTypeOf('string');
    }
  });

  it('pages through a range with every call exactly once, in a stable order', async () => {
    const from = now - 2 * MICROS_PER_DAY;
    const to = now - MICROS_PER_DAY;
    const path = `${A}/Trunk/Call/?end_time__gte=${filterTime(from)}&end_time__lt=${filterTime(to)}`;
    const { items, pages } = await allPages<TrunkRecord>(path);
    const total = pages[0]!.meta.total_count;
    expect(items).toHaveLength(total);
    expect(new Set(items.map((record) => record.call_uuid)).size).toBe(total);
    for (const record of items) {
      const end = toEpochMicros(record.end_time);
      expect(end).toBeGreaterThanOrEqual(from);
      expect(end).toBeLessThan(to);
    }
    // meta.next keeps the filters.
    expect(pages[0]!.meta.next).toContain('end_time__gte=');
    expect(pages[0]!.meta.next).toContain('end_time__lt=');
    const again = await allPages<TrunkRecord>(path);
    expect(again.items.map((record) => record.call_uuid)).toEqual(
      items.map((record) => record.call_uuid),
    );
  });

  it('refuses each rule with a 400 and a JSON error that says what is wrong', async () => {
    const horizon = now - 90 * MICROS_PER_DAY;
    expect(expectError(await request(`${A}/Trunk/Call/?limit=21`), 400)).toBe(
      'limit must be at most 20 (got 21)',
    );
    expect(
      expectError(
        await request(`${A}/Trunk/Call/?end_time__gte=${filterTime(horizon - MICROS_PER_SECOND)}`),
        400,
      ),
    ).toMatch(/older than the 90-day horizon/);
    const from = now - 40 * MICROS_PER_DAY;
    expect(
      expectError(
        await request(
          `${A}/Trunk/Call/?end_time__gte=${filterTime(from)}&end_time__lte=${filterTime(from + 30 * MICROS_PER_DAY + 1)}`,
        ),
        400,
      ),
    ).toMatch(/more than 30 days/);
    const exactly30 = await request(
      `${A}/Trunk/Call/?end_time__gte=${filterTime(from)}&end_time__lte=${filterTime(from + 30 * MICROS_PER_DAY)}`,
    );
    expect(exactly30.status).toBe(200);
    expect(expectError(await request(`${A}/Trunk/Call/?end_time__gte=yesterday`), 400)).toMatch(
      /YYYY-MM-DD/,
    );
    expect(expectError(await request(`${A}/Trunk/Call/?call_direction=sideways`), 400)).toMatch(
      /inbound, outbound/,
    );
    expect(expectError(await request(`${A}/Trunk/Call/?hangup_source=Error`), 400)).toMatch(
      /customer, carrier, trunk/,
    );
    expect(expectError(await request(`${A}/Trunk/Call/?bogus=1`), 400)).toMatch(
      /unknown parameter bogus/,
    );
  });

  it('lists only completed calls, and new calls complete as time passes', async () => {
    const before = await list<TrunkRecord>(
      `${A}/Trunk/Call/?end_time__gte=${filterTime(now - MICROS_PER_HOUR)}`,
    );
    // Asking past now changes nothing: calls after now have not ended.
    const future = await list<TrunkRecord>(
      `${A}/Trunk/Call/?end_time__gte=${filterTime(now - MICROS_PER_HOUR)}&end_time__lte=${filterTime(now + MICROS_PER_DAY)}`,
    );
    expect(future.meta.total_count).toBe(before.meta.total_count);
    now += 2 * MICROS_PER_HOUR;
    const after = await list<TrunkRecord>(
      `${A}/Trunk/Call/?end_time__gte=${filterTime(T0 - MICROS_PER_HOUR)}`,
    );
    // About 9 calls an hour (20,000 over 90 days).
    expect(after.meta.total_count).toBeGreaterThan(before.meta.total_count + 10);
    expect(toEpochMicros(after.objects[0]!.end_time)).toBeGreaterThan(T0);
    expect(toEpochMicros(after.objects[0]!.end_time)).toBeLessThanOrEqual(now);
  });

  it('reads one-sided ranges per A16', async () => {
    const lowerOnly = await list(
      `${A}/Trunk/Call/?end_time__gte=${filterTime(now - 60 * MICROS_PER_DAY)}`,
    );
    const upperOnly = await list(
      `${A}/Trunk/Call/?end_time__lt=${filterTime(now - 30 * MICROS_PER_DAY)}`,
    );
    const all = sim.dataset().accounts[0]!.callsLast90Days;
    // 60 days of 90, and the 60 days from the horizon to 30 days ago: two thirds each.
    expect(lowerOnly.meta.total_count).toBeGreaterThan(all * 0.64);
    expect(lowerOnly.meta.total_count).toBeLessThan(all * 0.69);
    expect(upperOnly.meta.total_count).toBeGreaterThan(all * 0.64);
    expect(upperOnly.meta.total_count).toBeLessThan(all * 0.69);
  });

  it('matches an exact end_time to that instant', async () => {
    const [record] = (await list<TrunkRecord>(`${A}/Trunk/Call/?limit=1&offset=7`)).objects;
    const at = toEpochMicros(record!.end_time);
    const exact = await list<TrunkRecord>(`${A}/Trunk/Call/?end_time=${filterTime(at)}`);
    expect(exact.objects.map((r) => r.call_uuid)).toContain(record!.call_uuid);
    expect(exact.objects.every((r) => toEpochMicros(r.end_time) === at)).toBe(true);
    const missed = await list(`${A}/Trunk/Call/?end_time=${filterTime(at + 1)}`);
    expect(missed.meta.total_count).toBe(0);
  });

  it('applies every field filter and suffix, counting exactly what matches', async () => {
    const window = `end_time__gte=${filterTime(now - 3 * MICROS_PER_DAY)}`;
    const everything = (await allPages<TrunkRecord>(`${A}/Trunk/Call/?${window}`)).items;
    const cases: [string, (record: TrunkRecord) => boolean][] = [
      ['to_number=sip%3A', (r) => String(r.to_number).startsWith('sip:')],
      ['call_direction=inbound', (r) => r.call_direction === 'inbound'],
      ['bill_duration=30', (r) => r.bill_duration === 30],
      ['bill_duration__gt=300', (r) => Number(r.bill_duration) > 300],
      ['bill_duration__gte=300', (r) => Number(r.bill_duration) >= 300],
      ['bill_duration__lt=20', (r) => Number(r.bill_duration) < 20],
      ['bill_duration__lte=20', (r) => Number(r.bill_duration) <= 20],
      ['hangup_cause_code=8011', (r) => r.hangup_cause_code === 8011],
      ['hangup_source=trunk', (r) => r.hangup_source === 'Error'],
      [
        'hangup_source=customer',
        (r) =>
          r.call_direction === 'outbound'
            ? r.hangup_source === 'Caller'
            : r.hangup_source === 'Callee',
      ],
      [
        'stir_verification=Verified',
        (r) => r.stir_verification === 'Verified' && r.Stir_attestation === 'A',
      ],
    ];
    const fromPrefix = String(everything[0]!.from_number).slice(0, 4);
    cases.push([`from_number=${fromPrefix}`, (r) => String(r.from_number).startsWith(fromPrefix)]);
    for (const [filter, predicate] of cases) {
      const expected = everything.filter(predicate);
      const page = await list<TrunkRecord>(`${A}/Trunk/Call/?${window}&${filter}`);
      expect(page.meta.total_count, filter).toBe(expected.length);
      expect(
        page.objects.map((r) => r.call_uuid),
        filter,
      ).toEqual(expected.slice(0, 20).map((r) => r.call_uuid));
    }
  });
});

describe('streams', () => {
  const startBody = (url: string, extra: Record<string, unknown> = {}): string =>
    JSON.stringify({ service_url: url, ...extra });

  it('lists the recorded streams of a completed call, an empty list for a call without, 404 for none', async () => {
    const [withStreams] = sim.dataset().accounts[0]!.callsWithStreams;
    const streams = await list<Record<string, unknown>>(`${A}/Call/${withStreams}/Stream/`);
    expect(streams.meta.total_count).toBeGreaterThan(0);
    for (const stream of streams.objects) {
      expect(stream.call_uuid).toBe(withStreams);
      expect(stream.service_auth_id).toBe(ACCOUNT_A.authId);
      expect(stream.resource_uri).toBe(
        `${A}/Call/${withStreams}/Stream/${String(stream.stream_id)}/`,
      );
      expect(Number(stream.rounded_bill_duration) % 60).toBe(0);
      expect(stream.end_time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
    }
    const calls = (await list<TrunkRecord>(`${A}/Trunk/Call/`)).objects;
    let empties = 0;
    for (const call of calls) {
      const answer = await list(`${A}/Call/${call.call_uuid}/Stream/`);
      if (answer.meta.total_count === 0) empties++;
    }
    expect(empties).toBeGreaterThan(5);
    expectError(await request(`${A}/Call/00000000-0000-4000-8000-000000000000/Stream/`), 404);
  });

  it('starts a stream on a live call, lists it running, refuses a second one to the same URL', async () => {
    const live = sim.dataset().accounts[0]!.liveCallUuids[0]!;
    const started = await request(`${A}/Call/${live}/Stream/`, {
      method: 'POST',
      body: startBody('wss://example.com/audio', { stream_timeout: 120, audio_track: 'both' }),
    });
    expect(started.status, started.text).toBe(201);
    const body = started.json as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['api_id', 'message', 'stream_id']);
    expect(body.message).toBe('audio streaming started');
    expect(body.stream_id).toMatch(UUID_V4);

    const running = await list<Record<string, unknown>>(`${A}/Call/${live}/Stream/`);
    const record = running.objects.find((stream) => stream.stream_id === body.stream_id);
    expect(record).toMatchObject({
      call_uuid: live,
      service_url: 'wss://example.com/audio',
      audio_track: 'both',
      bidirectional: false,
      end_time: null,
      bill_duration: 0,
      rounded_bill_duration: 0,
      billed_amount: '0',
    });

    const duplicate = await request(`${A}/Call/${live}/Stream/`, {
      method: 'POST',
      body: startBody('wss://example.com/audio'),
    });
    expect(expectError(duplicate, 400)).toMatch(
      /active stream already exists at wss:\/\/example.com\/audio/,
    );
    const otherUrl = await request(`${A}/Call/${live}/Stream/`, {
      method: 'POST',
      body: startBody('wss://example.com/other'),
    });
    expect(otherUrl.status).toBe(201);

    // After its timeout the stream has stopped: it is billed, and the URL is free again.
    now += 121 * MICROS_PER_SECOND;
    const stopped = (await list<Record<string, unknown>>(`${A}/Call/${live}/Stream/`)).objects.find(
      (stream) => stream.stream_id === body.stream_id,
    );
    expect(stopped).toMatchObject({
      bill_duration: 120,
      rounded_bill_duration: 120,
      billed_amount: '0.00600',
    });
    expect(stopped?.end_time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00$/);
    const restarted = await request(`${A}/Call/${live}/Stream/`, {
      method: 'POST',
      body: startBody('wss://example.com/audio'),
    });
    expect(restarted.status).toBe(201);
  });

  it('refuses bad stream parameters with every violation listed, and a body that is not JSON', async () => {
    const live = sim.dataset().accounts[0]!.liveCallUuids[1]!;
    const bad = await request(`${A}/Call/${live}/Stream/`, {
      method: 'POST',
      body: JSON.stringify({
        service_url: 'https://example.com/audio',
        bidirectional: true,
        audio_track: 'outbound',
        stream_timeout: 0,
        content_type: 'audio/mp3',
        extra_headers: 'a=b;c',
      }),
    });
    const message = expectError(bad, 400);
    for (const field of [
      'service_url',
      'audio_track',
      'stream_timeout',
      'content_type',
      'extra_headers',
    ]) {
      expect(message).toContain(field);
    }
    expect(
      expectError(await request(`${A}/Call/${live}/Stream/`, { method: 'POST', body: '' }), 400),
    ).toMatch(/service_url is required/);
    expect(
      expectError(
        await request(`${A}/Call/${live}/Stream/`, {
          method: 'POST',
          body: 'service_url=wss://x/y',
        }),
        400,
      ),
    ).toMatch(/must be JSON/);
    expectError(await request(`${A}/Call/${live}/Stream/`, { method: 'POST', body: '[1]' }), 400);
  });

  it('404s a stream start on a completed or unknown call', async () => {
    const [completed] = sim.dataset().accounts[0]!.callsWithStreams;
    const body = startBody('wss://example.com/audio');
    expect(
      expectError(await request(`${A}/Call/${completed}/Stream/`, { method: 'POST', body }), 404),
    ).toMatch(/not in progress/);
    expectError(
      await request(`${A}/Call/00000000-0000-4000-8000-000000000000/Stream/`, {
        method: 'POST',
        body,
      }),
      404,
    );
  });
});

describe('scale', () => {
  it('serves a plain window page of a million calls generating no more records than the page', async () => {
    const big = await startSimulator({ seed: 'scale', calls: 1_000_000, days: 90, now: () => T0 });
    try {
      const account = big.accounts[0]!;
      const auth = basic(account);
      const path = `/v1/Account/${account.authId}/Trunk/Call/?end_time__gte=${filterTime(T0 - 30 * MICROS_PER_DAY)}&offset=200000`;
      big.resetStats();
      const response = await fetch(`${big.url}${path}`, { headers: { authorization: auth } });
      const page = (await response.json()) as Envelope;
      expect(page.meta.total_count).toBeGreaterThan(330_000);
      expect(page.objects).toHaveLength(20);
      expect(big.stats().recordsGenerated).toBeLessThanOrEqual(20);
      expect(big.dataset().accounts[0]!.callsLast90Days).toBeGreaterThan(999_000);
    } finally {
      await big.close();
    }
  });
});

describe('admin API', () => {
  const admin = async (path: string, method = 'GET', body?: unknown): Promise<Reply> =>
    request(path, {
      method,
      authorization: null,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('describes the dataset without tokens', async () => {
    const reply = await admin('/__admin/dataset');
    expect(reply.status).toBe(200);
    expect(reply.text).not.toContain(ACCOUNT_A.authToken);
    const summary = reply.json as {
      accounts: Record<string, unknown>[];
      sizes: Record<string, number>;
    };
    expect(summary.accounts.map((account) => account.authId)).toEqual([
      ACCOUNT_A.authId,
      ACCOUNT_B.authId,
    ]);
    expect(summary.sizes).toMatchObject({ calls: 20_000, endpoints: 45, callerIds: 25 });
    expect(summary.accounts[0]).toMatchObject({
      endpoints: 45,
      callerIds: 25,
      packs: 5,
      liveCalls: 5,
    });
  });

  it('adds a call that is listed in order and counted, and a late one only once it is visible', async () => {
    const path = `${A}/Trunk/Call/?end_time__gte=${filterTime(now - MICROS_PER_DAY)}`;
    const before = await list<TrunkRecord>(path);
    const end = new Date((now - 2 * MICROS_PER_HOUR) / 1000).toISOString();
    const added = await admin('/__admin/calls', 'POST', {
      account: ACCOUNT_A.authId,
      end_time: end,
      overrides: { from_number: '15550001111', total_amount: '1e309' },
    });
    expect(added.status, added.text).toBe(201);
    const record = added.json as TrunkRecord;
    expect(record.from_number).toBe('15550001111');
    expect(toEpochMicros(record.end_time)).toBe(
      Math.floor(toEpochMicros(end) / MICROS_PER_SECOND) * MICROS_PER_SECOND,
    );
    const after = (await allPages<TrunkRecord>(path)).items;
    expect(after).toHaveLength(before.meta.total_count + 1);
    expect(after.find((r) => r.call_uuid === record.call_uuid)?.total_amount).toBe('1e309');
    const filtered = await list<TrunkRecord>(`${path}&from_number=1555000`);
    expect(filtered.objects.map((r) => r.call_uuid)).toEqual([record.call_uuid]);
    // Its streams: a completed call without any.
    expect((await list(`${A}/Call/${record.call_uuid}/Stream/`)).meta.total_count).toBe(0);

    const lateEnd = new Date((now - 3 * MICROS_PER_DAY) / 1000).toISOString();
    const visibleAt = new Date((now + MICROS_PER_HOUR) / 1000).toISOString();
    const late = await admin('/__admin/calls', 'POST', {
      end_time: lateEnd,
      visible_at: visibleAt,
    });
    const lateUuid = (late.json as TrunkRecord).call_uuid;
    const range = `${A}/Trunk/Call/?end_time__gte=${filterTime(now - 4 * MICROS_PER_DAY)}&end_time__lt=${filterTime(now - 2 * MICROS_PER_DAY)}`;
    const hidden = await allPages<TrunkRecord>(range);
    expect(hidden.items.map((r) => r.call_uuid)).not.toContain(lateUuid);
    now += MICROS_PER_HOUR;
    const shown = await allPages<TrunkRecord>(range);
    expect(shown.items.map((r) => r.call_uuid)).toContain(lateUuid);
    expect(shown.pages[0]!.meta.total_count).toBe(hidden.pages[0]!.meta.total_count + 1);

    expect(expectError(await admin('/__admin/calls', 'POST', { end_time: 'soon' }), 400)).toMatch(
      /end_time/,
    );
    expect(
      expectError(
        await admin('/__admin/calls', 'POST', { end_time: end, overrides: { bill_duration: 'x' } }),
        400,
      ),
    ).toMatch(/bill_duration/);
    expectError(await admin('/__admin/calls', 'POST', { account: 'MANOBODY', end_time: end }), 404);
  });

  it('adds and removes endpoints', async () => {
    const added = await admin('/__admin/endpoints', 'POST', {
      registered: false,
      overrides: { alias: 'Lobby' },
    });
    expect(added.status).toBe(201);
    const endpoint = added.json as Record<string, unknown>;
    expect(endpoint).not.toHaveProperty('sip_contact');
    expect(endpoint.alias).toBe('Lobby');
    let all = (await allPages<Record<string, unknown>>(`${A}/Endpoint/`)).items;
    expect(all).toHaveLength(46);
    expect(all.at(-1)).toEqual(endpoint);
    const removed = await admin(
      `/__admin/endpoints/${ACCOUNT_A.authId}/${String(endpoint.endpoint_id)}`,
      'DELETE',
    );
    expect(removed.status).toBe(204);
    all = (await allPages<Record<string, unknown>>(`${A}/Endpoint/`)).items;
    expect(all).toHaveLength(45);
    expectError(await admin(`/__admin/endpoints/${ACCOUNT_A.authId}/123`, 'DELETE'), 404);
  });

  it('counts requests by route and status, and resets the counters', async () => {
    await admin('/__admin/stats/reset', 'POST');
    await request(`${A}/Endpoint/`);
    await request(`${A}/Endpoint/?limit=99`);
    // A range without added calls: every record of the page is generated.
    await request(
      `${A}/Trunk/Call/?end_time__gte=${filterTime(now - 60 * MICROS_PER_DAY)}&end_time__lt=${filterTime(now - 59 * MICROS_PER_DAY)}`,
    );
    const stats = (await admin('/__admin/stats')).json as {
      requests: {
        total: number;
        byRoute: Record<string, number>;
        byStatus: Record<string, number>;
      };
      recordsGenerated: number;
    };
    expect(stats.requests.total).toBe(3);
    expect(stats.requests.byRoute).toEqual({ 'GET Endpoint': 2, 'GET Trunk/Call': 1 });
    expect(stats.requests.byStatus).toEqual({ '200': 2, '400': 1 });
    expect(stats.recordsGenerated).toBe(20);
    const reset = (await admin('/__admin/stats/reset', 'POST')).json as {
      requests: { total: number };
    };
    expect(reset.requests.total).toBe(0);
    expectError(await admin('/__admin/stats', 'POST'), 405);
    expectError(await admin('/__admin/unknown'), 404);
  });
});

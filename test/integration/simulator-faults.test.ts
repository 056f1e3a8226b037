import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import {
  formatFilterMicros,
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_SECOND,
  parseEpochMicros,
  toEpochMicros,
} from '../../src/util/micros.js';

// Each fault kind, observed over real HTTP. The clock is moved by hand; nothing waits on a timer
// and no speed is asserted.

const T0 = toEpochMicros('2024-06-01T12:00:00Z');
let now = T0;
let sim: RunningSimulator;
let path: (rest: string) => string;
let auth: string;

interface Envelope {
  meta: { total_count: number; next: string | null };
  objects: Record<string, unknown>[];
}

const filterTime = (micros: number): string => encodeURIComponent(formatFilterMicros(micros));

async function get(url: string, authorization: string | null = auth): Promise<Response> {
  return fetch(`${sim.url}${url}`, { headers: authorization === null ? {} : { authorization } });
}

async function page(url: string): Promise<Envelope> {
  const response = await get(url);
  expect(response.status).toBe(200);
  return (await response.json()) as Envelope;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 'faults-test', calls: 20_000, days: 90, now: () => now });
  const account = sim.accounts[0]!;
  path = (rest) => `/v1/Account/${account.authId}/${rest}`;
  auth = `Basic ${Buffer.from(`${account.authId}:${account.authToken}`).toString('base64')}`;
});

afterAll(async () => {
  await sim.close();
});

beforeEach(() => {
  now = T0;
  sim.resetStats();
});

afterEach(() => {
  sim.setFaults({});
});

describe('request faults', () => {
  it('answers an injected 429 with Retry-After and a JSON error', async () => {
    sim.setFaults({ tooManyRequests: 1, retryAfterSeconds: 3 });
    const response = await get(path('Endpoint/'));
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('3');
    const body = (await response.json()) as { api_id: string; error: string };
    expect(body.error).toMatch(/too many requests/);
    expect(sim.stats().faults.tooManyRequests).toBe(1);
  });

  it('answers injected 5xx with JSON errors', async () => {
    sim.setFaults({ serverErrors: 1 });
    const statuses = new Set<number>();
    for (let k = 0; k < 30; k++) {
      const response = await get(path('Endpoint/'));
      statuses.add(response.status);
      expect(((await response.json()) as { error: string }).error).toMatch(
        /simulated server error/,
      );
    }
    expect([...statuses].every((status) => [500, 502, 503].includes(status))).toBe(true);
    expect(statuses.size).toBeGreaterThan(1);
    expect(sim.stats().faults.serverErrors).toBe(30);
  });

  it('drops connections without an answer', async () => {
    sim.setFaults({ resets: 1 });
    await expect(get(path('Endpoint/'))).rejects.toThrow();
    expect(sim.stats().faults.resets).toBe(1);
    expect(sim.stats().requests.byStatus).toEqual({ dropped: 1 });
    // The simulator goes on serving.
    sim.setFaults({});
    expect((await get(path('Endpoint/'))).status).toBe(200);
  });

  it('cuts bodies short of their Content-Length', async () => {
    sim.setFaults({ truncations: 1 });
    const response = await get(path('Trunk/Call/'));
    expect(response.status).toBe(200);
    const declared = Number(response.headers.get('content-length'));
    expect(declared).toBeGreaterThan(100);
    let received: string | undefined;
    try {
      received = await response.text();
    } catch {
      received = undefined;
    }
    // Either the read fails, or what arrived is less than promised and not JSON.
    if (received !== undefined) {
      expect(Buffer.byteLength(received)).toBeLessThan(declared);
      expect(() => JSON.parse(received) as unknown).toThrow();
    }
    expect(sim.stats().faults.truncations).toBe(1);
  });

  it('is down: every API request 503, while the admin API still answers', async () => {
    sim.setFaults({ down: true });
    for (const rest of ['Endpoint/', 'Trunk/Call/', 'Nope/']) {
      expect((await get(path(rest))).status).toBe(503);
    }
    const admin = await fetch(`${sim.url}/__admin/faults`);
    expect(admin.status).toBe(200);
    expect(((await admin.json()) as { down: boolean }).down).toBe(true);
    expect(sim.stats().faults.down).toBe(3);
  });

  it('counts latency spikes', async () => {
    sim.setFaults({ spikes: 1, spikeMs: 1 });
    await get(path('Endpoint/'));
    expect(sim.stats().faults.spikes).toBe(1);
  });

  it('changes faults through PUT /__admin/faults, refusing bad values', async () => {
    const put = (body: string): Promise<Response> =>
      fetch(`${sim.url}/__admin/faults`, { method: 'PUT', body });
    const ok = await put(JSON.stringify({ serverErrors: 1 }));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { serverErrors: number }).serverErrors).toBe(1);
    expect((await get(path('Endpoint/'))).status).toBeGreaterThanOrEqual(500);
    const bad = await put(JSON.stringify({ serverErrors: 3, nonsense: true }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(
      /serverErrors.*unknown fault nonsense/s,
    );
    expect(await put('not json').then((r) => r.status)).toBe(400);
    // The refused change left the faults as they were; an empty object clears them.
    expect(sim.faults().serverErrors).toBe(1);
    await put('{}');
    expect((await get(path('Endpoint/'))).status).toBe(200);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After past the budget, not before, and again after the window', async () => {
    const limited = await startSimulator({
      seed: 'rate',
      calls: 100,
      rateLimit: '5/2s',
      now: () => now,
    });
    try {
      const account = limited.accounts[0]!;
      const authorization = `Basic ${Buffer.from(`${account.authId}:${account.authToken}`).toString('base64')}`;
      const hit = (): Promise<Response> =>
        fetch(`${limited.url}/v1/Account/${account.authId}/Endpoint/`, {
          headers: { authorization },
        });
      const statuses: number[] = [];
      for (let k = 0; k < 5; k++) statuses.push((await hit()).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      const refused = await hit();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('2');
      expect(((await refused.json()) as { error: string }).error).toMatch(
        /rate limit of 5 requests/,
      );
      expect((await hit()).status).toBe(429);
      expect(limited.stats().rateLimited).toBe(2);
      expect(limited.stats().faults.tooManyRequests).toBe(0);
      now += 2 * MICROS_PER_SECOND;
      expect((await hit()).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('record faults', () => {
  const window = (): string =>
    path(`Trunk/Call/?end_time__gte=${filterTime(now - 2 * MICROS_PER_DAY)}`);

  it('serves a stable set of malformed records', async () => {
    sim.setFaults({ malformed: 0.3 });
    const read = async (): Promise<Record<string, unknown>[]> => {
      const out: Record<string, unknown>[] = [];
      for (let offset = 0; offset < 100; offset += 20)
        out.push(...(await page(`${window()}&offset=${offset}`)).objects);
      return out;
    };
    const first = await read();
    const broken = first.filter(
      (record) =>
        !('call_uuid' in record) ||
        !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d$/.test(String(record.end_time)) ||
        parseEpochMicros(String(record.end_time)) === undefined ||
        !/^\d+\.\d+$/.test(String(record.total_amount)),
    );
    expect(broken.length).toBeGreaterThan(10);
    expect(broken.length).toBeLessThan(50);
    expect(broken.some((record) => !('call_uuid' in record))).toBe(true);
    expect(broken.some((record) => ['abc', '1e309'].includes(String(record.total_amount)))).toBe(
      true,
    );
    const second = await read();
    const strip = (records: Record<string, unknown>[]): unknown[] =>
      records.map(({ api_id: _, ...rest }) => rest);
    expect(strip(second)).toEqual(strip(first));
    expect(sim.stats().faults.malformed).toBe(2 * broken.length);
  });

  it('withholds late calls until lateSeconds after their end, then lists them', async () => {
    const range = path(
      `Trunk/Call/?end_time__gte=${filterTime(T0 - 2 * MICROS_PER_HOUR)}&end_time__lte=${filterTime(T0)}`,
    );
    const complete = (await page(range)).meta.total_count;
    sim.setFaults({ late: 0.5, lateSeconds: 3_600 });
    const early = (await page(range)).meta.total_count;
    expect(early).toBeLessThan(complete);
    expect(sim.stats().faults.lateWithheld).toBe(complete - early);
    now += MICROS_PER_HOUR;
    expect((await page(range)).meta.total_count).toBe(complete);
  });

  it('adds a call inside the range while a client pages, shifting later offsets', async () => {
    const range = path(
      `Trunk/Call/?end_time__gte=${filterTime(T0 - 20 * MICROS_PER_DAY)}&end_time__lt=${filterTime(T0 - 19 * MICROS_PER_DAY)}`,
    );
    const firstPage = await page(range);
    sim.setFaults({ insertDuringPaging: 1 });
    await page(`${range}&offset=20`);
    await page(`${range}&offset=40`);
    sim.setFaults({});
    const again = await page(range);
    expect(again.meta.total_count).toBe(firstPage.meta.total_count + 2);
    expect(sim.stats().faults.insertedDuringPaging).toBe(2);
    // The page at offset 0 is not a trigger.
    sim.setFaults({ insertDuringPaging: 1 });
    await page(range);
    sim.setFaults({});
    expect((await page(range)).meta.total_count).toBe(firstPage.meta.total_count + 2);
  });

  it('keeps faults off the admin API', async () => {
    sim.setFaults({ resets: 1 });
    const stats = await fetch(`${sim.url}/__admin/stats`);
    expect(stats.status).toBe(200);
    const dataset = await fetch(`${sim.url}/__admin/dataset`);
    expect(dataset.status).toBe(200);
    expect(((await dataset.json()) as { accounts: unknown[] }).accounts).toHaveLength(1);
  });
});

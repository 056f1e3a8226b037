import { describe, expect, it } from 'vitest';
import { StoppedError } from '../../src/util/stopped-error.js';
import { ApiError } from '../../src/api/api-errors.js';
import { malformedBody, type ReceivedList } from '../../src/api/received-json.js';
import { PageLimitError, TelephonyClient } from '../../src/api/telephony-client.js';
import type { BodyReader, HttpTransport, RequestSpec } from '../../src/api/transport.js';

/**
 * A service of `total` calls behind a fake transport: each page answers after `delayMs(offset)`;
 * it records the requests started and the most in flight at once.
 */
function fakeService(
  total: number,
  options: { delayMs?: (offset: number) => number; failAt?: number } = {},
) {
  const started: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const transport = {
    async request<T>(spec: RequestSpec, read: BodyReader<T>): Promise<T> {
      const offset = Number(spec.query?.get('offset') ?? 0);
      const limit = Number(spec.query?.get('limit') ?? 20);
      started.push(offset);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, options.delayMs?.(offset) ?? 1));
      inFlight--;
      if (offset === options.failAt) {
        throw new ApiError({
          kind: 'http',
          method: 'GET',
          path: spec.path,
          status: 503,
          retryable: true,
        });
      }
      const objects = [];
      for (let k = offset; k < Math.min(offset + limit, total); k++)
        objects.push({ call_uuid: `call-${k}` });
      const body = {
        api_id: 'a',
        meta: { limit, offset, total_count: total, next: null, previous: null },
        objects,
      };
      return read(new TextEncoder().encode(JSON.stringify(body)), malformedBody);
    },
  };
  const client = new TelephonyClient(transport as unknown as HttpTransport, 'MA_PAGER');
  return { client, started, maxInFlight: () => maxInFlight };
}

const window = { end_time: { gte: 0, lt: 1_000_000 } };

/** `settling` rejects with a StoppedError whose cause is the stop's reason. */
async function expectStoppedBy(settling: Promise<unknown>, reason: string): Promise<void> {
  const error = await settling.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(StoppedError);
  expect((error as StoppedError).cause).toBe(reason);
}
const uuidsOf = (pages: readonly ReceivedList[]) =>
  pages.flatMap((page) =>
    page.records.map((record) => (record.value as { call_uuid: string }).call_uuid),
  );

describe('TelephonyClient.iterateTrunkCalls', () => {
  it('reads the first page, then every other offset at most pageConcurrency at once, each call once', async () => {
    const { client, started, maxInFlight } = fakeService(205, {
      delayMs: (offset) => ((offset / 20) % 3) * 3 + 1,
    });
    const pages: ReceivedList[] = [];
    for await (const page of client.iterateTrunkCalls(window, { pageConcurrency: 4 }))
      pages.push(page);
    expect(started[0]).toBe(0);
    expect([...started].sort((a, b) => a - b)).toEqual(
      Array.from({ length: 11 }, (_, k) => k * 20),
    );
    expect(maxInFlight()).toBe(4);
    expect(uuidsOf(pages).sort()).toEqual(
      Array.from({ length: 205 }, (_, k) => `call-${k}`).sort(),
    );
  });

  it('yields the pages in offset order with the default concurrency of one', async () => {
    const { client, maxInFlight } = fakeService(65);
    const offsets: number[] = [];
    for await (const page of client.iterateTrunkCalls(window)) offsets.push(page.meta.offset);
    expect(offsets).toEqual([0, 20, 40, 60]);
    expect(maxInFlight()).toBe(1);
  });

  it('on a stop request, sends no further page, yields the pages in flight, then throws StoppedError', async () => {
    const { client, started } = fakeService(400, { delayMs: () => 5 });
    const stop = new AbortController();
    const yielded: number[] = [];
    const read = async () => {
      for await (const page of client.iterateTrunkCalls(window, {
        pageConcurrency: 3,
        stopSignal: stop.signal,
      })) {
        yielded.push(page.meta.offset);
        if (page.meta.offset === 0) stop.abort('SIGTERM');
      }
    };
    // The stop's reason goes with it, so the log can say what asked for it.
    await expectStoppedBy(read(), 'SIGTERM');
    // Requests sent before the stop were all yielded; none was sent after it.
    expect([...yielded].sort((a, b) => a - b)).toEqual([...started].sort((a, b) => a - b));
    expect(started.length).toBeLessThan(20);
  });

  it('stops at once when asked before the first page', async () => {
    const { client, started } = fakeService(40);
    const stop = new AbortController();
    stop.abort('SIGINT');
    const pages = client.iterateTrunkCalls(window, { stopSignal: stop.signal });
    await expectStoppedBy(pages.next(), 'SIGINT');
    expect(started).toEqual([]);
  });

  it('after a failed page, sends nothing more, yields the pages in flight, then throws the failure', async () => {
    const { client, started } = fakeService(400, {
      failAt: 40,
      delayMs: (offset) => (offset === 40 ? 1 : 10),
    });
    const yielded: number[] = [];
    const read = async () => {
      for await (const page of client.iterateTrunkCalls(window, { pageConcurrency: 4 }))
        yielded.push(page.meta.offset);
    };
    await expect(read()).rejects.toMatchObject({ name: 'ApiError', status: 503 });
    expect([...yielded, 40].sort((a, b) => a - b)).toEqual([...started].sort((a, b) => a - b));
    expect(started.length).toBeLessThan(20);
  });
});

describe('what the service says about a listing is bounded', () => {
  it('a total_count of 2^53−1 fails the window before a second request, with the numbers', async () => {
    const { client, started } = fakeService(Number.MAX_SAFE_INTEGER);
    const pages = client.iterateTrunkCalls(window, { pageConcurrency: 4 });
    const error = await pages.next().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PageLimitError);
    expect((error as Error).message).toContain(
      `total_count ${Number.MAX_SAFE_INTEGER} would take 450359962737050 pages of 20, more than the 50000 allowed for one window`,
    );
    expect(started).toEqual([0]);
  });

  it('the page cap is configurable and a listing within it is read whole', async () => {
    const within = fakeService(100);
    const pages: ReceivedList[] = [];
    for await (const page of within.client.iterateTrunkCalls(window, { maxPages: 5 }))
      pages.push(page);
    expect(uuidsOf(pages)).toHaveLength(100);
    const beyond = fakeService(101);
    await expect(async () => {
      for await (const _page of beyond.client.iterateTrunkCalls(window, { maxPages: 5 }));
    }).rejects.toThrow(/total_count 101 would take 6 pages of 20, more than the 5 allowed/);
    expect(beyond.started).toEqual([0]);
  });
});

/** A list that follows meta.next: every page names a new next, for ever (or to `lastPage`). */
function endlessList(options: { totalCount: number; perPage: number; lastPage?: number }) {
  let requests = 0;
  const transport = {
    async request<T>(spec: RequestSpec, read: BodyReader<T>): Promise<T> {
      requests++;
      const page = Number(spec.query?.get('page') ?? 0);
      const offset = page * options.perPage;
      await new Promise((resolve) => setTimeout(resolve, 1));
      const objects = Array.from({ length: options.perPage }, (_, k) => ({
        id: `endpoint-${offset + k}`,
      }));
      const next =
        options.lastPage !== undefined && page >= options.lastPage
          ? null
          : `${spec.path}?limit=${options.perPage}&page=${page + 1}`;
      const body = {
        api_id: 'a',
        meta: { limit: options.perPage, offset, total_count: options.totalCount, next },
        objects,
      };
      return read(new TextEncoder().encode(JSON.stringify(body)), malformedBody);
    },
  };
  const client = new TelephonyClient(transport as unknown as HttpTransport, 'MA_PAGER');
  return { client, requests: () => requests };
}

describe('TelephonyClient lists that follow meta.next', () => {
  it('stop following a next that always advances once total_count records were read', async () => {
    const { client, requests } = endlessList({ totalCount: 60, perPage: 20 });
    let records = 0;
    const error = await (async () => {
      for await (const page of client.iterateEndpoints()) records += page.records.length;
    })().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PageLimitError);
    expect((error as Error).message).toMatch(
      /meta\.next still names a page after 60 records of the total_count of 60/,
    );
    expect(records).toBe(60);
    expect(requests()).toBe(3);
  });

  it('stop at the page cap when the pages are empty and the count is huge', async () => {
    const { client, requests } = endlessList({ totalCount: 1e12, perPage: 0 });
    await expect(async () => {
      for await (const _page of client.iterateEndpoints({ maxPages: 7 }));
    }).rejects.toThrow(/after 7 pages, the most allowed for one listing/);
    expect(requests()).toBe(7);
  });

  it('stop between pages on a stop request', async () => {
    const { client, requests } = endlessList({ totalCount: 1e12, perPage: 1 });
    const stop = new AbortController();
    let pages = 0;
    const read = async () => {
      for await (const _page of client.iterateEndpoints({ stopSignal: stop.signal })) {
        pages++;
        if (pages === 3) stop.abort('SIGTERM');
      }
    };
    await expectStoppedBy(read(), 'SIGTERM');
    expect(requests()).toBe(3);
  });

  it('read a list that ends normally whole', async () => {
    const { client } = endlessList({ totalCount: 60, perPage: 20, lastPage: 2 });
    let records = 0;
    for await (const page of client.iterateEndpoints()) records += page.records.length;
    expect(records).toBe(60);
  });
});

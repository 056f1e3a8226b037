import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServedRoutes } from '../../src/app/served-routes.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { Database } from '../../src/db/connect.js';
import { createLogger } from '../../src/util/logger.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { freePort } from '../support/telesync-process.js';
import { planSchedule } from '../../src/scheduler/schedule-plan.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * What one scrape of /metrics asks the database. The watermark lags and the horizon gauge are both
 * aged on the database's clock; they are collected at once, and share one query of that clock. The
 * two verify gauges share one query of day_verifications.
 */

const ACCOUNT = { authId: 'MA_SERVED_ROUTES', authToken: 'token-served-routes-0123456789' };

/**
 * Counts the statements that read the database's clock (pingDatabase's clock_timestamp()), those
 * that read the verifications, and the status page's sums of the stored calls by day, whose result
 * it holds back `storedDaysDelayMs`: the read of a large table, so that viewers overlap it.
 */
class QueryCounter implements KyselyPlugin {
  clock = 0;
  verifications = 0;
  storedDays = 0;
  storedDaysDelayMs = 0;
  readonly #storedDaysQueries = new WeakSet<object>();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const text = JSON.stringify(args.node);
    if (text.includes('clock_timestamp')) this.clock++;
    if (text.includes('day_verifications')) this.verifications++;
    if (text.includes('billed_duration')) {
      this.storedDays++;
      this.#storedDaysQueries.add(args.queryId);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.#storedDaysQueries.has(args.queryId) && this.storedDaysDelayMs > 0)
      await new Promise((resolve) => setTimeout(resolve, this.storedDaysDelayMs));
    return args.result;
  }
}

describe('the routes a long-running process serves', () => {
  let handle: TestDatabase;
  let counter: QueryCounter;
  let database: Database;
  beforeAll(async () => {
    handle = await createTestDatabase();
    counter = new QueryCounter();
    // The same database, its statements counted on the way.
    database = Object.assign(Object.create(handle.database) as Database, {
      db: handle.database.db.withPlugin(counter),
      root: handle.database.root.withPlugin(counter),
    });
  });
  afterAll(async () => {
    await handle?.close();
  });

  /** The routes of a process of ACCOUNT on the counted database, with `env` as its settings. */
  function servedRoutes(env: Record<string, string>) {
    const config = loadConfig({
      TELESYNC_AUTH_ID: ACCOUNT.authId,
      TELESYNC_AUTH_TOKEN: ACCOUNT.authToken,
      ...env,
    });
    return createServedRoutes({
      config,
      accounts: config.accounts,
      database,
      log: createLogger({ level: 'warn', secrets: [ACCOUNT.authToken], pretty: false }),
      streams: ['trunk_calls'],
      plan: planSchedule(config.schedule.crons),
      processMetrics: false,
    });
  }

  it('reads the database clock and the verifications once per /metrics scrape', async () => {
    const routes = servedRoutes({ TELESYNC_HTTP_PORT: '0' });
    for (let scrape = 1; scrape <= 3; scrape++) {
      const before = { clock: counter.clock, verifications: counter.verifications };
      const samples = parsePrometheusText((await routes.metrics.render()).body);
      // The gauges were collected: the lag (no watermark yet, so no series), the horizon, and the
      // verify days (no verification yet, so the account's days are 0).
      expect(samples.some((sample) => sample.name === 'telesync_horizon_unread_days')).toBe(true);
      expect(samples.some((sample) => sample.name === 'telesync_verify_days')).toBe(true);
      expect(
        {
          clock: counter.clock - before.clock,
          verifications: counter.verifications - before.verifications,
        },
        `queries of scrape ${scrape}`,
      ).toEqual({ clock: 1, verifications: 1 });
    }
  });

  it('serves the status page to viewers who ask at once from one read of the stored calls', async () => {
    const routes = servedRoutes({
      TELESYNC_HTTP_HOST: '127.0.0.1',
      TELESYNC_HTTP_PORT: String(await freePort()),
    });
    const server = await routes.serve();
    try {
      const page = async () => {
        const response = await fetch(new URL('/', server!.url));
        await response.text();
        return response.status;
      };
      const before = counter.storedDays;
      counter.storedDaysDelayMs = 500;
      expect(await Promise.all(Array.from({ length: 8 }, page))).toEqual(Array(8).fill(200));
      counter.storedDaysDelayMs = 0;
      expect(counter.storedDays - before).toBe(1);
      // A viewer who asks after that read ended gets a read of their own.
      expect(await page()).toBe(200);
      expect(counter.storedDays - before).toBe(2);
    } finally {
      await server?.close();
    }
  });
});

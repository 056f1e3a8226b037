import type { KyselyPlugin, PluginTransformQueryArgs, RootOperationNode } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServedRoutes } from '../../src/app/served-routes.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { Database } from '../../src/db/connect.js';
import { createLogger } from '../../src/util/logger.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { planSchedule } from '../../src/scheduler/schedule-plan.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * What one scrape of /metrics asks the database. The watermark lags and the horizon gauge are both
 * aged on the database's clock; they are collected at once, and share one query of that clock.
 */

const ACCOUNT = { authId: 'MA_SERVED_ROUTES', authToken: 'token-served-routes-0123456789' };

/** Counts the statements that read the database's clock (pingDatabase's clock_timestamp()). */
class ClockQueryCounter implements KyselyPlugin {
  count = 0;

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (JSON.stringify(args.node).includes('clock_timestamp')) this.count++;
    return args.node;
  }

  transformResult: KyselyPlugin['transformResult'] = (args) => Promise.resolve(args.result);
}

describe('the routes a long-running process serves', () => {
  let handle: TestDatabase;
  let counter: ClockQueryCounter;
  let database: Database;
  beforeAll(async () => {
    handle = await createTestDatabase();
    counter = new ClockQueryCounter();
    // The same database, its statements counted on the way.
    database = Object.assign(Object.create(handle.database) as Database, {
      db: handle.database.db.withPlugin(counter),
      root: handle.database.root.withPlugin(counter),
    });
  });
  afterAll(async () => {
    await handle?.close();
  });

  it('reads the database clock once per /metrics scrape, for every gauge aged on it', async () => {
    const config = loadConfig({
      TELESYNC_AUTH_ID: ACCOUNT.authId,
      TELESYNC_AUTH_TOKEN: ACCOUNT.authToken,
      TELESYNC_HTTP_PORT: '0',
    });
    const routes = createServedRoutes({
      config,
      accounts: config.accounts,
      database,
      log: createLogger({ level: 'warn', secrets: [ACCOUNT.authToken], pretty: false }),
      streams: ['trunk_calls'],
      plan: planSchedule(config.schedule.crons),
      processMetrics: false,
    });
    for (let scrape = 1; scrape <= 3; scrape++) {
      const before = counter.count;
      const samples = parsePrometheusText((await routes.metrics.render()).body);
      // Both gauges were collected: the lag (no watermark yet, so no series) and the horizon.
      expect(samples.some((sample) => sample.name === 'telesync_horizon_unread_days')).toBe(true);
      expect(counter.count - before, `clock queries of scrape ${scrape}`).toBe(1);
    }
  });
});

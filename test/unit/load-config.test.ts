import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-errors.js';
import { CONFIG_DEFAULTS, loadConfig } from '../../src/config/load-config.js';

describe('loadConfig', () => {
  it('uses the embedded database and documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.database).toEqual({
      url: undefined,
      dataDir: './.telesync',
      schema: 'telephony',
    });
    expect(config.accounts).toEqual([]);
    expect(config.api).toEqual({
      baseUrl: CONFIG_DEFAULTS.baseUrl,
      maxRps: 50,
      concurrency: 8,
      timeoutMs: 30_000,
      maxRetries: 8,
    });
    expect(Object.isFrozen(config.api)).toBe(true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u:p@db:5432/warehouse',
      TELESYNC_DATA_DIR: '/var/lib/telesync',
      TELESYNC_SCHEMA: 'tel_2',
      TELESYNC_BASE_URL: 'http://127.0.0.1:8080/',
      TELESYNC_AUTH_ID: 'MAXXXXXXXXXXXXXXXXXX',
      TELESYNC_AUTH_TOKEN: 'secret-token',
      TELESYNC_MAX_RPS: '12.5',
      TELESYNC_CONCURRENCY: '3',
      TELESYNC_HTTP_TIMEOUT_MS: '1000',
      TELESYNC_MAX_RETRIES: '0',
      TELESYNC_LOG_LEVEL: 'debug',
    });
    expect(config.database).toEqual({
      url: 'postgres://u:p@db:5432/warehouse',
      dataDir: '/var/lib/telesync',
      schema: 'tel_2',
    });
    expect(config.accounts).toEqual([
      { authId: 'MAXXXXXXXXXXXXXXXXXX', authToken: 'secret-token' },
    ]);
    expect(config.api).toEqual({
      baseUrl: 'http://127.0.0.1:8080',
      maxRps: 12.5,
      concurrency: 3,
      timeoutMs: 1000,
      maxRetries: 0,
    });
    expect(config.logLevel).toBe('debug');
  });

  it('reports every problem together, each naming its variable', () => {
    let error: unknown;
    try {
      loadConfig({
        TELESYNC_MAX_RPS: '0',
        TELESYNC_CONCURRENCY: '2.5',
        TELESYNC_AUTH_TOKEN: 'only-the-token',
        TELESYNC_LOG_LEVEL: 'loud',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.map((problem) => problem.key);
    expect(problems).toEqual([
      'TELESYNC_LOG_LEVEL',
      'TELESYNC_AUTH_ID',
      'TELESYNC_MAX_RPS',
      'TELESYNC_CONCURRENCY',
    ]);
    expect((error as ConfigError).message).not.toContain('only-the-token');
  });
});

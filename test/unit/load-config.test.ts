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

describe('the config file (TELESYNC_CONFIG)', () => {
  const file = (value: unknown) => ({ path: '/etc/telesync.json', text: JSON.stringify(value) });

  it('names several accounts, with tokens inline or through a variable, and per-stream schedules', () => {
    const config = loadConfig(
      { TOKEN_B: 'token-b', TELESYNC_AUTH_ID: 'MA_ENV', TELESYNC_AUTH_TOKEN: 'token-env' },
      file({
        accounts: [
          { auth_id: 'MA_FILE', auth_token: 'token-a' },
          { auth_id: 'MB_FILE', auth_token_env: 'TOKEN_B' },
        ],
        api: { max_rps: 20 },
        sync: { slice_hours: 6 },
        schedule: {
          trunk_calls: '*/5 * * * *',
          endpoints: 'off',
          timezone: 'Europe/Paris',
          http_port: 9000,
        },
      }),
    );
    expect(config.accounts).toEqual([
      { authId: 'MA_ENV', authToken: 'token-env' },
      { authId: 'MA_FILE', authToken: 'token-a' },
      { authId: 'MB_FILE', authToken: 'token-b' },
    ]);
    expect(config.api.maxRps).toBe(20);
    expect(config.sync.sliceHours).toBe(6);
    expect(config.schedule).toMatchObject({
      timezone: 'Europe/Paris',
      httpPort: 9000,
      crons: {
        trunk_calls: '*/5 * * * *',
        endpoints: 'off',
        caller_ids: '0 * * * *',
        messages: '*/5 * * * *',
      },
    });
    expect(config.configFile).toBe('/etc/telesync.json');
  });

  it('is overridden by the environment', () => {
    const config = loadConfig({ TELESYNC_MAX_RPS: '7' }, file({ api: { max_rps: 20 } }));
    expect(config.api.maxRps).toBe(7);
  });

  it('reports unknown keys, bad values with where they came from, and broken accounts, all at once', () => {
    let error: unknown;
    try {
      loadConfig(
        {},
        file({
          api: { max_rps: 'fast', speed: 3 },
          schedule: { trunk_calls: 'every minute' },
          accounts: [
            { auth_id: 'A' },
            { auth_id: 'B', auth_token_env: 'MISSING_TOKEN' },
            { auth_id: 'C', auth_token: 'x' },
            { auth_id: 'C', auth_token: 'y' },
          ],
        }),
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).message;
    expect(text).toContain('/etc/telesync.json: api.speed: unknown setting');
    expect(text).toContain(
      'TELESYNC_MAX_RPS (from /etc/telesync.json: api.max_rps): "fast" is not a number',
    );
    expect(text).toContain(
      'TELESYNC_SCHEDULE_TRUNK_CALLS (from /etc/telesync.json: schedule.trunk_calls): "every minute" is not a cron expression',
    );
    expect(text).toContain(
      '/etc/telesync.json: accounts[0]: needs "auth_token" or "auth_token_env"',
    );
    expect(text).toContain(
      '/etc/telesync.json: accounts[1]: auth_token_env names MISSING_TOKEN, which is not set',
    );
    expect(text).toContain('/etc/telesync.json: accounts[3]: account C is configured twice');
    expect(text).not.toMatch(/\bx\b.*\by\b/);
  });

  it('refuses a file that is not a JSON object', () => {
    expect(() => loadConfig({}, { path: '/x.json', text: '{"api":' })).toThrow(
      /TELESYNC_CONFIG: \/x.json is not valid JSON/,
    );
    expect(() => loadConfig({}, { path: '/x.json', text: '[]' })).toThrow(
      /must hold a JSON object/,
    );
  });
});

describe('schedule settings', () => {
  it('default to the documented crons in UTC', () => {
    expect(loadConfig({}).schedule).toEqual({
      timezone: 'UTC',
      crons: {
        trunk_calls: '*/15 * * * *',
        endpoints: '0 * * * *',
        caller_ids: '0 * * * *',
        messages: '*/5 * * * *',
        powerpacks: '*/5 * * * *',
        call_streams: '*/5 * * * *',
      },
      httpHost: '127.0.0.1',
      httpPort: 9464,
      shutdownTimeoutSeconds: 60,
      healthMaxAgeMinutes: 180,
    });
  });
  it('refuse an unknown time zone and a bad cron', () => {
    expect(() => loadConfig({ TELESYNC_SCHEDULE_TIMEZONE: 'Mars/Olympus' })).toThrow(
      /not a time zone/,
    );
    expect(() => loadConfig({ TELESYNC_SCHEDULE_MESSAGES: '61 * * * *' })).toThrow(
      /TELESYNC_SCHEDULE_MESSAGES: "61 \* \* \* \*" is not a cron/,
    );
  });
});

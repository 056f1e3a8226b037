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
      serviceBudget: { requests: 300, windowSeconds: 5 },
      // 80% of 300 per 5 s, held over the service's own window.
      maxRps: 48,
      rateWindowSeconds: 5,
      legacyRateVariables: [],
      concurrency: 8,
      timeoutMs: 30_000,
      maxRetries: 8,
      retryAfterMaxSeconds: 120,
      maxBodyBytes: 32 * 1024 * 1024,
    });
    expect(config.sync.maxPagesPerWindow).toBe(50_000);
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
      TELESYNC_RATE_WINDOW_SECONDS: '5',
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
      serviceBudget: { requests: 300, windowSeconds: 5 },
      maxRps: 12.5,
      rateWindowSeconds: 5,
      legacyRateVariables: ['TELESYNC_MAX_RPS', 'TELESYNC_RATE_WINDOW_SECONDS'],
      concurrency: 3,
      timeoutMs: 1000,
      maxRetries: 0,
      retryAfterMaxSeconds: 120,
      maxBodyBytes: 32 * 1024 * 1024,
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
      httpPortGiven: true,
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

describe('hostile configuration', () => {
  const problemsOf = (env: Record<string, string>, text?: string): string => {
    try {
      loadConfig(env, text === undefined ? undefined : { path: '/x.json', text });
    } catch (error) {
      if (error instanceof ConfigError) return error.message;
      throw error;
    }
    return '';
  };

  it.each(['information_schema', 'pg_catalog', 'pg_toast', 'pg_temp_1', 'pg_anything'])(
    'refuses the system schema %s',
    (schema) => {
      expect(problemsOf({ TELESYNC_SCHEMA: schema })).toContain(
        `TELESYNC_SCHEMA: "${schema}" is a PostgreSQL system schema`,
      );
    },
  );

  it('still takes an ordinary schema that merely contains pg', () => {
    expect(loadConfig({ TELESYNC_SCHEMA: 'my_pg_data' }).database.schema).toBe('my_pg_data');
  });

  it.each(['1e308', '0x10', '0b11', '0o7', 'Infinity', '1e3', '5.', '.5', '1_000'])(
    'refuses the number form %s',
    (raw) => {
      expect(problemsOf({ TELESYNC_MAX_RPS: raw })).toContain(`TELESYNC_MAX_RPS: "${raw}" is not`);
      expect(problemsOf({ TELESYNC_BATCH_SIZE: raw })).toContain(`TELESYNC_BATCH_SIZE: "${raw}"`);
    },
  );

  it('reads the load connections from the environment or a file, 2 by default, 1 to 64', () => {
    expect(loadConfig({}).sync.loadConnections).toBe(4);
    expect(loadConfig({ TELESYNC_LOAD_CONNECTIONS: '6' }).sync.loadConnections).toBe(6);
    expect(
      loadConfig({}, { path: '/x.json', text: '{"sync":{"load_connections":3}}' }).sync
        .loadConnections,
    ).toBe(3);
    expect(problemsOf({ TELESYNC_LOAD_CONNECTIONS: '0' })).toContain('TELESYNC_LOAD_CONNECTIONS');
    expect(problemsOf({ TELESYNC_LOAD_CONNECTIONS: '65' })).toContain('TELESYNC_LOAD_CONNECTIONS');
  });

  it('reads the accounts at once from the environment, 1 to 64', () => {
    expect(loadConfig({ TELESYNC_ACCOUNT_CONCURRENCY: '64' }).accountConcurrency).toBe(64);
    expect(loadConfig({ TELESYNC_ACCOUNT_CONCURRENCY: '3' }).accountConcurrency).toBe(3);
    for (const raw of ['0', '65', '2.5', 'many', 'automatic']) {
      expect(problemsOf({ TELESYNC_ACCOUNT_CONCURRENCY: raw })).toContain(
        `TELESYNC_ACCOUNT_CONCURRENCY: "${raw}" is not "auto" or a whole number from 1 to 64`,
      );
    }
  });

  it('works out the accounts at once when the setting is auto or unset: every account, within memory', () => {
    const accounts = (count: number) =>
      JSON.stringify({
        accounts: Array.from({ length: count }, (_, index) => ({
          auth_id: `MA${index}`,
          auth_token: `token-${index}`,
        })),
      });
    const withAccounts = (count: number, env: Record<string, string> = {}) =>
      loadConfig(env, { path: '/x.json', text: accounts(count) }).accountConcurrency;
    expect(loadConfig({}).accountConcurrency).toBe(1);
    expect(withAccounts(1)).toBe(1);
    expect(withAccounts(10)).toBe(10);
    expect(withAccounts(50)).toBe(50);
    expect(withAccounts(50, { TELESYNC_ACCOUNT_CONCURRENCY: 'auto' })).toBe(50);
    expect(withAccounts(50, { TELESYNC_ACCOUNT_CONCURRENCY: 'AUTO' })).toBe(50);
    // Larger batches hold more memory per account: fewer at once.
    expect(withAccounts(50, { TELESYNC_BATCH_SIZE: '20000' })).toBeLessThan(10);
    // A number still overrides it.
    expect(withAccounts(50, { TELESYNC_ACCOUNT_CONCURRENCY: '7' })).toBe(7);
  });

  it("holds each account to a share of the service's budget, over its window", () => {
    const api = (env: Record<string, string>) => loadConfig(env).api;
    expect(api({ TELESYNC_REQUEST_SHARE: '100%' })).toMatchObject({
      maxRps: 60,
      rateWindowSeconds: 5,
    });
    expect(api({ TELESYNC_REQUEST_SHARE: '0.5' })).toMatchObject({ maxRps: 30 });
    expect(
      api({ TELESYNC_REQUEST_BUDGET: '1000/1m', TELESYNC_REQUEST_SHARE: '90%' }),
    ).toMatchObject({
      serviceBudget: { requests: 1000, windowSeconds: 60 },
      maxRps: 15,
      rateWindowSeconds: 60,
    });
    expect(
      loadConfig(
        {},
        { path: '/x.json', text: '{"api":{"request_budget":"100/s","request_share":1}}' },
      ).api,
    ).toMatchObject({ serviceBudget: { requests: 100, windowSeconds: 1 }, maxRps: 100 });
  });

  it('refuses a budget or share it cannot read, saying what it takes', () => {
    expect(problemsOf({ TELESYNC_REQUEST_BUDGET: '300' })).toContain(
      'TELESYNC_REQUEST_BUDGET: "300" is not a budget such as "300/5s"',
    );
    expect(problemsOf({ TELESYNC_REQUEST_SHARE: '120%' })).toContain(
      'TELESYNC_REQUEST_SHARE: "120%" is not a share above 0% and at most 100%',
    );
    expect(problemsOf({ TELESYNC_REQUEST_SHARE: '80' })).toContain('such as 80% or 0.8');
  });

  it('keeps the older TELESYNC_MAX_RPS and TELESYNC_RATE_WINDOW_SECONDS, but not mixed with the new ones', () => {
    expect(loadConfig({ TELESYNC_MAX_RPS: '55' }).api).toMatchObject({
      maxRps: 55,
      rateWindowSeconds: 1,
      legacyRateVariables: ['TELESYNC_MAX_RPS'],
    });
    expect(loadConfig({ TELESYNC_RATE_WINDOW_SECONDS: '5' }).api).toMatchObject({
      maxRps: 50,
      rateWindowSeconds: 5,
    });
    expect(problemsOf({ TELESYNC_MAX_RPS: '55', TELESYNC_REQUEST_SHARE: '90%' })).toContain(
      'TELESYNC_MAX_RPS: is set with TELESYNC_REQUEST_SHARE, which replaces it: unset TELESYNC_MAX_RPS',
    );
  });

  it('takes plain decimals, from the environment and from a file', () => {
    expect(loadConfig({ TELESYNC_MAX_RPS: '12.5' }).api.maxRps).toBe(12.5);
    expect(loadConfig({}, { path: '/x.json', text: '{"api":{"max_rps":7.25}}' }).api.maxRps).toBe(
      7.25,
    );
    expect(problemsOf({}, '{"api":{"max_rps":1e308}}')).toContain(
      'TELESYNC_MAX_RPS (from /x.json: api.max_rps): "1e+308" is not',
    );
  });

  it('refuses a timeout a timer cannot hold', () => {
    expect(problemsOf({ TELESYNC_HTTP_TIMEOUT_MS: '2147483648' })).toContain(
      'TELESYNC_HTTP_TIMEOUT_MS: "2147483648" is not a whole number from 1 to 2147483647',
    );
    expect(loadConfig({ TELESYNC_HTTP_TIMEOUT_MS: '2147483647' }).api.timeoutMs).toBe(2147483647);
  });

  it('reads the new caps', () => {
    const config = loadConfig({
      TELESYNC_RETRY_AFTER_MAX_SECONDS: '5',
      TELESYNC_MAX_BODY_BYTES: '65536',
      TELESYNC_MAX_PAGES_PER_WINDOW: '10',
    });
    expect(config.api.retryAfterMaxSeconds).toBe(5);
    expect(config.api.maxBodyBytes).toBe(65536);
    expect(config.sync.maxPagesPerWindow).toBe(10);
    expect(problemsOf({ TELESYNC_MAX_PAGES_PER_WINDOW: '0' })).toContain(
      'TELESYNC_MAX_PAGES_PER_WINDOW',
    );
  });

  it('refuses a file nested 100,000 levels deep with a clear error, not a stack overflow', () => {
    const text = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    expect(problemsOf({}, text)).toContain('/x.json is nested deeper than 32 levels');
    const arrays = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(problemsOf({}, arrays)).toContain('nested deeper than 32 levels');
  });

  it('does not count brackets inside strings as nesting', () => {
    const text = JSON.stringify({ database: { schema: 'x' }, log_level: `info${'{['.repeat(50)}` });
    expect(problemsOf({}, text)).toContain('TELESYNC_LOG_LEVEL');
    expect(problemsOf({}, text)).not.toContain('nested deeper');
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'])(
    'refuses the key %s as unknown, listing the known keys',
    (key) => {
      const top = problemsOf({}, `{"${key}": 1}`);
      expect(top).toContain(`/x.json: ${key}: unknown setting; known: accounts, database.url`);
      const inner = problemsOf({}, `{"api": {"${key}": "x"}}`);
      expect(inner).toContain(`/x.json: api.${key}: unknown setting`);
    },
  );
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
      verifyCron: '0 6 * * *',
      httpHost: '127.0.0.1',
      httpPort: 9464,
      httpPortGiven: false,
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
    expect(() => loadConfig({ TELESYNC_VERIFY_CRON: 'nightly' })).toThrow(
      /TELESYNC_VERIFY_CRON: "nightly" is not a cron expression such as "0 6 \* \* \*"/,
    );
    expect(loadConfig({ TELESYNC_VERIFY_CRON: 'off' }).schedule.verifyCron).toBe('off');
  });
});

describe('the horizon alarm setting', () => {
  it('defaults to 7 days, takes 0 (off) to 89, from the environment or the config file', () => {
    expect(loadConfig({}).horizonAlarm).toEqual({ alarmDays: 7 });
    expect(loadConfig({ TELESYNC_HORIZON_ALARM_DAYS: '0' }).horizonAlarm.alarmDays).toBe(0);
    const fromFile = loadConfig(
      {},
      {
        path: '/etc/telesync.json',
        text: JSON.stringify({ schedule: { horizon_alarm_days: 14 } }),
      },
    );
    expect(fromFile.horizonAlarm.alarmDays).toBe(14);
  });
  it('refuses a value past the horizon or not a whole number', () => {
    expect(() => loadConfig({ TELESYNC_HORIZON_ALARM_DAYS: '90' })).toThrow(
      /TELESYNC_HORIZON_ALARM_DAYS.*a whole number from 0 to 89/,
    );
    expect(() => loadConfig({ TELESYNC_HORIZON_ALARM_DAYS: 'a week' })).toThrow(
      /TELESYNC_HORIZON_ALARM_DAYS/,
    );
  });
});

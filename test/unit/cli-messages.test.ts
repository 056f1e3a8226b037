import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/api-errors.js';
import {
  describeRequestBudget,
  planLegacyRateNote,
  planRateWarning,
} from '../../src/api/api-settings.js';
import { formatBackfillCoverage } from '../../src/cli/backfill-command.js';
import type { CliIo } from '../../src/cli/cli-io.js';
import { explainBackfillCount, formatDecimalText } from '../../src/cli/demo-command.js';
import { writeNotice } from '../../src/cli/notice.js';
import { formatRunLine, runJson } from '../../src/cli/run-report.js';
import { loadWaitNote } from '../../src/cli/status-command.js';
import { withLineAndColumn } from '../../src/config/config-sources.js';
import { RunStats } from '../../src/sync/run-context.js';
import type { SyncResult } from '../../src/sync/run-stream.js';
import { TRUNK_HISTORY_DAYS } from '../../src/domain/service-rules.js';
import {
  horizonStart,
  planBackfill,
  planLeftOut,
  plannerSettings,
} from '../../src/sync/window-planner.js';
import { createLogger } from '../../src/util/logger.js';
import {
  MICROS_PER_DAY,
  MICROS_PER_MINUTE,
  fixIsoText,
  formatIsoFixed,
  parseEpochMicros,
} from '../../src/util/micros.js';

const settings = plannerSettings({
  sliceHours: 24,
  settleLagMinutes: 5,
  lookbackHours: 6,
  initialDays: 7,
});
const now = parseEpochMicros('2026-11-21T10:00:00Z')!;

function result(status: SyncResult['status'], windowsCompleted: number, error?: string) {
  const stats = new RunStats();
  stats.windowsCompleted = windowsCompleted;
  return {
    accountId: 'MA_X',
    stream: 'trunk_calls',
    status,
    runId: 1,
    stats,
    requests: { requests: 3, retries: 0, waitMs: 0 },
    durationMs: 100,
    error,
  } as unknown as SyncResult;
}

describe('what a 90-day backfill leaves out (planLeftOut)', () => {
  it('a --days 90 read a few milliseconds before planning: the margin and the settle lag, no lost range', () => {
    const requested = {
      start: now - 3_000 - TRUNK_HISTORY_DAYS * MICROS_PER_DAY,
      end: now - 3_000,
    };
    const plan = planBackfill(now, requested, settings);
    // The planner itself sees a 3 ms slice beyond the service's 90 days…
    expect(plan.beyondService).toBeDefined();
    // …which is rounding, not something a person must be told is lost.
    expect(planLeftOut(plan)).toEqual([
      { start: requested.start, end: horizonStart(now), why: 'horizon-margin' },
      { start: now - 5 * MICROS_PER_MINUTE, end: requested.end, why: 'settle-lag' },
    ]);
  });

  it('a range reaching a day past the horizon reports that day as beyond it, then the margin', () => {
    const requested = {
      start: now - (TRUNK_HISTORY_DAYS + 1) * MICROS_PER_DAY,
      end: now - MICROS_PER_DAY,
    };
    const parts = planLeftOut(planBackfill(now, requested, settings));
    expect(parts.map((part) => part.why)).toEqual(['beyond-horizon', 'horizon-margin']);
    expect(parts[1]!.end - parts[1]!.start).toBe(10 * MICROS_PER_MINUTE);
  });

  it('the command says it in one line, with both reasons', () => {
    const plan = planBackfill(
      now,
      { start: now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY, end: now },
      settings,
    );
    const lines = formatBackfillCoverage(result('succeeded', 91), plan);
    expect(lines).toEqual([
      `  covered 2026-08-23T10:10:00Z to 2026-11-21T09:55:00Z (91 windows)`,
      '  not read: the oldest 10 minutes (a margin inside the 90-day horizon, so no request is refused as too old); ' +
        'calls that ended in the last 5 minutes (settle lag: the next sync reads them)',
    ]);
  });

  it('a stopped backfill says how far it got, not the whole range', () => {
    const plan = planBackfill(
      now,
      { start: now - TRUNK_HISTORY_DAYS * MICROS_PER_DAY, end: now },
      settings,
    );
    const lines = formatBackfillCoverage(result('stopped', 3), plan);
    expect(lines).toEqual([
      '  stopped after 3 of 91 windows (2026-08-23T10:10:00Z to 2026-08-26T00:00:00Z); run the same command again to resume',
    ]);
    expect(lines.join('\n')).not.toContain('covered');
  });
});

describe('run lines and errors say things once', () => {
  it('a skipped run does not repeat "skipped:"', () => {
    const line = formatRunLine(
      result(
        'skipped',
        0,
        'skipped: another telesync run of trunk_calls for account MA_X is in progress',
      ),
    );
    expect(line).toBe(
      'trunk_calls  MA_X  skipped: another telesync run of trunk_calls for account MA_X is in progress',
    );
  });

  it('a run held back by the database says so, with the time; a short or small wait is not said', () => {
    const held = (loadWaitMs: number, durationMs: number): SyncResult => {
      const base = result('succeeded', 91);
      base.stats.loadWaitMs = loadWaitMs;
      return { ...base, durationMs };
    };
    expect(formatRunLine(held(6_140, 18_000))).toMatch(
      /, 18\.0s, 6\.1s of it waiting for the database$/,
    );
    // Under a second, or under a tenth of the run: nothing to act on.
    expect(formatRunLine(held(900, 2_000))).not.toContain('waiting');
    expect(formatRunLine(held(1_500, 60_000))).not.toContain('waiting');
    expect(runJson(held(6_140.4, 18_000))).toMatchObject({ load_wait_ms: 6_140, wait_ms: 0 });
  });

  it('status notes a last run held back by the database, with the same thresholds as the run line', () => {
    const lastRun = (loadWaitMs: number, finishedAt: string | null) => ({
      stream: 'trunk_calls' as const,
      lastRun: {
        id: 7,
        command: 'backfill',
        status: 'succeeded' as const,
        startedAt: '2026-11-28T04:55:00.000000Z',
        finishedAt,
        recordsFetched: 10_000,
        recordsChanged: 10_000,
        recordsRejected: 0,
        requests: 540,
        loadWaitMs,
        error: null,
      },
    });
    expect(loadWaitNote(lastRun(6_140, '2026-11-28T04:55:18.000000Z'))).toBe(
      '  i trunk_calls: the last run spent 6.1s of its 18.0s waiting for the database; more load ' +
        'connections (TELESYNC_LOAD_CONNECTIONS) or fewer accounts on this process may help ' +
        '(docs/scaling.md)',
    );
    // Under a second, under a tenth of the run, a run still going, or no run: nothing said.
    expect(loadWaitNote(lastRun(900, '2026-11-28T04:55:02.000000Z'))).toBeUndefined();
    expect(loadWaitNote(lastRun(1_500, '2026-11-28T04:56:00.000000Z'))).toBeUndefined();
    expect(loadWaitNote(lastRun(6_140, null))).toBeUndefined();
    expect(loadWaitNote({ stream: 'trunk_calls', lastRun: null })).toBeUndefined();
  });

  it('a 401 says "authentication failed" once', () => {
    const error = new ApiError({
      kind: 'http',
      method: 'GET',
      path: '/v1/Account/MA_X/',
      status: 401,
      serviceMessage: 'authentication failed: unknown auth_id or wrong auth_token',
      retryable: false,
    });
    expect(error.message).toBe(
      '401 authentication failed: unknown auth_id or wrong auth_token; check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN',
    );
    expect(error.message.match(/authentication failed/g)).toHaveLength(1);
  });

  it('a config file that is not JSON is located by line and column', () => {
    const text = '{\n  "api": {\n    max_rps: 10\n  }\n}\n';
    let message = '';
    try {
      JSON.parse(text);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(withLineAndColumn(message, text)).toMatch(/at line 3, column 5/);
    expect(withLineAndColumn(message, text)).not.toMatch(/position/);
  });

  it("warns when the rate is above the service's budget, but not for the local simulator", () => {
    const service = { requests: 300, windowSeconds: 5 };
    const api = (baseUrl: string, maxRps: number, rateWindowSeconds = 1) => ({
      baseUrl,
      serviceBudget: service,
      maxRps,
      rateWindowSeconds,
    });
    expect(planRateWarning(api('https://api.example.com', 61))).toBe(
      "at most 61 requests per 1 s per account: 101.7% of the service's 300 per 5 s: above what the service allows, " +
        '300 requests per 5 s per account; expect 429 answers and retries that slow runs down; ' +
        'set TELESYNC_REQUEST_SHARE to 100% or less (and leave TELESYNC_MAX_RPS unset)',
    );
    expect(planRateWarning(api('https://api.example.com', 60, 5))).toBeUndefined();
    expect(planRateWarning(api('http://127.0.0.1:4010', 5000))).toBeUndefined();
  });

  it("says what each account will use of the service's budget, and names the settings that replace the old ones", () => {
    const service = { requests: 300, windowSeconds: 5 };
    expect(
      describeRequestBudget({ serviceBudget: service, maxRps: 48, rateWindowSeconds: 5 }),
    ).toBe("at most 240 requests per 5 s per account: 80% of the service's 300");
    expect(
      describeRequestBudget({ serviceBudget: service, maxRps: 60, rateWindowSeconds: 5 }),
    ).toBe("at most 300 requests per 5 s per account: 100% of the service's 300");
    expect(
      describeRequestBudget({ serviceBudget: service, maxRps: 55, rateWindowSeconds: 1 }),
    ).toBe("at most 55 requests per 1 s per account: 91.7% of the service's 300 per 5 s");
    const legacy = {
      serviceBudget: service,
      maxRps: 55,
      rateWindowSeconds: 1,
      legacyRateVariables: ['TELESYNC_MAX_RPS'],
    };
    expect(planLegacyRateNote(legacy)).toBe(
      'TELESYNC_MAX_RPS still works; what replaces it: TELESYNC_REQUEST_BUDGET (the service\'s budget as it states it, default "300/5s") ' +
        'and TELESYNC_REQUEST_SHARE (the share of it telesync uses, default 80%); ' +
        "the same rate over the service's window is TELESYNC_REQUEST_SHARE=91.7%",
    );
    expect(planLegacyRateNote({ ...legacy, legacyRateVariables: [] })).toBeUndefined();
  });
});

describe('the demo', () => {
  it('makes its numbers add up', () => {
    expect(explainBackfillCount(29_997, 30_000, 2, 5)).toBe(
      '29,997 of 30,000 calls: 2 ended in the last 5 minutes (settle lag), read by the next sync; ' +
        '1 ended in the oldest 10 minutes of the 90 days (a margin so no request reaches past the horizon), which leave the service soon',
    );
    expect(explainBackfillCount(30_000, 30_000, 0, 5)).toBe('30,000 of 30,000 calls: all of them');
  });

  it('prints minutes and amounts grouped by thousands, exactly', () => {
    expect(formatDecimalText('90991.0000', { trimZeros: true })).toBe('90,991');
    expect(formatDecimalText('1234.5000', { trimZeros: true })).toBe('1,234.5');
    expect(formatDecimalText('1234567.89012345678901')).toBe('1,234,567.89012345678901');
    expect(formatDecimalText('9007199254740993.10')).toBe('9,007,199,254,740,993.10');
    expect(formatDecimalText('-999.5')).toBe('-999.5');
    expect(formatDecimalText('12')).toBe('12');
    expect(formatDecimalText('n/a')).toBe('n/a');
  });
});

describe('machine output', () => {
  it('timestamps have six fraction digits and Z', () => {
    expect(formatIsoFixed(parseEpochMicros('2026-11-21T10:00:00Z')!)).toBe(
      '2026-11-21T10:00:00.000000Z',
    );
    expect(fixIsoText('2026-11-21T10:00:00.5Z')).toBe('2026-11-21T10:00:00.500000Z');
    expect(fixIsoText(null)).toBeNull();
  });

  it('log lines carry the time with six fraction digits', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      secrets: [],
      pretty: false,
      write: (l) => lines.push(l),
    });
    log.info({ wait_ms: 1 }, 'hello');
    const entry = JSON.parse(lines[0]!) as { time: string };
    expect(entry.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('run JSON keys are snake_case', () => {
    for (const key of Object.keys(runJson(result('succeeded', 1))))
      expect(key).toMatch(/^[a-z_]+$/);
  });

  it('notices are plain text on a terminal and JSON lines otherwise', () => {
    const written: string[] = [];
    const io = (isTty: boolean): CliIo => ({
      env: {},
      cwd: '/',
      isTty,
      out: () => undefined,
      err: (text) => written.push(text),
    });
    writeNotice(io(true), 'warn', 'note: something');
    writeNotice(io(false), 'warn', 'note: something');
    expect(written[0]).toBe('note: something');
    expect(JSON.parse(written[1]!)).toMatchObject({ level: 'warn', msg: 'note: something' });
  });
});

import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { planCoverageDays, type CoverageWindow } from '../../src/domain/coverage-days.js';
import {
  coverageCellClasses,
  escapeHtml,
  formatDuration,
  renderStatusPage,
  type StatusPageView,
} from '../../src/http/status-page.js';
import { createStatusPageRoute } from '../../src/http/status-page-route.js';
import { horizonStart } from '../../src/sync/window-planner.js';
import { toEpochMicros } from '../../src/util/micros.js';

const NOW = toEpochMicros('2025-06-01T12:00:00Z');
const HOSTILE = `<script>alert("x")</script>&'`;

function day(from: string, status: CoverageWindow['status'], totalCount: number | null) {
  const start = toEpochMicros(`${from}T00:00:00Z`);
  return { status, start, end: start + 86_400_000_000, totalCount };
}

function view(overrides: Partial<StatusPageView> = {}): StatusPageView {
  const coverage = planCoverageDays({
    windows: [
      // Read when the 90-day cut-off lay at 11:10 of the day: 40 counted from there on.
      { ...day('2025-03-03', 'complete', 40), start: toEpochMicros('2025-03-03T11:10:00Z') },
      day('2025-03-05', 'failed', null),
      day('2025-03-06', 'complete', 12_000),
      day('2025-05-30', 'complete', 20),
      day('2025-05-31', 'planned', null),
    ],
    storedRowsByDay: new Map([
      // Two rows from before 11:10, stored by an earlier read: no difference.
      ['2025-03-03', 42],
      ['2025-03-06', 12_000],
      ['2025-05-30', 18],
    ]),
    trackedFrom: toEpochMicros('2025-03-05T00:00:00Z'),
    now: NOW,
    horizonStart: horizonStart(NOW),
  });
  return {
    generatedAt: '2025-06-01T12:00:00.000Z',
    horizonStart: '2025-03-03T12:10:00Z',
    horizonAlarmDays: 7,
    version: '1.2.3',
    accounts: [
      {
        accountId: `MA_${HOSTILE}`,
        coverage,
        billedByDay: new Map([
          ['2025-03-06', '1234567.50000'],
          ['2025-05-30', '20.12345'],
        ]),
        unreadNearHorizon: ['2025-03-05'],
        streams: [
          {
            stream: 'trunk_calls',
            schedule: '*/15 * * * *',
            watermark: '2025-06-01T11:45:00.123456Z',
            lagSeconds: 900,
            rejects: 3,
            lastRejectAt: '2025-06-01T11:40:00Z',
            runs: [
              {
                id: 2,
                command: `schedule ${HOSTILE}`,
                status: 'failed',
                startedAt: '2025-06-01T11:50:00Z',
                finishedAt: '2025-06-01T11:51:00Z',
                recordsFetched: 0,
                recordsChanged: 0,
                recordsRejected: 0,
                requests: 4,
                loadWaitMs: 0,
                error: `GET /v1/Account/MA_X/TrunkCall/?end_time__gte=2025-06-01T00%3A00%3A00Z&limit=20 failed after 3 attempts: 503 the service had an internal problem: <img src=x onerror="alert(1)"> ${HOSTILE} [api_id 7d1c2e4a]`,
              },
              {
                id: 1,
                command: 'schedule',
                status: 'succeeded',
                startedAt: '2025-06-01T11:30:00Z',
                finishedAt: '2025-06-01T11:31:00Z',
                recordsFetched: 1_120,
                recordsChanged: 7,
                recordsRejected: 3,
                requests: 9,
                loadWaitMs: 12_500,
                error: null,
              },
            ],
          },
          {
            stream: 'endpoints',
            schedule: 'off',
            watermark: null,
            lagSeconds: null,
            rejects: 0,
            lastRejectAt: null,
            runs: [],
          },
        ],
      },
    ],
    ...overrides,
  };
}

/** The strip's cells: day → classes. */
function cells(html: string): Map<string, string[]> {
  const found = [...html.matchAll(/<span class="(day [^"]+)" data-day="([^"]+)"/g)];
  return new Map(found.map((match) => [match[2]!, match[1]!.split(' ')]));
}

describe('renderStatusPage', () => {
  it('escapes every value from the database: no markup gets through', () => {
    const html = renderStatusPage(view());
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('onerror="');
    expect(html).toContain('MA_&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    // In an attribute as well.
    expect(html).toContain('data-account="MA_&lt;script&gt;alert(&quot;x&quot;)');
  });

  it('shows per stream the schedule, watermark, lag, recent runs with their counts, and rejects', () => {
    const html = renderStatusPage(view());
    const trunk = /<tr data-stream="trunk_calls">(.*?)<\/tr>/s.exec(html)?.[1] ?? '';
    expect(trunk).toContain('<code>*/15 * * * *</code>');
    // Every time to the second, the exact text kept in the attribute.
    expect(trunk).toContain(
      '<time datetime="2025-06-01T11:45:00.123456Z">2025-06-01 11:45:00</time>',
    );
    expect(trunk).toContain('<td>15 min</td>');
    expect(trunk).toMatch(/status failed">failed<\/span> <time[^>]*>2025-06-01 11:51:00</);
    // A run held back by the database says for how long (a second and a tenth of it or more).
    expect(trunk).toContain(
      '1,120 fetched · 7 changed · 3 rejected · 9 requests · 12.5s of 60.0s waiting for the database',
    );
    expect(trunk).toContain('0 fetched · 0 changed · 4 requests</span>');
    expect(trunk.match(/waiting for the database/g)).toHaveLength(1);
    expect(trunk).toContain('<span class="bad">3</span>');
    const endpoints = /<tr data-stream="endpoints">(.*?)<\/tr>/s.exec(html)?.[1] ?? '';
    expect(endpoints).toContain('<code>off</code>');
    expect(endpoints).toContain('no run yet');
  });

  it('draws one cell per day of the strip, classed by the ledger', () => {
    const strip = cells(renderStatusPage(view()));
    expect(strip.size).toBe(90);
    expect(strip.get('2025-03-03')).toEqual(['day', 'complete']);
    expect(strip.get('2025-03-05')).toEqual(['day', 'incomplete', 'failed', 'alarm']);
    expect(strip.get('2025-03-06')).toEqual(['day', 'complete']);
    expect(strip.get('2025-04-15')).toEqual(['day', 'unread']);
    expect(strip.get('2025-05-30')).toEqual(['day', 'complete', 'missing']);
    expect(strip.get('2025-05-31')).toEqual(['day', 'incomplete']);
  });

  it('marks the days telesync verify checked, the differing ones in red, with when and which', () => {
    const base = view();
    const account = base.accounts[0]!;
    const html = renderStatusPage({
      ...base,
      accounts: [
        {
          ...account,
          verification: {
            lastVerifiedAt: '2025-06-01T06:00:12.5Z',
            days: { '2025-03-06': 'agree', '2025-05-30': 'differs' },
          },
        },
      ],
    });
    const strip = cells(html);
    expect(strip.get('2025-03-06')).toEqual(['day', 'complete', 'verified']);
    expect(strip.get('2025-05-30')).toEqual(['day', 'complete', 'missing', 'verify-differs']);
    expect(strip.get('2025-04-15')).toEqual(['day', 'unread']);
    expect(html).toContain(
      'Verified <time datetime="2025-06-01T06:00:12.5Z">2025-06-01 06:00:12</time> (<code>telesync verify</code>): 2 days, 1 agree; <span class="bad">differing: 2025-05-30</span>',
    );
    expect(renderStatusPage(base)).toContain('Not verified yet');
  });

  it("lists per day, newest first, the service's count beside the rows stored and the billed amount", () => {
    const html = renderStatusPage(view());
    const rows = [...html.matchAll(/<tr data-day="([^"]+)"(?: class="([^"]+)")?>(.*?)<\/tr>/g)].map(
      ([, day, classes, cells]) => ({
        day,
        classes,
        cells: [...(cells ?? '').matchAll(/<td[^>]*>(.*?)<\/td>/g)].map(([, text]) =>
          (text ?? '').replace(/<[^>]+>/g, ''),
        ),
      }),
    );
    expect(rows).toHaveLength(90);
    expect(rows[0]?.day).toBe('2025-05-31');
    expect(rows.at(-1)?.day).toBe('2025-03-03');
    const row = (day: string) => rows.find((found) => found.day === day);
    expect(row('2025-05-30')).toEqual({
      day: '2025-05-30',
      classes: 'differs',
      cells: ['2025-05-30', 'complete', '20', '18', '−2', '20.12345'],
    });
    expect(row('2025-03-06')?.cells).toEqual([
      '2025-03-06',
      'complete',
      '12,000',
      '12,000',
      'agrees',
      '1,234,567.50000',
    ]);
    // The day the cut-off moved into: counted from 11:10 only, two more rows stored from before.
    expect(row('2025-03-03')).toEqual({
      day: '2025-03-03',
      classes: undefined,
      cells: ['2025-03-03', 'complete', '40', '42', 'agrees (part of the day counted)', '0'],
    });
    expect(html).toContain('1 day differs: 2025-05-30</span> · 12,060 counted, 12,060 stored');
  });

  it('names the newest eight differing days, and how many more', () => {
    const [account] = view().accounts;
    const coverage = account!.coverage.map((day) => ({ ...day, differs: true }));
    const html = renderStatusPage(view({ accounts: [{ ...account!, coverage }] }));
    expect(html).toContain(
      '90 days differ: 2025-05-31, 2025-05-30, 2025-05-29, 2025-05-28, 2025-05-27, 2025-05-26, 2025-05-25, 2025-05-24 and 82 more</span>',
    );
  });

  it('draws the chart of the 90 days with its date axis, the differing day and the alarm marked', () => {
    const html = renderStatusPage(view());
    const columns = [...html.matchAll(/<g class="(chart-day[^"]*)" data-day="([^"]+)">/g)];
    expect(columns).toHaveLength(90);
    expect(columns[0]?.[2]).toBe('2025-03-03');
    expect(columns.at(-1)?.[2]).toBe('2025-05-31');
    const marked = columns.filter(([, classes]) => classes !== 'chart-day');
    expect(marked.map(([, classes, day]) => [day, classes])).toEqual([
      ['2025-03-05', 'chart-day alarm'],
      ['2025-05-30', 'chart-day differs'],
    ]);
    // The newest day carries a date label, on the chart's axis and under the strip.
    expect(html).toContain('<g class="tick" data-day="2025-05-31">');
    expect(html).toMatch(/<span class="label" data-day="2025-05-31" [^>]*>May 31<\/span>/);
  });

  it('says an error by its cause, the whole text (request, api_id) behind a click', () => {
    const html = renderStatusPage(view());
    const cause = /<details class="error-details"><summary>(.*?)<\/summary><pre>(.*?)<\/pre>/s.exec(
      html,
    );
    expect(cause?.[1]).toBe(
      '<span class="error">503 the service had an internal problem: &lt;img src=x onerror=&quot;alert(1)&quot;&gt; &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</span>',
    );
    expect(cause?.[2]).toMatch(
      /^GET \/v1\/Account\/MA_X\/TrunkCall\/\?end_time__gte=.*\[api_id 7d1c2e4a\]$/,
    );
  });

  it('folds repeated skips into one line, and a reason shared by streams into one notice', () => {
    const [account] = view().accounts;
    const skipped = (id: number, minute: number) => ({
      id,
      command: 'schedule',
      status: 'skipped' as const,
      startedAt: `2025-06-01T11:${minute}:00Z`,
      finishedAt: `2025-06-01T11:${minute}:00Z`,
      recordsFetched: 0,
      recordsChanged: 0,
      recordsRejected: 0,
      requests: 0,
      loadWaitMs: 0,
      error:
        'skipped: the service refused the credentials of account MA_X (401) in trunk_calls; check TELESYNC_AUTH_ID and TELESYNC_AUTH_TOKEN',
    });
    const streams = account!.streams.map((stream) => ({
      ...stream,
      runs: [skipped(30, 50), skipped(29, 40), skipped(28, 30)],
    }));
    const html = renderStatusPage(view({ accounts: [{ ...account!, streams }] }));
    expect(html.match(/refused the credentials/g)).toHaveLength(1);
    expect(html).toContain('<strong>2 streams skipped</strong> (trunk_calls, endpoints)');
    const trunk = /<tr data-stream="trunk_calls">(.*?)<\/tr>/s.exec(html)?.[1] ?? '';
    expect(trunk.match(/<li>/g)).toHaveLength(1);
    expect(trunk).toContain('skipped ×3</span> <time datetime="2025-06-01T11:50:00Z">');
    expect(trunk).toContain('since</span> <time datetime="2025-06-01T11:30:00Z">');
  });

  it('raises the horizon alarm at the top only when a day is counted', () => {
    expect(renderStatusPage(view())).toContain('role="alert"');
    const [account] = view().accounts;
    const calm = renderStatusPage(view({ accounts: [{ ...account!, unreadNearHorizon: [] }] }));
    expect(calm).not.toContain('role="alert"');
  });

  it('loads nothing: no script, no stylesheet link, no image, no url() in the CSS', () => {
    const html = renderStatusPage(view());
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
  });
});

describe('coverageCellClasses', () => {
  it('adds failed, missing and alarm to the state', () => {
    const [first] = planCoverageDays({
      windows: [],
      storedRowsByDay: new Map(),
      trackedFrom: null,
      now: NOW,
      horizonStart: horizonStart(NOW),
    });
    expect(coverageCellClasses(first!, false)).toEqual(['day', 'unread']);
    expect(coverageCellClasses({ ...first!, failed: true }, true)).toEqual([
      'day',
      'unread',
      'failed',
      'alarm',
    ]);
  });
});

describe('formatting', () => {
  it('escapes the five HTML specials', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe(
      '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;',
    );
  });
  it('gives durations in two units at most', () => {
    expect([42, 900, 3 * 3600 + 300, 50 * 3600].map(formatDuration)).toEqual([
      '42 s',
      '15 min',
      '3 h 5 min',
      '2 d 2 h',
    ]);
  });
});

describe('the / route', () => {
  it('answers 200 with the rendered page as HTML', async () => {
    const route = createStatusPageRoute(() => Promise.resolve(view()));
    expect(route).toMatchObject({ method: 'GET', path: '/' });
    const answer = await route.answer({} as IncomingMessage);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('text/html; charset=utf-8');
    expect(answer.body).toBe(renderStatusPage(view()));
  });
});

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { scheduleVariable } from '../../src/config/load-config.js';
import { STREAMS } from '../../src/sync/stream-registry.js';
import type { HealthReport } from '../../src/scheduler/health.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { canFakeClock, fakedClockEnv } from '../support/faked-clock.js';
import { harnessTarget } from '../support/test-database.js';
import { parsePrometheusText, sumOf } from '../support/prometheus-text.js';
import { runTelesync, startTelesync, type TelesyncProcess } from '../support/run-telesync.js';
import { freePort } from '../support/telesync-process.js';
import { lastJson } from '../support/command-output.js';
import { clearOfUtcMidnight, utcDaysTouched } from '../support/utc-days.js';
import { SCHEDULES_OFF } from '../support/schedules-off.js';

/**
 * The status page in a real headless browser (Debian's chromium, driven by playwright-core):
 * `telesync schedule` after a 90-day backfill serves `/`; the page renders, shows a gap made in
 * the ledger and a day that differs after a reload, draws them in its chart on a date axis, wraps
 * no text of a table at 1,400 px, and loads nothing but its own document.
 */

const CHROMIUM = '/usr/bin/chromium';
const ACCOUNT = { authId: 'MA_E2E_PAGE', authToken: 'tok_e2e_page_secret' };
const DAY_MS = 86_400_000;
/** The width an operator's window has; no text of a table cell may wrap at it. */
const VIEWPORT = { width: 1_400, height: 900 };
/** Where the test leaves its screenshot of the page, for a person to look at. */
const SCREENSHOT = join(tmpdir(), 'telesync-status-page.png');

/** Every stream off but trunk_calls, on a cron that does not fire during the test. */
const SCHEDULE = {
  ...SCHEDULES_OFF,
  [scheduleVariable('trunk_calls')]: '0 0 1 1 *',
};

const cli = useCliFixture({
  service: () => startSimulator({ seed: 'e2e-status-page', calls: 4_000, accounts: [ACCOUNT] }),
  account: ACCOUNT,
  env: { TELESYNC_SCHEDULE_TIMEZONE: 'UTC', ...SCHEDULE },
});

const processes: TelesyncProcess[] = [];
let context: BrowserContext | undefined;
let userDataDir: string | undefined;

afterEach(() => {
  for (const running of processes.splice(0)) running.kill('SIGKILL');
});
afterAll(async () => {
  await context?.close();
  if (userDataDir !== undefined) rmSync(userDataDir, { recursive: true, force: true });
});

/** The browser must be there in CI: a missing one is a broken machine, not a reason to pass. */
const browserMissing = !existsSync(CHROMIUM);
if (browserMissing && process.env.CI === undefined)
  console.warn(
    `status-page.test.ts: ${CHROMIUM} not found, browser test skipped (apt-get install -y chromium)`,
  );

function startScheduler(port: number): Promise<TelesyncProcess> {
  return startSchedulerWith(port, {});
}

/** `telesync schedule` serving on `port`, with `env` added to the fixture's. */
async function startSchedulerWith(
  port: number,
  env: Readonly<Record<string, string>>,
): Promise<TelesyncProcess> {
  const scheduler = startTelesync(
    ['schedule'],
    cli.envWith({ TELESYNC_HTTP_PORT: String(port), ...env }),
    { timeoutMs: 120_000 },
  );
  processes.push(scheduler);
  await scheduler.waitForStdout(/^Metrics: /m, 30_000);
  return scheduler;
}

async function stopScheduler(scheduler: TelesyncProcess): Promise<void> {
  scheduler.kill('SIGTERM');
  const ended = await scheduler.exited;
  expect(ended.code, ended.stderr).toBe(0);
}

/** `YYYY-MM-DD` of the UTC day `daysAgo` days before today. */
function utcDay(daysAgo: number): string {
  return new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
}

/** What the tests read of a DOM element (the project's lib has no DOM types). */
interface ElementAttributes {
  getAttribute(name: string): string | null;
}

/** The strip's cells as the browser sees them: day → classes. */
async function stripCells(page: Page): Promise<Map<string, string[]>> {
  const cells = await page
    .locator('.strip .day')
    .evaluateAll((nodes: ElementAttributes[]) =>
      nodes.map(
        (node) => [node.getAttribute('data-day') ?? '', node.getAttribute('class') ?? ''] as const,
      ),
    );
  return new Map(cells.map(([day, classes]) => [day, classes.split(' ')]));
}

describe('the status page of telesync schedule, in a headless browser', () => {
  it.skipIf(browserMissing && process.env.CI === undefined)(
    'renders the account, its streams, 90 days charted on a date axis with a differing day marked and none at the cut-off, wraps no table cell at 1,400 px, and loads nothing external',
    async () => {
      expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(
        true,
      );
      // The strip is compared before and after a reload, each time with "today" as it is then.
      await clearOfUtcMidnight(60_000);
      const backfill = await runTelesync(['backfill', '--days', '90', '--json'], cli.env);
      expect(backfill.code, backfill.stderr).toBe(0);
      const outcome = lastJson(backfill.stdout);
      const coveredDays = new Set(
        utcDaysTouched(String(outcome.covered_from), String(outcome.covered_to)),
      );

      const port = await freePort();
      const origin = `http://127.0.0.1:${port}`;
      let scheduler = await startScheduler(port);
      expect(scheduler.stdout()).toContain(`Status:  ${origin}/`);

      userDataDir = mkdtempSync(join(tmpdir(), 'telesync-chromium-'));
      context = await chromium.launchPersistentContext(userDataDir, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: VIEWPORT,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
        ],
      });
      const page = context.pages()[0] ?? (await context.newPage());
      const requests: { url: string; type: string }[] = [];
      page.on('request', (request) =>
        requests.push({ url: request.url(), type: request.resourceType() }),
      );

      const first = await page.goto(`${origin}/`);
      expect(first?.status()).toBe(200);
      expect(first?.headers()['cache-control']).toBe('no-store');
      expect(await page.title()).toBe('telesync status');
      await expect
        .poll(() => page.locator('h2').allTextContents())
        .toContain(`Account ${ACCOUNT.authId}`);
      const streams = await page
        .locator('tr[data-stream]')
        .evaluateAll((rows: ElementAttributes[]) =>
          rows.map((row) => row.getAttribute('data-stream')),
        );
      expect(streams).toEqual([...STREAMS.map((s) => s.name)]);
      const trunkRow = page.locator('tr[data-stream="trunk_calls"]');
      expect(await trunkRow.locator('.status').first().textContent()).toBe('succeeded');
      expect(await trunkRow.textContent()).toContain('0 0 1 1 *');

      const before = await stripCells(page);
      expect(before.size).toBe(90);
      const states = [...before.values()].map((classes) => classes[1]);
      // Every day the backfill read is complete; its last day too while it is today, but once
      // that day is over (a run in the minutes before midnight) its unread last minutes leave it
      // incomplete. The strip may also have moved on to a new day since. Nothing is in alarm.
      const readDays = [...before.keys()].filter((day) => coveredDays.has(day));
      expect(readDays.length).toBeGreaterThanOrEqual(89);
      const lastRead = [...coveredDays].at(-1);
      const today = utcDay(0);
      const expectedStates = readDays.map((day) =>
        day === lastRead && day !== today ? 'incomplete' : 'complete',
      );
      expect(readDays.map((day) => before.get(day)?.[1])).toEqual(expectedStates);
      // …and no day it did not read is.
      expect(states.filter((state) => state === 'complete').length).toBe(
        expectedStates.filter((state) => state === 'complete').length,
      );
      expect(await page.locator('[role="alert"]').count()).toBe(0);

      // A gap near the horizon (a window failed), rows lost from a day in the middle, and two rows
      // of the oldest day stored from before the 90-day cut-off its count starts at (as a read
      // made when the cut-off was older leaves them): counted 120, stored 122, yet no difference.
      const nearHorizon = utcDay(88);
      const middle = utcDay(45);
      // The oldest day the backfill read: the strip's first, or its second when the backfill ran
      // in the ten minutes before midnight (the horizon's margin then reaches into the next day).
      const edgeDay = [...before.keys()].find((day) => coveredDays.has(day))!;
      const apply = () =>
        cli.database.inspect(async ({ db }) => {
          const edge = await db
            .selectFrom('sync_windows')
            .select(sql<string>`lower(time_range)`.as('cut_off'))
            .where('account_id', '=', ACCOUNT.authId)
            .where('stream', '=', 'trunk_calls')
            .where('slot_start', '=', `${edgeDay}T00:00:00Z`)
            .executeTakeFirstOrThrow();
          const dayStartMs = Date.parse(`${edgeDay}T00:00:00Z`);
          const cutOffMs = Date.parse(edge.cut_off);
          expect(cutOffMs).toBeGreaterThan(dayStartMs);
          await db
            .insertInto('trunk_calls')
            .values(
              [1, 2].map((part) => ({
                account_id: ACCOUNT.authId,
                call_uuid: `before-the-cut-off-${part}`,
                end_time: new Date(dayStartMs + ((cutOffMs - dayStartMs) * part) / 3).toISOString(),
                raw: '{}',
              })),
            )
            .execute();
          const updated = await db
            .updateTable('sync_windows')
            .set({ status: 'failed', last_error: 'made by the test' })
            .where('account_id', '=', ACCOUNT.authId)
            .where('stream', '=', 'trunk_calls')
            .where('slot_start', '=', `${nearHorizon}T00:00:00Z`)
            .executeTakeFirst();
          expect(Number(updated.numUpdatedRows)).toBe(1);
          const deleted = await db
            .deleteFrom('trunk_calls')
            .where('account_id', '=', ACCOUNT.authId)
            .where('end_time', '>=', `${middle}T00:00:00Z`)
            .where('end_time', '<', `${middle}T12:00:00Z`)
            .executeTakeFirst();
          expect(Number(deleted.numDeletedRows)).toBeGreaterThan(0);
        });
      if (cli.database.target.kind === 'postgres') {
        await apply();
      } else {
        // The embedded database is held by one process at a time.
        await stopScheduler(scheduler);
        await apply();
        scheduler = await startScheduler(port);
      }

      const again = await page.reload();
      expect(again?.status()).toBe(200);
      const after = await stripCells(page);
      expect(after.size).toBe(90);
      expect(after.get(nearHorizon)).toEqual(['day', 'incomplete', 'failed', 'alarm']);
      expect(after.get(middle)).toEqual(['day', 'complete', 'missing']);
      const changed = [...after].filter(
        ([day, classes]) => before.get(day)?.join(' ') !== classes.join(' '),
      );
      expect(changed.map(([day]) => day).sort()).toEqual([nearHorizon, middle].sort());
      expect(await page.locator('[role="alert"]').textContent()).toContain(nearHorizon);
      const dayRow = (day: string) =>
        page.locator(`table.days tr[data-day="${day}"] td`).allTextContents();
      const count = (text: string | undefined) => Number((text ?? '').replaceAll(',', ''));
      const middleRow = await dayRow(middle);
      expect(count(middleRow[3])).toBeLessThan(count(middleRow[2]));
      expect(middleRow[4]).toBe(`−${count(middleRow[2]) - count(middleRow[3])}`);
      // The edge day: the two rows stored from before its count's cut-off are not compared, so
      // the rows stored in the part counted equal the count and the day agrees.
      const edgeRow = await dayRow(edgeDay);
      expect(count(edgeRow[3])).toBe(count(edgeRow[2]));
      expect(edgeRow[4]).toBe('agrees (part of the day counted)');
      // The per-day table lists the newest day first.
      const tableDays = await page
        .locator('table.days tr[data-day]')
        .evaluateAll((rows: ElementAttributes[]) =>
          rows.map((row) => row.getAttribute('data-day')),
        );
      expect(tableDays).toEqual([...after.keys()].reverse());

      // The chart: 90 days, oldest at the left; the differing day and the alarm marked on it, the
      // differing day's stored bar lower than the service's; a date axis ending on the newest day.
      const chart = page.locator('svg.day-chart');
      expect(await chart.count()).toBe(1);
      const columns = await chart
        .locator('g.chart-day')
        .evaluateAll((nodes: ElementAttributes[]) =>
          nodes.map((node) => [node.getAttribute('data-day'), node.getAttribute('class')] as const),
        );
      expect(columns.map(([day]) => day)).toEqual([...after.keys()]);
      expect(columns.filter(([, classes]) => classes !== 'chart-day')).toEqual([
        [nearHorizon, 'chart-day alarm'],
        [middle, 'chart-day differs'],
      ]);
      const bar = (kind: string) =>
        chart.locator(`g.chart-day[data-day="${middle}"] rect.${kind}`).getAttribute('height');
      expect(Number(await bar('stored'))).toBeLessThan(Number(await bar('counted')));
      expect(await chart.locator('g.chart-day.differs path.differs-mark').count()).toBe(1);
      const ticks = await chart.locator('g.date-axis g.tick text').allTextContents();
      expect(ticks.length).toBeGreaterThanOrEqual(12);
      const newest = [...after.keys()].at(-1)!;
      const monthDay = new Date(`${newest}T00:00:00Z`).toLocaleDateString('en-US', {
        month: 'short',
        day: 'numeric',
        timeZone: 'UTC',
      });
      expect(ticks.at(-1)).toBe(monthDay);
      expect(await page.locator('.strip-axis .label').last().textContent()).toBe(monthDay);
      const box = await chart.boundingBox();
      expect(box?.width).toBeGreaterThan(1_000);
      expect(box!.x + box!.width).toBeLessThanOrEqual(VIEWPORT.width);

      // No text of a table cell wraps at 1,400 px, the per-day table open: every text node shown
      // in a cell lies on one line (a wrapped one has a box per line), and nothing runs off the
      // side.
      await page.locator('details.per-day > summary').click();
      const wrapped = await page.evaluate<string[]>(`(() => {
        const found = [];
        for (const cell of document.querySelectorAll('td')) {
          const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
            if (node.textContent.trim() === '') continue;
            // The text behind a closed <details> is laid out but not shown (it wraps once opened).
            const closed = node.parentElement.closest('details:not([open])');
            if (closed !== null && node.parentElement.closest('summary') === null) continue;
            const range = document.createRange();
            range.selectNodeContents(node);
            const lines = [...range.getClientRects()].filter((rect) => rect.width > 0).length;
            if (lines > 1) found.push(node.textContent);
          }
        }
        return found;
      })()`);
      expect(wrapped).toEqual([]);
      const cellsChecked = await page.locator('td').count();
      expect(cellsChecked).toBeGreaterThan(90 * 6);
      const overflow = await page.evaluate<number>(
        'document.documentElement.scrollWidth - window.innerWidth',
      );
      expect(overflow).toBeLessThanOrEqual(0);
      const shot = await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(shot.subarray(1, 4).toString()).toBe('PNG');

      // The same alarm on /healthz and /metrics.
      const health = await fetch(`${origin}/healthz`);
      expect(health.status).toBe(503);
      const report = (await health.json()) as HealthReport;
      expect(report.horizon?.unread).toEqual([{ account: ACCOUNT.authId, days: [nearHorizon] }]);
      expect(report.reasons.join('\n')).toContain(`telesync backfill --from ${nearHorizon}`);
      const metrics = parsePrometheusText(await (await fetch(`${origin}/metrics`)).text());
      expect(sumOf(metrics, 'telesync_horizon_unread_days', { account: ACCOUNT.authId })).toBe(1);

      // Two loads of one document, from the server itself; nothing else at all.
      expect(requests).toEqual([
        { url: `${origin}/`, type: 'document' },
        { url: `${origin}/`, type: 'document' },
      ]);
      await stopScheduler(scheduler);
    },
  );

  // Only a server has a clock of its own: the embedded database reads the process's (faked) one.
  it.skipIf(!canFakeClock || harnessTarget().kind !== 'postgres')(
    "ages what it serves on the database's clock, on a machine whose clock is a day ahead of it",
    async () => {
      const sync = await runTelesync(['sync', 'trunk_calls'], cli.env);
      expect(sync.code, sync.stderr).toBe(0);
      const port = await freePort();
      const origin = `http://127.0.0.1:${port}`;
      const scheduler = await startSchedulerWith(port, fakedClockEnv('+1d'));

      // The page's own time is the real one, and the watermark (minutes behind the sync just run)
      // lags by minutes, not by a day and minutes.
      const html = await (await fetch(`${origin}/`)).text();
      const generated = /Generated <time datetime="([^"]+)">/.exec(html);
      expect(generated, html).not.toBeNull();
      expect(Math.abs(Date.parse(generated![1]!) - Date.now())).toBeLessThan(60_000);
      const metrics = parsePrometheusText(await (await fetch(`${origin}/metrics`)).text());
      const lag = sumOf(metrics, 'telesync_watermark_lag_seconds', {
        stream: 'trunk_calls',
        account: ACCOUNT.authId,
      });
      expect(lag).toBeGreaterThan(0);
      expect(lag).toBeLessThan(3_600);
      await stopScheduler(scheduler);
    },
  );
});

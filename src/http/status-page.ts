import type { CoverageDay, CoverageState } from '../domain/coverage-days.js';
import type { RecentRun } from '../db/repositories/status-page-repository.js';
import { heldByDatabaseMs } from '../domain/load-wait.js';
import { CHART_DAY_STEP, CHART_LEFT, planDayChart, renderDayChart } from './day-chart.js';
import { escapeHtml } from './escape-html.js';
import {
  foldRepeatedSkips,
  formatAmount,
  formatCount,
  formatDuration,
  formatTime,
  splitErrorText,
  type FoldedRuns,
} from './status-page-text.js';
import { TRUNK_HISTORY_DAYS } from '../domain/service-rules.js';

export { escapeHtml } from './escape-html.js';
export { formatDuration } from './status-page-text.js';

/**
 * The status page (`GET /`): what it shows, and the HTML of it. Rendering is a pure function of
 * the view, so tests read the page without a database or a server. Plain server-rendered HTML:
 * inline CSS, no scripts, nothing fetched from anywhere (the page works on a host with no
 * internet, and tells nothing to a third party).
 */

/** One stream of one account on the page. */
export interface StreamView {
  readonly stream: string;
  /** The cron expression it runs on here, or "off". */
  readonly schedule: string;
  /** ISO text; null before the first complete window (or for streams without a watermark). */
  readonly watermark: string | null;
  /** Seconds the watermark is behind now (freshness.ts); null without a watermark. */
  readonly lagSeconds: number | null;
  /** Newest first. */
  readonly runs: readonly RecentRun[];
  /** Records of the stream in rejected_records. */
  readonly rejects: number;
  /** When a rejected record was last seen (ISO text). */
  readonly lastRejectAt: string | null;
}

/** One account on the page. */
export interface AccountView {
  readonly accountId: string;
  readonly streams: readonly StreamView[];
  /** The trunk_calls coverage strip, oldest day first. */
  readonly coverage: readonly CoverageDay[];
  /** The billed amount stored per day of the strip (`YYYY-MM-DD` → exact decimal text). */
  readonly billedByDay: ReadonlyMap<string, string>;
  /** The days of the strip the horizon alarm counts (`YYYY-MM-DD`). */
  readonly unreadNearHorizon: readonly string[];
  /** What `telesync verify` last found; absent: never verified. */
  readonly verification?: VerificationView;
}

/** The last verification of an account's days (day_verifications), as the strip marks it. */
export interface VerificationView {
  /** ISO text. */
  readonly lastVerifiedAt: string;
  /** The last finding of each verified day, by `YYYY-MM-DD`. */
  readonly days: Readonly<Record<string, 'agree' | 'differs'>>;
}

/** Everything the page shows. */
export interface StatusPageView {
  /** When the page was made (ISO text). */
  readonly generatedAt: string;
  /** The oldest instant the service still serves (ISO text). */
  readonly horizonStart: string;
  /** TELESYNC_HORIZON_ALARM_DAYS; 0: the alarm is off. */
  readonly horizonAlarmDays: number;
  readonly accounts: readonly AccountView[];
  /** The telesync version, for the footer. */
  readonly version: string;
}

/** What a strip cell's class says, for the legend and the cells' titles. */
const STATE_LABELS: Readonly<Record<CoverageState, string>> = {
  complete: 'complete',
  incomplete: 'incomplete or failed',
  unread: 'not yet read',
  beyond: 'beyond the horizon',
};

/**
 * The CSS classes of a strip cell: `day` and its state, plus `failed` (a window of the day
 * failed), `missing` (complete, but fewer rows stored than the service counted) and `alarm`
 * (counted by the horizon alarm). One class per mark, so more marks can be added beside them.
 */
export function coverageCellClasses(
  day: CoverageDay,
  alarm: boolean,
  verified?: 'agree' | 'differs',
): string[] {
  const classes = ['day', day.state];
  if (day.failed) classes.push('failed');
  if (day.missingRows) classes.push('missing');
  if (alarm) classes.push('alarm');
  // `verified`: telesync verify found the day in agreement; `verify-differs`: it did not.
  if (verified === 'agree') classes.push('verified');
  if (verified === 'differs') classes.push('verify-differs');
  return classes;
}

/** The line under the strip: when verify last ran, and the days it found differing, in red. */
function renderVerification(verification: VerificationView | undefined): string {
  if (verification === undefined)
    return '<p class="verification muted">Not verified yet (<code>telesync verify</code>).</p>';
  const results = Object.entries(verification.days);
  const differing = results
    .filter(([, result]) => result === 'differs')
    .map(([day]) => day)
    .sort();
  const agree = results.length - differing.length;
  return `<p class="verification">Verified ${time(verification.lastVerifiedAt)} (<code>telesync verify</code>): ${plural(results.length, 'day', 'days')}, ${formatCount(agree)} agree${differing.length === 0 ? '' : `; <span class="bad">differing: ${differing.map(escapeHtml).join(', ')}</span>`}</p>`;
}

/** The status page as a complete HTML document; every value from the database is escaped. */
export function renderStatusPage(view: StatusPageView): string {
  const alarms = view.accounts.filter((account) => account.unreadNearHorizon.length > 0);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>telesync status</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>telesync status</h1>
<p>Generated ${time(view.generatedAt)} · all times UTC · the service serves calls that ended after ${time(view.horizonStart)} (${TRUNK_HISTORY_DAYS}-day horizon) · reload for fresh figures</p>
</header>
${alarms.length === 0 ? '' : renderAlarm(alarms, view.horizonAlarmDays)}
${view.accounts.length === 0 ? '<p>No account is configured.</p>' : view.accounts.map((account) => renderAccount(account, view)).join('\n')}
<footer>telesync ${escapeHtml(view.version)} · <a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a></footer>
</body>
</html>
`;
}

function renderAlarm(alarms: readonly AccountView[], alarmDays: number): string {
  const items = alarms
    .map((account) => {
      const days = account.unreadNearHorizon;
      const count = days.length === 1 ? '1 day' : `${formatCount(days.length)} days`;
      return `<li><strong>${escapeHtml(account.accountId)}</strong>: ${count} (${days.map(escapeHtml).join(', ')})</li>`;
    })
    .join('');
  return `<section class="alarm-box" role="alert">
<h2>Data about to leave the horizon unread</h2>
<p>trunk_calls days within ${escapeHtml(alarmDays)} days of the ${TRUNK_HISTORY_DAYS}-day horizon are incomplete or unread; once past it the service no longer serves them. Backfill them now (<code>telesync backfill --from DAY --to DAY</code>).</p>
<ul>${items}</ul>
</section>`;
}

/**
 * The reason several streams of an account were last skipped for, when it is the same: said
 * once above the table instead of in every row.
 */
function sharedSkip(
  streams: readonly StreamView[],
): { reason: string; streams: string[] } | undefined {
  const latest = streams
    .map((stream) => ({ stream: stream.stream, run: stream.runs[0] }))
    .filter((entry) => entry.run?.status === 'skipped' && entry.run.error !== null);
  const reasons = new Set(latest.map((entry) => entry.run?.error));
  const [reason] = reasons;
  if (latest.length < 2 || reasons.size !== 1 || reason === undefined || reason === null)
    return undefined;
  return { reason, streams: latest.map((entry) => entry.stream) };
}

function renderAccount(account: AccountView, view: StatusPageView): string {
  const skip = sharedSkip(account.streams);
  const notice =
    skip === undefined
      ? ''
      : `<div class="notice"><strong>${formatCount(skip.streams.length)} streams skipped</strong> (${skip.streams.map(escapeHtml).join(', ')}): ${renderError(skip.reason)}</div>`;
  return `<section class="account" data-account="${escapeHtml(account.accountId)}">
<h2>Account ${escapeHtml(account.accountId)}</h2>
${notice}
<table class="streams">
<thead><tr><th>stream</th><th>schedule</th><th>watermark</th><th>lag</th><th>recent runs (newest first)</th><th>rejected</th></tr></thead>
<tbody>
${account.streams.map((stream) => renderStream(stream, skip?.reason)).join('\n')}
</tbody>
</table>
${renderDays(account, view.horizonAlarmDays)}
</section>`;
}

function renderStream(stream: StreamView, sharedReason: string | undefined): string {
  const runs =
    stream.runs.length === 0
      ? '<span class="muted">no run yet</span>'
      : `<ol class="runs">${foldRepeatedSkips(stream.runs)
          .map((folded) => renderRun(folded, sharedReason))
          .join('')}</ol>`;
  const rejects =
    stream.rejects === 0
      ? '0'
      : `<span class="bad">${formatCount(stream.rejects)}</span>${stream.lastRejectAt === null ? '' : `<div class="muted">last ${time(stream.lastRejectAt)}</div>`}`;
  const lag =
    stream.lagSeconds === null
      ? '<span class="muted">—</span>'
      : escapeHtml(formatDuration(stream.lagSeconds));
  return `<tr data-stream="${escapeHtml(stream.stream)}"><td>${escapeHtml(stream.stream)}</td><td><code>${escapeHtml(stream.schedule)}</code></td><td>${stream.watermark === null ? '<span class="muted">—</span>' : time(stream.watermark)}</td><td>${lag}</td><td>${runs}</td><td>${rejects}</td></tr>`;
}

/** Days named in a sentence: the newest few, and how many more. */
const NAMED_DAYS = 8;

function namedDays(days: readonly string[]): string {
  const named = days.slice(-NAMED_DAYS).reverse().map(escapeHtml).join(', ');
  const more = days.length - NAMED_DAYS;
  return more > 0 ? `${named} and ${formatCount(more)} more` : named;
}

function plural(count: number, one: string, many: string): string {
  return `${formatCount(count)} ${count === 1 ? one : many}`;
}

function renderRun(folded: FoldedRuns<RecentRun>, sharedReason: string | undefined): string {
  const run = folded.newest;
  const when = run.finishedAt ?? run.startedAt;
  const status = `<span class="status ${escapeHtml(run.status)}">${escapeHtml(run.status)}${folded.count > 1 ? ` ×${formatCount(folded.count)}` : ''}</span>`;
  const since =
    folded.count > 1
      ? ` <span class="muted">since</span> ${time(folded.oldest.finishedAt ?? folded.oldest.startedAt)}`
      : '';
  if (run.status === 'skipped') {
    const reason =
      run.error === null
        ? ''
        : run.error === sharedReason
          ? ' <span class="muted">(the reason above)</span>'
          : `<div class="reason">${renderError(run.error)}</div>`;
    return `<li>${status} ${time(when)}${since} <span class="muted">${escapeHtml(run.command)}</span>${reason}</li>`;
  }
  const durationMs = heldByDatabaseMs(run);
  const counts = [
    `${formatCount(run.recordsFetched)} fetched`,
    `${formatCount(run.recordsChanged)} changed`,
    ...(run.recordsRejected > 0 ? [`${formatCount(run.recordsRejected)} rejected`] : []),
    plural(run.requests, 'request', 'requests'),
    ...(durationMs !== undefined
      ? [
          `${(run.loadWaitMs / 1000).toFixed(1)}s of ${(durationMs / 1000).toFixed(1)}s waiting for the database`,
        ]
      : []),
  ].join(' · ');
  const error =
    run.error === null ? '' : `<div class="reason">${renderError(run.error, run.status)}</div>`;
  return `<li>${status} ${time(when)} <span class="muted">${escapeHtml(run.command)} · ${escapeHtml(counts)}</span>${error}</li>`;
}

/**
 * An error as its cause, the whole text behind a click when the cause leaves anything out; a
 * leading "skipped: " or "stopped: " is left to the status beside it.
 */
function renderError(text: string, status?: string): string {
  const { cause, details } = splitErrorText(text.replace(/^(?:skipped|stopped): /, ''));
  const className = status === 'failed' ? 'error' : 'cause';
  const shown = `<span class="${className}">${escapeHtml(cause)}</span>`;
  return details === undefined
    ? shown
    : `<details class="error-details"><summary>${shown}</summary><pre>${escapeHtml(details)}</pre></details>`;
}

function renderDays(account: AccountView, alarmDays: number): string {
  const alarm = new Set(account.unreadNearHorizon);
  const billed = (day: CoverageDay) => account.billedByDay.get(day.day) ?? '0';
  const chart = account.coverage.map((day) => ({
    day: day.day,
    serviceCount: day.serviceCount,
    storedRows: day.storedRows,
    billedAmount: billed(day),
    differs: day.differs,
    alarm: alarm.has(day.day),
  }));
  const cells = account.coverage
    .map((day) => {
      const verified = account.verification?.days[day.day];
      const classes = coverageCellClasses(day, alarm.has(day.day), verified);
      const title = `${day.day}: ${STATE_LABELS[day.state]}${day.failed ? ' (a window failed)' : ''} · service ${day.serviceCount === null ? '?' : formatCount(day.serviceCount)} · stored ${formatCount(day.storedRows)}${verified === undefined ? '' : ` · verify: ${verified}`}`;
      return `<span class="${classes.join(' ')}" data-day="${escapeHtml(day.day)}" title="${escapeHtml(title)}"></span>`;
    })
    .join('');
  // The strip's labels sit under the same days as the chart's axis.
  const labels = planDayChart(chart)
    .ticks.map(
      (tick) =>
        `<span class="label" data-day="${escapeHtml(tick.day)}" style="left:${tick.x}px">${escapeHtml(tick.label)}</span>`,
    )
    .join('');
  const rows = [...account.coverage]
    .reverse()
    .map((day) => {
      const difference = day.serviceCount === null ? 0 : day.storedRows - day.serviceCount;
      const check = !day.differs
        ? day.serviceCount === null
          ? '<span class="muted">—</span>'
          : day.countedWholeDay
            ? 'agrees'
            : `agrees <span class="muted">(part of the day counted)</span>`
        : `<span class="bad">${difference > 0 ? '+' : '−'}${formatCount(Math.abs(difference))}</span>`;
      return `<tr data-day="${escapeHtml(day.day)}"${day.differs ? ' class="differs"' : ''}><td>${escapeHtml(day.day)}</td><td>${day.failed ? 'failed' : escapeHtml(STATE_LABELS[day.state])}</td><td class="num">${day.serviceCount === null ? '—' : formatCount(day.serviceCount)}</td><td class="num">${formatCount(day.storedRows)}</td><td>${check}</td><td class="num">${escapeHtml(formatAmount(billed(day)))}</td></tr>`;
    })
    .join('\n');
  const counted = account.coverage.filter((day) => day.serviceCount !== null);
  const service = counted.reduce((sum, day) => sum + (day.serviceCount ?? 0), 0);
  const stored = counted.reduce((sum, day) => sum + day.storedRows, 0);
  const differing = account.coverage.filter((day) => day.differs);
  const verdict =
    differing.length === 0
      ? `all ${plural(counted.length, 'counted day agrees', 'counted days agree')}`
      : `<span class="bad">${plural(differing.length, 'day differs', 'days differ')}: ${namedDays(differing.map((day) => day.day))}</span>`;
  const legend = (Object.keys(STATE_LABELS) as CoverageState[])
    .map(
      (state) =>
        `<span class="key"><span class="day ${state}"></span>${STATE_LABELS[state]}</span>`,
    )
    .join('');
  return `<h3>trunk_calls, last ${account.coverage.length} UTC days <span class="muted">(newest at the right)</span></h3>
<p class="verdict">${verdict} · ${formatCount(service)} counted, ${formatCount(stored)} stored on the counted days</p>
<p class="legend"><span class="key"><span class="swatch counted"></span>service count</span><span class="key"><span class="swatch stored"></span>rows stored</span><span class="key"><span class="swatch differs"></span>differs</span><span class="key"><span class="swatch billed"></span>billed amount</span>${alarmDays > 0 ? `<span class="key"><span class="swatch alarm"></span>horizon alarm (${escapeHtml(alarmDays)} days)</span>` : ''}</p>
<div class="chart">${renderDayChart(chart, `calls and billed amount per day, account ${account.accountId}`)}</div>
<div class="strip" style="padding-left:${CHART_LEFT + 1}px" aria-label="coverage by day, oldest first">${cells}</div>
<div class="strip-axis">${labels}</div>
${renderVerification(account.verification)}
<p class="legend">${legend}<span class="key"><span class="day complete missing"></span>rows missing</span>${alarmDays > 0 ? `<span class="key"><span class="day unread alarm"></span>horizon alarm</span>` : ''}</p>
<details class="per-day">
<summary>Per day, newest first: the service's count beside the rows stored, and the billed amount</summary>
<table class="days">
<thead><tr><th>day (UTC)</th><th>ledger</th><th>service count</th><th>rows stored</th><th>check</th><th>billed amount</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</details>`;
}

/** An instant to the second; the full text stays in the `datetime` attribute. */
function time(iso: string): string {
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(formatTime(iso))}</time>`;
}

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#fff}
h1{font-size:1.4rem;margin:0 0 .2rem}h2{font-size:1.15rem;margin:1.8rem 0 .5rem}h3{font-size:1rem;margin:1.2rem 0 .3rem}
header p,.muted{color:#5b6475}
code,time{white-space:nowrap}
table{border-collapse:collapse;margin:.3rem 0}th,td{border-bottom:1px solid #e3e6ec;padding:.3rem .6rem;text-align:left;vertical-align:top;white-space:nowrap}
th{font-weight:600;background:#f5f6f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
.runs{margin:0;padding-left:1.1rem}.runs li+li{margin-top:.15rem}.status{font-weight:600}
.status.succeeded{color:#1a7f37}.status.failed{color:#c62828}.status.running,.status.stopped,.status.skipped{color:#9a6700}
.bad,.error{color:#c62828}.cause{color:#6e4a00}
.reason{margin:.1rem 0 .2rem}.error-details summary{cursor:pointer}.error-details summary::marker{color:#5b6475}
.error-details pre{white-space:pre-wrap;word-break:break-all;max-width:60rem;margin:.3rem 0;padding:.4rem .6rem;background:#f5f6f8;border-radius:4px;font-size:12px}
.notice{border-left:4px solid #d29922;background:#fff8e6;padding:.4rem .8rem;margin:.4rem 0}
.verdict{margin:.2rem 0}
.chart{overflow-x:auto}
.day-chart{display:block;font:11px system-ui,sans-serif}
.day-chart .panel-label{fill:#5b6475;font-size:11px;stroke:#fff;stroke-width:3px;paint-order:stroke}.day-chart .scale{fill:#5b6475;font-variant-numeric:tabular-nums}
.day-chart .grid{stroke:#e3e6ec}.day-chart .axis{stroke:#8c95a6}.day-chart .tick line{stroke:#8c95a6}.day-chart .tick text{fill:#3d4554}
.chart-day .column{fill:transparent}.chart-day:hover .column{fill:#eef2f8}
.chart-day.alarm .column{fill:#ffe4b3}
.chart-day .counted{fill:#9cc3f5}.chart-day .stored{fill:#1f5fbf}.chart-day .billed{fill:#8a63d2}
.chart-day.differs .column{fill:#fff0f0}.chart-day.differs .stored{fill:#cf222e}.differs-mark{fill:#cf222e}
.strip{display:flex;gap:2px;flex-wrap:nowrap;padding:.5rem 0 0}
.day{display:inline-block;width:9px;height:22px;border-radius:2px;background:#d0d4dc;flex:none}
.strip .day{width:${CHART_DAY_STEP - 2}px}
.day.complete{background:#2da44e}.day.incomplete{background:#d29922}.day.failed{background:#cf222e}
.day.unread{background:#d0d4dc}.day.beyond{background:repeating-linear-gradient(45deg,#eee,#eee 2px,#bbb 2px,#bbb 4px)}
.day.missing{box-shadow:inset 0 -6px 0 #cf222e}.day.verified{box-shadow:inset 0 3px 0 #0b5394}.day.verify-differs{background:#cf222e}.day.alarm{outline:2px solid #cf222e;outline-offset:1px}
.strip-axis{position:relative;height:1.2rem;font-size:11px;color:#3d4554}
.strip-axis .label{position:absolute;top:.15rem;transform:translateX(-50%);white-space:nowrap}
.legend{color:#3d4554}.legend .key{margin-right:1rem;white-space:nowrap}.legend .day{height:10px;margin-right:.3rem;vertical-align:middle}
.swatch{display:inline-block;width:10px;height:10px;margin-right:.3rem;vertical-align:middle;border-radius:2px}
.swatch.counted{background:#9cc3f5}.swatch.stored{background:#1f5fbf}.swatch.differs{background:#cf222e}.swatch.billed{background:#8a63d2}.swatch.alarm{background:#ffe4b3;outline:1px solid #e9b35f}
.alarm-box{border:2px solid #cf222e;background:#fff5f5;padding:.2rem 1rem;border-radius:4px}
.per-day summary{cursor:pointer;margin:.4rem 0}
tr.differs td{background:#fff5f5}
footer{margin-top:2rem;color:#5b6475}
`;

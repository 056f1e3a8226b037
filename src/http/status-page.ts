import type { CoverageDay, CoverageState } from '../domain/coverage-days.js';
import type { RecentRun } from '../db/repositories/status-page-repository.js';
import { heldByDatabaseMs } from '../domain/load-wait.js';

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

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
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
 * (counted by the horizon alarm).
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
  return `<p class="verification">Verified ${time(verification.lastVerifiedAt)} (<code>telesync verify</code>): ${results.length} day(s), ${agree} agree${differing.length === 0 ? '' : `; <span class="bad">differing: ${differing.map(escapeHtml).join(', ')}</span>`}</p>`;
}

/** A duration in the largest two units that matter: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
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
<p>Generated ${time(view.generatedAt)} · the service serves calls that ended after ${time(view.horizonStart)} (90-day horizon) · reload for fresh figures</p>
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
    .map(
      (account) =>
        `<li><strong>${escapeHtml(account.accountId)}</strong>: ${account.unreadNearHorizon.length} day(s) (${account.unreadNearHorizon.map(escapeHtml).join(', ')})</li>`,
    )
    .join('');
  return `<section class="alarm-box" role="alert">
<h2>Data about to leave the horizon unread</h2>
<p>trunk_calls days within ${escapeHtml(alarmDays)} days of the 90-day horizon are incomplete or unread; once past it the service no longer serves them. Backfill them now (<code>telesync backfill --from DAY --to DAY</code>).</p>
<ul>${items}</ul>
</section>`;
}

function renderAccount(account: AccountView, view: StatusPageView): string {
  return `<section class="account" data-account="${escapeHtml(account.accountId)}">
<h2>Account ${escapeHtml(account.accountId)}</h2>
<table class="streams">
<thead><tr><th>stream</th><th>schedule</th><th>watermark</th><th>lag</th><th>recent runs (newest first)</th><th>rejected</th></tr></thead>
<tbody>
${account.streams.map(renderStream).join('\n')}
</tbody>
</table>
${renderCoverage(account, view.horizonAlarmDays)}
</section>`;
}

function renderStream(stream: StreamView): string {
  const runs =
    stream.runs.length === 0
      ? '<span class="muted">no run yet</span>'
      : `<ol class="runs">${stream.runs.map(renderRun).join('')}</ol>`;
  const rejects =
    stream.rejects === 0
      ? '0'
      : `<span class="bad">${escapeHtml(stream.rejects)}</span>${stream.lastRejectAt === null ? '' : ` <span class="muted">last ${time(stream.lastRejectAt)}</span>`}`;
  return `<tr data-stream="${escapeHtml(stream.stream)}"><td>${escapeHtml(stream.stream)}</td><td><code>${escapeHtml(stream.schedule)}</code></td><td>${stream.watermark === null ? '<span class="muted">—</span>' : time(stream.watermark)}</td><td>${stream.lagSeconds === null ? '<span class="muted">—</span>' : escapeHtml(formatDuration(stream.lagSeconds))}</td><td>${runs}</td><td>${rejects}</td></tr>`;
}

function renderRun(run: RecentRun): string {
  const when = run.finishedAt ?? run.startedAt;
  const durationMs = heldByDatabaseMs(run);
  const waited =
    durationMs !== undefined
      ? `, ${(run.loadWaitMs / 1000).toFixed(1)}s of ${(durationMs / 1000).toFixed(1)}s waiting for the database`
      : '';
  const counts = `${run.recordsFetched} fetched, ${run.recordsChanged} changed, ${run.recordsRejected} rejected, ${run.requests} requests${waited}`;
  const error = run.error === null ? '' : ` <span class="error">${escapeHtml(run.error)}</span>`;
  return `<li><span class="status ${escapeHtml(run.status)}">${escapeHtml(run.status)}</span> ${time(when)} <span class="muted">${escapeHtml(run.command)} · ${escapeHtml(counts)}</span>${error}</li>`;
}

function renderCoverage(account: AccountView, alarmDays: number): string {
  const alarm = new Set(account.unreadNearHorizon);
  const cells = account.coverage
    .map((day) => {
      const verified = account.verification?.days[day.day];
      const classes = coverageCellClasses(day, alarm.has(day.day), verified);
      const title = `${day.day}: ${STATE_LABELS[day.state]}${day.failed ? ' (a window failed)' : ''} · service ${day.serviceCount ?? '?'} · stored ${day.storedRows}${verified === undefined ? '' : ` · verify: ${verified}`}`;
      return `<span class="${classes.join(' ')}" data-day="${escapeHtml(day.day)}" title="${escapeHtml(title)}"></span>`;
    })
    .join('');
  const rows = account.coverage
    .map((day) => {
      const differs = day.serviceCount !== null && day.serviceCount !== day.storedRows;
      return `<tr data-day="${escapeHtml(day.day)}"${differs ? ' class="differs"' : ''}><td>${escapeHtml(day.day)}</td><td>${escapeHtml(STATE_LABELS[day.state])}${day.failed ? ', failed' : ''}</td><td>${day.serviceCount ?? '—'}</td><td>${day.storedRows}</td></tr>`;
    })
    .join('\n');
  const counted = account.coverage.filter((day) => day.serviceCount !== null);
  const service = counted.reduce((sum, day) => sum + (day.serviceCount ?? 0), 0);
  const stored = counted.reduce((sum, day) => sum + day.storedRows, 0);
  const differing = counted.filter((day) => day.serviceCount !== day.storedRows).length;
  const legend = (Object.keys(STATE_LABELS) as CoverageState[])
    .map(
      (state) =>
        `<span class="key"><span class="day ${state}"></span>${STATE_LABELS[state]}</span>`,
    )
    .join('');
  return `<h3>trunk_calls coverage, last ${account.coverage.length} UTC days (sync_windows)</h3>
<div class="strip" aria-label="coverage by day, oldest first">${cells}</div>
${renderVerification(account.verification)}
<p class="legend">${legend}<span class="key"><span class="day complete missing"></span>rows missing</span>${alarmDays > 0 ? `<span class="key"><span class="day unread alarm"></span>horizon alarm (${escapeHtml(alarmDays)} days)</span>` : ''}</p>
<details>
<summary>Per day: the service's count beside the rows stored (${differing === 0 ? 'all counted days agree' : `${differing} counted day(s) differ`}; ${service} counted, ${stored} stored on those days)</summary>
<table class="days">
<thead><tr><th>day (UTC)</th><th>ledger</th><th>service count</th><th>rows stored</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</details>`;
}

function time(iso: string): string {
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(iso)}</time>`;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#fff}
h1{font-size:1.4rem;margin:0 0 .2rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}h3{font-size:1rem;margin:1rem 0 .4rem}
header p,.muted{color:#5b6475}
table{border-collapse:collapse;margin:.3rem 0}th,td{border-bottom:1px solid #e3e6ec;padding:.25rem .6rem;text-align:left;vertical-align:top}
th{font-weight:600;background:#f5f6f8}
.runs{margin:0;padding-left:1.1rem}.status{font-weight:600}.status.succeeded{color:#1a7f37}.status.failed{color:#c62828}
.status.running,.status.stopped,.status.skipped{color:#9a6700}.bad,.error{color:#c62828}
.strip{display:flex;gap:2px;flex-wrap:nowrap;overflow-x:auto;padding:.2rem 0}
.day{display:inline-block;width:9px;height:22px;border-radius:2px;background:#d0d4dc;flex:none}
.day.complete{background:#2da44e}.day.incomplete{background:#d29922}.day.failed{background:#cf222e}
.day.unread{background:#d0d4dc}.day.beyond{background:repeating-linear-gradient(45deg,#eee,#eee 2px,#bbb 2px,#bbb 4px)}
.day.missing{box-shadow:inset 0 -6px 0 #cf222e}.day.verified{box-shadow:inset 0 3px 0 #0b5394}.day.verify-differs{background:#cf222e}.day.alarm{outline:2px solid #cf222e;outline-offset:1px}
.legend .key{margin-right:1rem;white-space:nowrap}.legend .day{height:10px;margin-right:.3rem;vertical-align:middle}
.alarm-box{border:2px solid #cf222e;background:#fff5f5;padding:.2rem 1rem;border-radius:4px}
tr.differs td{background:#fff5f5}
footer{margin-top:2rem;color:#5b6475}
`;

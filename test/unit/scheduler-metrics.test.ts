import { describe, expect, it } from 'vitest';
import { SchedulerMetrics, watermarkLags } from '../../src/scheduler/metrics.js';
import { RunStats } from '../../src/sync/run-context.js';
import type { StreamName } from '../../src/domain/streams.js';
import type { SyncResult } from '../../src/sync/run-stream.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');

function result(
  overrides: {
    stream?: StreamName;
    accountId?: string;
    status?: SyncResult['status'];
    fetched?: number;
    upserted?: number;
    changed?: number;
    rejected?: number;
    requests?: number;
    retries?: number;
    loadWaitMs?: number;
    outcomes?: Record<string, number>;
    durationMs?: number;
  } = {},
): SyncResult {
  const stats = new RunStats();
  stats.recordsFetched = overrides.fetched ?? 0;
  stats.recordsUpserted = overrides.upserted ?? 0;
  stats.recordsChanged = overrides.changed ?? 0;
  stats.recordsRejected = overrides.rejected ?? 0;
  stats.loadWaitMs = overrides.loadWaitMs ?? 0;
  return {
    accountId: overrides.accountId ?? 'MA_ONE',
    stream: overrides.stream ?? 'trunk_calls',
    status: overrides.status ?? 'succeeded',
    runId: 1,
    stats,
    requests: {
      requests: overrides.requests ?? 0,
      retries: overrides.retries ?? 0,
      bytesReceived: 0,
      waitMs: 0,
      outcomes: overrides.outcomes ?? {},
    },
    durationMs: overrides.durationMs ?? 0,
    error: undefined,
  };
}

function metrics(): SchedulerMetrics {
  return new SchedulerMetrics({ now: () => NOW, processMetrics: false });
}

/** The samples of one metric as `labels → value`, labels sorted by name. */
async function samples(subject: SchedulerMetrics, name: string): Promise<Record<string, number>> {
  const metric = subject.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return Object.fromEntries(
    values.map((sample) => {
      // Histograms name each sample (_bucket, _sum, _count); counters and gauges do not.
      const { metricName } = sample as { metricName?: string };
      const labels = Object.entries(sample.labels)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, value]) => `${key}=${String(value)}`);
      return [[...(metricName ? [metricName] : []), ...labels].join(','), sample.value];
    }),
  );
}

describe('SchedulerMetrics.recordRun', () => {
  it('counts a run, its records, requests, retries and answers with the right labels', async () => {
    const subject = metrics();
    subject.recordRun(
      result({
        fetched: 120,
        upserted: 118,
        changed: 40,
        rejected: 2,
        requests: 9,
        retries: 2,
        loadWaitMs: 1_500,
        outcomes: { '200': 7, '503': 1, timeout: 1 },
        durationMs: 4_500,
      }),
      NOW,
    );
    subject.recordRun(
      result({
        fetched: 5,
        upserted: 5,
        requests: 1,
        loadWaitMs: 250,
        outcomes: { '200': 1 },
        durationMs: 300,
      }),
      NOW + 60_000,
    );

    expect(await samples(subject, 'telesync_runs_total')).toEqual({
      'account=MA_ONE,status=succeeded,stream=trunk_calls': 2,
    });
    expect(await samples(subject, 'telesync_records_total')).toEqual({
      'account=MA_ONE,kind=fetched,stream=trunk_calls': 125,
      'account=MA_ONE,kind=upserted,stream=trunk_calls': 123,
      'account=MA_ONE,kind=changed,stream=trunk_calls': 40,
      'account=MA_ONE,kind=rejected,stream=trunk_calls': 2,
    });
    expect(await samples(subject, 'telesync_requests_total')).toEqual({
      'account=MA_ONE,stream=trunk_calls': 10,
    });
    expect(await samples(subject, 'telesync_retries_total')).toEqual({
      'account=MA_ONE,stream=trunk_calls': 2,
    });
    expect(await samples(subject, 'telesync_load_wait_seconds_total')).toEqual({
      'account=MA_ONE,stream=trunk_calls': 1.75,
    });
    expect(await samples(subject, 'telesync_api_responses_total')).toEqual({
      'account=MA_ONE,status=200': 8,
      'account=MA_ONE,status=503': 1,
      'account=MA_ONE,status=timeout': 1,
    });
    expect(await samples(subject, 'telesync_last_run_timestamp_seconds')).toEqual({
      'account=MA_ONE,status=succeeded,stream=trunk_calls': NOW / 1000 + 60,
    });
    const duration = await samples(subject, 'telesync_run_duration_seconds');
    expect(duration['telesync_run_duration_seconds_count,stream=trunk_calls']).toBe(2);
    expect(duration['telesync_run_duration_seconds_sum,stream=trunk_calls']).toBeCloseTo(4.8);
    expect(duration['telesync_run_duration_seconds_bucket,le=0.5,stream=trunk_calls']).toBe(1);
    expect(duration['telesync_run_duration_seconds_bucket,le=5,stream=trunk_calls']).toBe(2);
  });

  it('keeps streams, accounts and statuses apart', async () => {
    const subject = metrics();
    subject.recordRun(result({ stream: 'endpoints', status: 'failed', requests: 3 }), NOW);
    subject.recordRun(result({ stream: 'endpoints', accountId: 'MA_TWO' }), NOW + 1000);
    expect(await samples(subject, 'telesync_runs_total')).toEqual({
      'account=MA_ONE,status=failed,stream=endpoints': 1,
      'account=MA_TWO,status=succeeded,stream=endpoints': 1,
    });
    expect(await samples(subject, 'telesync_last_run_timestamp_seconds')).toEqual({
      'account=MA_ONE,status=failed,stream=endpoints': NOW / 1000,
      'account=MA_TWO,status=succeeded,stream=endpoints': NOW / 1000 + 1,
    });
  });

  it('counts a skipped run but neither its duration nor zero records', async () => {
    const subject = metrics();
    subject.recordRun(result({ status: 'skipped', durationMs: 12 }), NOW);
    expect(await samples(subject, 'telesync_runs_total')).toEqual({
      'account=MA_ONE,status=skipped,stream=trunk_calls': 1,
    });
    expect(await samples(subject, 'telesync_records_total')).toEqual({});
    const duration = await samples(subject, 'telesync_run_duration_seconds');
    expect(duration['telesync_run_duration_seconds_count,stream=trunk_calls']).toBeUndefined();
  });
});

describe('SchedulerMetrics', () => {
  it('starts every scheduled series at zero', async () => {
    const subject = metrics();
    subject.initialize(['trunk_calls'], ['MA_ONE']);
    expect(await samples(subject, 'telesync_runs_total')).toEqual({
      'account=MA_ONE,status=succeeded,stream=trunk_calls': 0,
      'account=MA_ONE,status=failed,stream=trunk_calls': 0,
      'account=MA_ONE,status=skipped,stream=trunk_calls': 0,
      'account=MA_ONE,status=stopped,stream=trunk_calls': 0,
    });
    expect(await samples(subject, 'telesync_missed_ticks_total')).toEqual({
      'reason=overlap,stream=trunk_calls': 0,
      'reason=missed,stream=trunk_calls': 0,
    });
  });

  it('counts missed ticks by stream and reason, and runs in progress', async () => {
    const subject = metrics();
    subject.recordMissedTick('trunk_calls', 'overlap');
    subject.recordMissedTick('trunk_calls', 'overlap');
    subject.recordMissedTick('messages', 'missed');
    subject.runStarted('trunk_calls');
    expect(await samples(subject, 'telesync_missed_ticks_total')).toEqual({
      'reason=overlap,stream=trunk_calls': 2,
      'reason=missed,stream=messages': 1,
    });
    expect(await samples(subject, 'telesync_runs_in_progress')).toEqual({
      'stream=trunk_calls': 1,
    });
    subject.runEnded('trunk_calls');
    expect(await samples(subject, 'telesync_runs_in_progress')).toEqual({
      'stream=trunk_calls': 0,
    });
  });

  it('reads the watermarks on each scrape and shows their lag in seconds', async () => {
    let rows = [
      { accountId: 'MA_ONE', stream: 'trunk_calls', watermark: '2025-06-01T11:55:00.000000Z' },
      { accountId: 'MA_TWO', stream: 'trunk_calls', watermark: '2025-06-01T10:00:00.500000Z' },
    ];
    const subject = new SchedulerMetrics({
      now: () => NOW,
      processMetrics: false,
      readWatermarks: () => Promise.resolve(rows),
    });
    const { body, contentType } = await subject.render();
    expect(contentType).toMatch(/^text\/plain/);
    expect(body).toContain(
      'telesync_watermark_lag_seconds{stream="trunk_calls",account="MA_ONE"} 300\n',
    );
    expect(body).toContain(
      'telesync_watermark_lag_seconds{stream="trunk_calls",account="MA_TWO"} 7199.5\n',
    );

    rows = [rows[0]!];
    const again = await subject.render();
    expect(again.body).not.toContain('account="MA_TWO"');
  });

  it('still answers a scrape when the watermarks cannot be read, and says so', async () => {
    const errors: string[] = [];
    const subject = new SchedulerMetrics({
      now: () => NOW,
      processMetrics: false,
      readWatermarks: () => Promise.reject(new Error('connection refused')),
      onCollectError: (error) => errors.push(error.message),
    });
    subject.recordRun(result(), NOW);
    const { body } = await subject.render();
    expect(body).toContain(
      'telesync_runs_total{stream="trunk_calls",account="MA_ONE",status="succeeded"} 1',
    );
    expect(body).not.toMatch(/^telesync_watermark_lag_seconds\{/m);
    expect(errors).toEqual(['connection refused']);
  });

  it('adds the process metrics to its own registry only', async () => {
    const subject = new SchedulerMetrics({ now: () => NOW });
    const { body } = await subject.render();
    expect(body).toContain('process_cpu_user_seconds_total');
    expect(body).toContain('nodejs_eventloop_lag_seconds');
    const other = new SchedulerMetrics({ now: () => NOW, processMetrics: false });
    expect((await other.render()).body).not.toContain('process_cpu_user_seconds_total');
  });
});

describe('watermarkLags', () => {
  it('is now minus the watermark, in seconds, microseconds kept', () => {
    expect(
      watermarkLags(
        [{ accountId: 'MA', stream: 'trunk_calls', watermark: '2025-06-01T11:59:59.999999Z' }],
        NOW,
      ),
    ).toEqual([{ accountId: 'MA', stream: 'trunk_calls', seconds: 0.000001 }]);
  });
});

describe('the horizon gauge', () => {
  it('shows per account how many days are about to leave the horizon unread, read on each scrape', async () => {
    let unread = [
      { accountId: 'MA_ONE', days: ['2025-03-05', '2025-03-07'] },
      { accountId: 'MA_TWO', days: [] },
    ];
    const subject = new SchedulerMetrics({
      now: () => NOW,
      processMetrics: false,
      readHorizonUnread: () => Promise.resolve(unread),
    });
    expect(await samples(subject, 'telesync_horizon_unread_days')).toEqual({
      'account=MA_ONE': 2,
      'account=MA_TWO': 0,
    });
    unread = [{ accountId: 'MA_ONE', days: [] }];
    expect(await samples(subject, 'telesync_horizon_unread_days')).toEqual({
      'account=MA_ONE': 0,
    });
  });

  it('is left out of a scrape when the ledger cannot be read, and says so', async () => {
    const errors: string[] = [];
    const subject = new SchedulerMetrics({
      now: () => NOW,
      processMetrics: false,
      readHorizonUnread: () => Promise.reject(new Error('statement timeout')),
      onCollectError: (error) => errors.push(error.message),
    });
    const { body } = await subject.render();
    expect(body).not.toMatch(/^telesync_horizon_unread_days\{/m);
    expect(errors).toEqual(['statement timeout']);
  });
});

describe('the verify gauges', () => {
  it('count the days of each finding per account, and the time of the last verification', async () => {
    const subject = new SchedulerMetrics({
      now: () => NOW,
      processMetrics: false,
      readVerifications: () =>
        Promise.resolve([
          {
            accountId: 'MA_ONE',
            lastVerifiedAt: '2026-11-28T06:00:12.5Z',
            agree: 89,
            differs: 2,
            differingDays: ['2026-11-01', '2026-11-20'],
          },
          { accountId: 'MA_TWO', lastVerifiedAt: null, agree: 0, differs: 0, differingDays: [] },
        ]),
    });
    expect(await samples(subject, 'telesync_verify_days')).toEqual({
      'account=MA_ONE,result=agree': 89,
      'account=MA_ONE,result=differs': 2,
      'account=MA_TWO,result=agree': 0,
      'account=MA_TWO,result=differs': 0,
    });
    expect(await samples(subject, 'telesync_verify_last_timestamp_seconds')).toEqual({
      'account=MA_ONE': Date.parse('2026-11-28T06:00:12.5Z') / 1000,
    });
  });
});

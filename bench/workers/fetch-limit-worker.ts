import { TelephonyClient } from '../../src/api/telephony-client.js';
import { HttpTransport } from '../../src/api/transport.js';
import { PAGE_LIMIT_MAX } from '../../src/domain/service-rules.js';
import { CONFIG_DEFAULTS } from '../../src/config/load-config.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../../src/util/micros.js';
import { lastDays, planBackfill, plannerSettings } from '../../src/sync/window-planner.js';
import { readWorkerInput, runWorker, writeWorkerResult } from '../support/worker-protocol.js';

/**
 * The fetch limit: every page of the last `days` days through telesync's own transport and client
 * (same limiter, concurrency, retries, body parser), with the same windows a backfill plans, and
 * nothing done with the records. Windows are not read one after another: every page of every
 * window is requested as soon as its window's first page has given the total, `pageConcurrency`
 * at a time, so the transport is never idle. What this achieves is the most the HTTP side (the
 * client, the simulator, the sockets) allows with these settings.
 */

export interface FetchLimitInput {
  baseUrl: string;
  authId: string;
  authToken: string;
  maxRps: number;
  concurrency: number;
  pageConcurrency: number;
  timeoutMs: number;
  maxRetries: number;
  days: number;
}

export interface FetchLimitResult {
  coveredFrom: string;
  coveredTo: string;
  windows: number;
  requests: number;
  retries: number;
  records: number;
  distinctCalls: number;
  bytesReceived: number;
  /** From the first request to the last answer. */
  elapsedMs: number;
}

interface PageTask {
  readonly window: { start: number; end: number };
  readonly offset: number;
}

runWorker(async () => {
  const input = readWorkerInput<FetchLimitInput>();
  const transport = new HttpTransport({
    baseUrl: input.baseUrl,
    authId: input.authId,
    authToken: input.authToken,
    maxRps: input.maxRps,
    concurrency: input.concurrency,
    timeoutMs: input.timeoutMs,
    maxRetries: input.maxRetries,
  });
  const client = new TelephonyClient(transport, input.authId);
  const now = epochMicrosFromMillis(Date.now());
  const plan = planBackfill(now, lastDays(now, input.days), plannerSettings(CONFIG_DEFAULTS));
  if (plan.covered === undefined) throw new Error('nothing to fetch');

  const tasks: PageTask[] = plan.windows.map((window) => ({ window, offset: 0 }));
  const seen = new Set<string>();
  let records = 0;
  let next = 0;
  let inFlight = 0;
  const started = performance.now();

  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const pump = (): void => {
      while (!failed && inFlight < input.pageConcurrency && next < tasks.length) {
        const task = tasks[next++]!;
        inFlight++;
        client
          .listTrunkCalls({
            end_time: { gte: task.window.start, lt: task.window.end },
            limit: PAGE_LIMIT_MAX,
            offset: task.offset,
          })
          .then((page) => {
            inFlight--;
            records += page.records.length;
            for (const record of page.records) {
              const uuid = (record.value as { call_uuid?: unknown } | undefined)?.call_uuid;
              if (typeof uuid === 'string') seen.add(uuid);
            }
            if (task.offset === 0) {
              for (
                let offset = PAGE_LIMIT_MAX;
                offset < page.meta.total_count;
                offset += PAGE_LIMIT_MAX
              ) {
                tasks.push({ window: task.window, offset });
              }
            }
            if (inFlight === 0 && next >= tasks.length) resolve();
            else pump();
          })
          .catch((error: unknown) => {
            failed = true;
            reject(error instanceof Error ? error : new Error(String(error)));
          });
      }
    };
    pump();
  });
  const elapsedMs = performance.now() - started;
  await transport.close();

  const result: FetchLimitResult = {
    coveredFrom: formatIsoMicros(plan.covered.start),
    coveredTo: formatIsoMicros(plan.covered.end),
    windows: plan.windows.length,
    requests: transport.meter.requests,
    retries: transport.meter.retries,
    records,
    distinctCalls: seen.size,
    bytesReceived: transport.meter.bytesReceived,
    elapsedMs,
  };
  writeWorkerResult(result);
});

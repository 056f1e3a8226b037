import { afterEach, describe, expect, it } from 'vitest';
import { signStreamCallbackV3 } from '../../src/api/stream-callback-signature.js';
import { scheduleVariable } from '../../src/config/load-config.js';
import { STREAMS } from '../../src/sync/stream-registry.js';
import { epochMicrosFromMillis, formatIsoMicros } from '../../src/util/micros.js';
import { parsePrometheusText, sumOf } from '../support/prometheus-text.js';
import { startTelesync, type TelesyncProcess } from '../support/run-telesync.js';
import { freePort } from '../support/telesync-process.js';
import { useCliFixture } from '../support/cli-fixture.js';

/** `telesync schedule` serves the stream callback route only when TELESYNC_PUBLIC_URL is set. */

const ACCOUNT = { authId: 'MA_SCHED_CALLBACKS', authToken: 'tok_sched_callbacks_secret' };
const PUBLIC_URL = 'https://telesync.example.com';

// A migrated database and the account; no service: no tick comes during the test.
const cli = useCliFixture({ account: ACCOUNT });
const processes: TelesyncProcess[] = [];

afterEach(() => {
  for (const running of processes.splice(0)) running.kill('SIGKILL');
});

async function startScheduler(port: number, extra: Record<string, string>) {
  const scheduler = startTelesync(
    ['schedule'],
    {
      ...cli.envWith({
        // No tick comes during the test: the service is never called.
        TELESYNC_BASE_URL: 'http://127.0.0.1:9',
      }),
      TELESYNC_HTTP_PORT: String(port),
      ...Object.fromEntries(
        STREAMS.map((s) => s.name).map((stream) => [scheduleVariable(stream), 'off']),
      ),
      TELESYNC_SCHEDULE_ENDPOINTS: '0 0 1 1 *',
      ...extra,
    },
    { timeoutMs: 60_000 },
  );
  processes.push(scheduler);
  await scheduler.waitForStdout(/^Stream callbacks/m, 30_000);
  return scheduler;
}

describe('schedule and the stream callback route', () => {
  it('without TELESYNC_PUBLIC_URL: says once that callbacks are off and why, and serves no route', async () => {
    const port = await freePort();
    const scheduler = await startScheduler(port, {});
    const off = scheduler.stdout().match(/^Stream callbacks.*$/gm);
    expect(off).toEqual([
      "Stream callbacks off: TELESYNC_PUBLIC_URL is not set, so the service cannot be told where to send them; set it to the address the service reaches this process's HTTP server at (e.g. https://telesync.example.com).",
    ]);
    const answer = await fetch(`http://127.0.0.1:${port}/callbacks/stream`, { method: 'POST' });
    expect(answer.status).toBe(404);
    const samples = parsePrometheusText(
      await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
    );
    expect(samples.filter((s) => s.name === 'telesync_stream_callbacks_total')).toEqual([]);
  });

  it('with TELESYNC_PUBLIC_URL: stores a signed callback, refuses a forged one, counts both', async () => {
    const port = await freePort();
    const scheduler = await startScheduler(port, { TELESYNC_PUBLIC_URL: PUBLIC_URL });
    expect(scheduler.stdout()).toContain(
      `Stream callbacks: ${PUBLIC_URL}/callbacks/stream (served at http://127.0.0.1:${port}/callbacks/stream)`,
    );
    const fields = {
      Event: 'StartStream',
      StreamID: 'sched-stream-1',
      CallUUID: 'sched-call-1',
      Timestamp: formatIsoMicros(epochMicrosFromMillis(Date.now())),
    };
    const send = (token: string, nonce: string) =>
      fetch(`http://127.0.0.1:${port}/callbacks/stream`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'X-Plivo-Signature-V3-Nonce': nonce,
          'X-Plivo-Signature-V3': signStreamCallbackV3({
            method: 'POST',
            url: `${PUBLIC_URL}/callbacks/stream`,
            params: fields,
            nonce,
            authToken: token,
          }),
        },
        body: new URLSearchParams(fields).toString(),
      });
    expect((await send(ACCOUNT.authToken, 'nonce-good')).status).toBe(200);
    expect((await send('somebody-elses-token', 'nonce-forged')).status).toBe(403);

    const samples = parsePrometheusText(
      await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
    );
    const counted = (outcome: string, reason: string) =>
      sumOf(samples, 'telesync_stream_callbacks_total', { outcome, reason });
    expect([counted('accepted', 'stored'), counted('refused', 'forged')]).toEqual([1, 1]);
    expect(scheduler.stderr()).not.toContain(ACCOUNT.authToken);

    // The embedded database admits one process at a time: schedule lets it go before it is read.
    scheduler.kill('SIGTERM');
    expect((await scheduler.exited).code).toBe(0);
    const stored = await cli.database.inspect(({ db }) =>
      db.selectFrom('stream_events').select(['account_id', 'stream_id', 'event']).execute(),
    );
    expect(stored).toEqual([
      { account_id: ACCOUNT.authId, stream_id: 'sched-stream-1', event: 'StartStream' },
    ]);
  });
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useCliFixture } from '../support/cli-fixture.js';
import { runTelesync, startTelesync, type TelesyncProcess } from '../support/run-telesync.js';
import { freePort } from '../support/telesync-process.js';

/**
 * `telesync stream start` sends its POST once. The command talks to `telesync simulate` (a process
 * of its own) through a proxy that forwards every request but answers a stream start with 502:
 * after forwarding it (the service acted, the answer was lost), or without forwarding it (the
 * service never saw it). The streams go to a closed port, so each fails at once and the simulator
 * would accept another start to the same URL: a retried POST would start a second stream.
 */

const ACCOUNT = { authId: 'MAE2ESTREAMONCE00001', authToken: 'tok_e2e_stream_once_0123456789' };

type PostMode = 'forward-then-502' | '502-unforwarded';

let simulator: TelesyncProcess;
let simUrl: string;
let proxy: Server;
let mode: PostMode = 'forward-then-502';
let postsSeen = 0;
let closedPort: number;
let urlSerial = 0;

async function startSimulatorBehindProxy(): Promise<{ url: string; close(): Promise<void> }> {
  const simPort = await freePort();
  closedPort = await freePort();
  simulator = startTelesync(
    [
      'simulate',
      '--port',
      String(simPort),
      '--seed',
      'e2e-stream-once',
      '--calls',
      '50',
      '--account',
      `${ACCOUNT.authId}:${ACCOUNT.authToken}`,
    ],
    { TELESYNC_LOG_LEVEL: 'warn' },
    { timeoutMs: 170_000 },
  );
  await simulator.waitForStdout(/listening on/, 30_000);
  simUrl = `http://127.0.0.1:${simPort}`;
  proxy = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const isStart = request.method === 'POST' && /\/Stream\/$/.test(request.url ?? '');
      if (isStart) postsSeen++;
      const badGateway = (): void => {
        response.writeHead(502, { 'content-type': 'text/html' });
        response.end('<html><body>502 Bad Gateway</body></html>');
      };
      if (isStart && mode === '502-unforwarded') {
        badGateway();
        return;
      }
      fetch(`${simUrl}${request.url ?? '/'}`, {
        method: request.method ?? 'GET',
        headers: {
          authorization: request.headers.authorization ?? '',
          'content-type': request.headers['content-type'] ?? 'application/json',
        },
        ...(body.length > 0 ? { body } : {}),
      })
        .then(async (answer) => {
          const answerBody = Buffer.from(await answer.arrayBuffer());
          if (isStart) {
            badGateway();
            return;
          }
          response.writeHead(answer.status, { 'content-type': 'application/json' });
          response.end(answerBody);
        })
        .catch(badGateway);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise((resolve) => proxy.close(resolve));
      simulator.kill('SIGTERM');
      await simulator.exited;
    },
  };
}

const cli = useCliFixture({ service: startSimulatorBehindProxy, account: ACCOUNT });

async function liveCall(): Promise<string> {
  const answer = await fetch(`${simUrl}/__admin/dataset`);
  const dataset = (await answer.json()) as { accounts: { liveCallUuids: string[] }[] };
  return dataset.accounts[0]!.liveCallUuids[0]!;
}

/** The stream records of the call to `serviceUrl`, read from the simulator itself. */
async function streamsTo(call: string, serviceUrl: string): Promise<{ stream_id: string }[]> {
  const answer = await fetch(`${simUrl}/v1/Account/${ACCOUNT.authId}/Call/${call}/Stream/`, {
    headers: {
      authorization: `Basic ${Buffer.from(`${ACCOUNT.authId}:${ACCOUNT.authToken}`).toString('base64')}`,
    },
  });
  expect(answer.status).toBe(200);
  const list = (await answer.json()) as { objects: { stream_id: string; service_url: string }[] };
  return list.objects.filter((stream) => stream.service_url === serviceUrl);
}

function mediaUrl(): string {
  return `wss://127.0.0.1:${closedPort}/audio-${++urlSerial}`;
}

describe('stream start behind a proxy that loses the answer', () => {
  it('starts one stream when the POST reached the service, finds it and reports it (exit 0)', async () => {
    mode = 'forward-then-502';
    const call = await liveCall();
    const url = mediaUrl();
    const before = postsSeen;
    const result = await runTelesync(['stream', 'start', call, '--url', url, '--json'], cli.env);
    expect(result.code, result.stderr).toBe(0);
    expect(postsSeen - before).toBe(1);
    const streams = await streamsTo(call, url);
    expect(streams).toHaveLength(1);
    const printed = JSON.parse(result.stdout) as { stream_id: string; found_in_stream_list: true };
    expect(printed).toMatchObject({ stream_id: streams[0]!.stream_id, found_in_stream_list: true });

    const plain = mediaUrl();
    const text = await runTelesync(['stream', 'start', call, '--url', plain], cli.env);
    expect(text.code, text.stderr).toBe(0);
    const [found] = await streamsTo(call, plain);
    expect(text.stdout).toContain(
      `stream started: stream_id ${found!.stream_id} (the answer was lost`,
    );
  });

  it('starts nothing when the POST never reached the service, and says the outcome is unknown (exit 3)', async () => {
    mode = '502-unforwarded';
    const call = await liveCall();
    const url = mediaUrl();
    const before = postsSeen;
    const result = await runTelesync(['stream', 'start', call, '--url', url], cli.env);
    expect(result.code, result.stderr).toBe(3);
    expect(postsSeen - before).toBe(1);
    expect(await streamsTo(call, url)).toEqual([]);
    expect(result.stderr).toContain('whether the stream started is unknown');
    expect(result.stderr).toContain(`telesync lookup streams ${call}`);
  });
});

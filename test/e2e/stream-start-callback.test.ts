import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { useCliFixture } from '../support/cli-fixture.js';
import { runTelesync } from '../support/run-telesync.js';

/**
 * `telesync stream start` names telesync's own callback route when TELESYNC_PUBLIC_URL is set. The
 * command talks to the simulator through a recorder that keeps what each stream start asked for.
 */

const ACCOUNT = { authId: 'MA_E2E_STREAM_CB', authToken: 'tok_e2e_stream_cb_0123456789' };

let sim: RunningSimulator;
let recorder: Server;
let recorderUrl: string;
/** The JSON bodies of the stream starts the simulator received, in order. */
const starts: Record<string, unknown>[] = [];
let urlSerial = 0;

/** The simulator behind a recorder: the command's service is the recorder. */
async function startRecordedSimulator(): Promise<{ url: string; close(): Promise<void> }> {
  sim = await startSimulator({ seed: 'e2e-stream-callback', calls: 200, accounts: [ACCOUNT] });
  recorder = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      if (request.method === 'POST' && /\/Stream\/$/.test(request.url ?? ''))
        starts.push(JSON.parse(body.toString('utf8')) as Record<string, unknown>);
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(
          (entry): entry is [string, string] =>
            typeof entry[1] === 'string' && !['host', 'connection'].includes(entry[0]),
        ),
      );
      fetch(`${sim.url}${request.url ?? '/'}`, {
        method: request.method,
        headers,
        ...(body.length > 0 ? { body } : {}),
      })
        .then(async (answer) => {
          response.writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'application/json',
          });
          response.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch((error: unknown) => {
          response.writeHead(502);
          response.end(String(error));
        });
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  return {
    url: recorderUrl,
    close: async () => {
      await new Promise((resolve) => recorder.close(resolve));
      await sim.close();
    },
  };
}

const cli = useCliFixture({ service: startRecordedSimulator, account: ACCOUNT });

function live(): string {
  return sim.dataset().accounts[0]!.liveCallUuids[0]!;
}

/** A media URL of its own for each start: a second stream to the same URL would be refused. */
function mediaUrl(): string {
  return `wss://media.example.com/audio-${++urlSerial}`;
}

describe('stream start and telesync’s callback route', () => {
  it('sets status_callback_url to TELESYNC_PUBLIC_URL plus the route, and says so', async () => {
    const before = starts.length;
    const result = await runTelesync(['stream', 'start', live(), '--url', mediaUrl()], {
      ...cli.env,
      TELESYNC_PUBLIC_URL: 'https://telesync.invalid/',
    });
    expect(result.code, result.stderr).toBe(0);
    expect(starts.slice(before)).toEqual([
      expect.objectContaining({
        status_callback_url: 'https://telesync.invalid/callbacks/stream',
        status_callback_method: 'POST',
      }),
    ]);
    expect(result.stdout).toContain('its events: POST https://telesync.invalid/callbacks/stream');
  });

  it('follows TELESYNC_STREAM_CALLBACK_PATH and --callback-method', async () => {
    const before = starts.length;
    const result = await runTelesync(
      ['stream', 'start', live(), '--url', mediaUrl(), '--callback-method', 'get', '--json'],
      {
        ...cli.env,
        TELESYNC_PUBLIC_URL: 'http://hooks.invalid:8080/telesync',
        TELESYNC_STREAM_CALLBACK_PATH: '/plivo/streams',
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(starts.slice(before)).toEqual([
      expect.objectContaining({
        status_callback_url: 'http://hooks.invalid:8080/telesync/plivo/streams',
        status_callback_method: 'GET',
      }),
    ]);
  });

  it('lets --callback-url send the events elsewhere and --no-callback nowhere', async () => {
    const withPublicUrl = { ...cli.env, TELESYNC_PUBLIC_URL: 'https://telesync.invalid' };
    const before = starts.length;
    const elsewhere = await runTelesync(
      [
        'stream',
        'start',
        live(),
        '--url',
        mediaUrl(),
        '--callback-url',
        'https://hooks-elsewhere.invalid/x',
      ],
      withPublicUrl,
    );
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    const nowhere = await runTelesync(
      ['stream', 'start', live(), '--url', mediaUrl(), '--no-callback'],
      withPublicUrl,
    );
    expect(nowhere.code, nowhere.stderr).toBe(0);
    expect(nowhere.stdout).toContain('its events: none');
    const unset = await runTelesync(['stream', 'start', live(), '--url', mediaUrl()], cli.env);
    expect(unset.code, unset.stderr).toBe(0);
    expect(starts.slice(before).map((body) => body.status_callback_url)).toEqual([
      'https://hooks-elsewhere.invalid/x',
      undefined,
      undefined,
    ]);
  });

  it('refuses a bad TELESYNC_PUBLIC_URL and contradicting flags with exit 2, sending nothing', async () => {
    const before = starts.length;
    const bad = await runTelesync(['stream', 'start', live(), '--url', mediaUrl()], {
      ...cli.env,
      TELESYNC_PUBLIC_URL: 'telesync.invalid',
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'TELESYNC_PUBLIC_URL: "telesync.invalid" is not an absolute http(s) URL; give the address the service reaches',
    );
    const both = await runTelesync(
      [
        'stream',
        'start',
        live(),
        '--url',
        mediaUrl(),
        '--callback-url',
        'https://hooks-elsewhere.invalid/x',
        '--no-callback',
      ],
      cli.env,
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--callback-url and --no-callback contradict each other');
    expect(starts.length).toBe(before);
  });
});

import { describe, expect, it } from 'vitest';
import { startMediaServer, waitFor } from '../support/media-server.js';
import { runTelesync, startTelesync, type TelesyncProcess } from '../support/run-telesync.js';
import { createTestCertificateAuthority } from '../support/test-certificate-authority.js';

// `telesync simulate` as users run it: a real process that prints how to connect, serves until
// SIGTERM, and exits 0; bad flags exit 2 naming the accepted form.

/** Starts `telesync simulate …` and resolves once it has printed its connection details. */
async function startCommand(
  args: string[],
  env: Record<string, string> = {},
): Promise<TelesyncProcess> {
  const child = startTelesync(['simulate', ...args], env);
  try {
    await child.waitForStdout(/Stop with Ctrl\+C\./);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}

function exportedVariables(output: string): Record<string, string> {
  const line = output.split('\n').find((text) => text.trim().startsWith('export '));
  if (line === undefined) throw new Error(`no export line in: ${output}`);
  return Object.fromEntries(
    line
      .trim()
      .slice('export '.length)
      .split(' ')
      .map((pair) => pair.split('=') as [string, string]),
  );
}

describe('telesync simulate', () => {
  it('prints generated credentials and examples, serves the API, and stops on SIGTERM with 0', async () => {
    const started = await startCommand(['--port', '0', '--calls', '5000', '--seed', 'cli']);
    const variables = exportedVariables(started.stdout());
    expect(variables.TELESYNC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(variables.TELESYNC_AUTH_ID).toMatch(/^MA[A-Z0-9]{18}$/);
    expect(variables.TELESYNC_AUTH_TOKEN).toMatch(/^[A-Z0-9]{40}$/);
    expect(started.stdout()).toMatch(/Example message UUIDs: [0-9a-f-]{36}/);
    expect(started.stdout()).toMatch(
      /Live call UUIDs \(streams can start on these\): [0-9a-f-]{36}/,
    );

    const authorization = `Basic ${Buffer.from(`${variables.TELESYNC_AUTH_ID}:${variables.TELESYNC_AUTH_TOKEN}`).toString('base64')}`;
    const response = await fetch(
      `${variables.TELESYNC_BASE_URL}/v1/Account/${variables.TELESYNC_AUTH_ID}/Trunk/Call/?limit=5`,
      { headers: { authorization } },
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { objects: unknown[]; meta: { total_count: number } };
    expect(body.objects).toHaveLength(5);
    expect(body.meta.total_count).toBeGreaterThan(300);

    started.kill('SIGTERM');
    const exit = await started.exited;
    expect(exit.code).toBe(0);
    expect(exit.stdout).toMatch(/telesync simulator stopped\./);
  });

  it('takes the account from the environment without printing its token', async () => {
    const started = await startCommand(['--port', '0', '--calls', '100'], {
      TELESYNC_AUTH_ID: 'MAFROMENVIRONMENT01',
      TELESYNC_AUTH_TOKEN: 'secret-from-env-123',
    });
    try {
      expect(started.stdout()).not.toContain('secret-from-env-123');
      expect(started.stdout()).toMatch(
        /Account MAFROMENVIRONMENT01 \(credentials from TELESYNC_AUTH_ID/,
      );
      const base = exportedVariables(started.stdout()).TELESYNC_BASE_URL!;
      const authorization = `Basic ${Buffer.from('MAFROMENVIRONMENT01:secret-from-env-123').toString('base64')}`;
      const response = await fetch(`${base}/v1/Account/MAFROMENVIRONMENT01/Endpoint/?limit=1`, {
        headers: { authorization },
      });
      expect(response.status).toBe(200);
    } finally {
      started.kill('SIGINT');
      expect((await started.exited).code).toBe(0);
    }
  });

  it('exits 2 on bad flag values, naming each and its accepted form', async () => {
    const result = await runTelesync([
      'simulate',
      '--port',
      'eighty',
      '--rate-limit',
      '300 per second',
      '--fault-5xx',
      '1.5',
      '--account',
      'nocolon',
      '--calls',
      '-3',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--port must be a whole number from 0 to 65535 \(got "eighty"\)/);
    expect(result.stderr).toMatch(/--rate-limit must be REQUESTS\/WINDOW such as 300\/5s/);
    expect(result.stderr).toMatch(/--fault-5xx must be a share from 0 to 1/);
    expect(result.stderr).toMatch(/--account must be ID:TOKEN/);
    expect(result.stderr).toMatch(/--calls must be a whole number/);
    expect(result.stdout).toBe('');
  });

  it('serves trunk pages from calls rendered at start with --prerender, and exits 2 past its limit', async () => {
    const started = await startCommand(['--port', '0', '--calls', '3000', '--prerender'], {
      TELESYNC_AUTH_ID: 'MAPRERENDERED00001',
      TELESYNC_AUTH_TOKEN: 'prerender-token-1',
    });
    try {
      expect(started.stdout()).toMatch(
        /trunk pages: from every account's 3000 calls, rendered at start \(--prerender\)/,
      );
      const base = exportedVariables(started.stdout()).TELESYNC_BASE_URL!;
      const authorization = `Basic ${Buffer.from('MAPRERENDERED00001:prerender-token-1').toString('base64')}`;
      const uuids = new Set<string>();
      const since = encodeURIComponent(
        new Date(Date.now() - 89 * 86_400_000).toISOString().replace('T', ' ').slice(0, 19),
      );
      for (let offset = 0; ; offset += 20) {
        const response = await fetch(
          `${base}/v1/Account/MAPRERENDERED00001/Trunk/Call/?end_time__gte=${since}&limit=20&offset=${offset}`,
          { headers: { authorization } },
        );
        expect(response.status).toBe(200);
        const text = await response.text();
        // The bytes JSON.stringify writes, as the pages of a simulator that makes each record.
        expect(text).toBe(JSON.stringify(JSON.parse(text)));
        const page = JSON.parse(text) as {
          meta: { total_count: number };
          objects: { call_uuid: string; resource_uri: string }[];
        };
        for (const call of page.objects) {
          expect(call.resource_uri).toBe(`/v1/Account/MAPRERENDERED00001/Call/${call.call_uuid}/`);
          uuids.add(call.call_uuid);
        }
        if (page.objects.length < 20) {
          expect(uuids.size).toBe(page.meta.total_count);
          break;
        }
      }
      // The last 89 of the 90 days: nearly all of the 3,000 calls rendered at start.
      expect(uuids.size).toBeGreaterThan(2_900);
    } finally {
      started.kill('SIGTERM');
      expect((await started.exited).code).toBe(0);
    }

    const tooMany = await runTelesync([
      'simulate',
      '--calls',
      '1500000',
      '--account',
      'MAONE:t1',
      '--account',
      'MATWO:t2',
      '--prerender',
    ]);
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toMatch(
      /prerender holds every call in memory, 2,000,000 calls over all accounts at most \(got 2 × 1,500,000\)/,
    );
  });

  it('exits 2 on an unreadable --media-ca and bad --stream-audio-seconds', async () => {
    const result = await runTelesync([
      'simulate',
      '--media-ca',
      '/nonexistent/test-ca.pem',
      '--stream-audio-seconds',
      'lots',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--media-ca \/nonexistent\/test-ca\.pem cannot be read \(ENOENT\)/,
    );
    expect(result.stderr).toMatch(/--stream-audio-seconds must be seconds from 0 to 3600/);
  });

  it("opens a started stream's WebSocket to a server it trusts through --media-ca, and streams audio", async () => {
    const ca = createTestCertificateAuthority();
    const media = await startMediaServer({ cert: ca.serverCertPem, key: ca.serverKeyPem });
    const started = await startCommand(
      ['--port', '0', '--calls', '100', '--media-ca', ca.caFile, '--stream-audio-seconds', '0.1'],
      { TELESYNC_AUTH_ID: 'MAMEDIACOMMAND000001', TELESYNC_AUTH_TOKEN: 'media-command-token' },
    );
    try {
      expect(started.stdout()).toContain(
        `streams: WebSockets opened to service_url, 0.1 s of audio each, trusting the CA in ${ca.caFile}`,
      );
      const base = exportedVariables(started.stdout()).TELESYNC_BASE_URL!;
      const call = /Live call UUIDs \(streams can start on these\): ([0-9a-f-]{36})/.exec(
        started.stdout(),
      )![1]!;
      const response = await fetch(`${base}/v1/Account/MAMEDIACOMMAND000001/Call/${call}/Stream/`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from('MAMEDIACOMMAND000001:media-command-token').toString('base64')}`,
        },
        body: JSON.stringify({ service_url: `${media.url}/command`, extra_headers: 'from=cli' }),
      });
      expect(response.status).toBe(201);
      const session = await media.session('/command', 10_000);
      await waitFor(() => session.messages.length >= 6, 5000, 'the audio');
      expect(session.messages.map((message) => message.event)).toEqual([
        'start',
        'media',
        'media',
        'media',
        'media',
        'media',
      ]);
      expect(session.messages[0]).toMatchObject({ extra_headers: 'from=cli' });
    } finally {
      started.kill('SIGTERM');
      expect((await started.exited).code).toBe(0);
      await media.close();
      ca.remove();
    }
  });

  it('shows an example in --help', async () => {
    const result = await runTelesync(['simulate', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\$ telesync simulate --port 0 --calls 1000000/);
    expect(result.stdout).toMatch(/--rate-limit/);
  });
});

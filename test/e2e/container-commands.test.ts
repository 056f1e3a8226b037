import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  nodeHealthcheckScript,
  readComposeService,
  runInstructionWriting,
} from '../support/container-files.js';

/**
 * Without a container engine, the two commands the compose service relies on are run here as the
 * container would run them: the healthcheck's node script, and the `telesync` wrapper the
 * Dockerfile writes onto the PATH.
 */

interface Outcome {
  code: number;
  stdout: string;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 20_000 }, (error, stdout) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout });
    });
  });
}

/**
 * No database in these checks: the embedded pass (`npm test`, no TEST_DATABASE_URL) runs them, and
 * the pass on the PostgreSQL of TEST_DATABASE_URL (CI's second) would only run the same commands
 * again.
 */
const repeatsTheEmbeddedPass = Boolean(process.env.TEST_DATABASE_URL);

describe.skipIf(repeatsTheEmbeddedPass)('the compose healthcheck', () => {
  let server: Server;
  let status = 200;
  const paths: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      paths.push(request.url ?? '');
      response.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** The healthcheck of docker-compose.yml, aimed at `port` instead of the container's. */
  function healthcheckOn(port: number): string {
    const script = nodeHealthcheckScript(readComposeService());
    expect(script).toBeDefined();
    const retargeted = script!.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${port}`);
    expect(retargeted).not.toBe(script);
    return retargeted;
  }

  it('passes when /healthz answers 200 and fails when it answers 503', async () => {
    const { port } = server.address() as AddressInfo;
    const script = healthcheckOn(port);
    status = 200;
    expect((await run(process.execPath, ['-e', script])).code).toBe(0);
    status = 503;
    expect((await run(process.execPath, ['-e', script])).code).toBe(1);
    expect(paths).toEqual(['/healthz', '/healthz']);
  });

  it('fails when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    expect((await run(process.execPath, ['-e', healthcheckOn(port)])).code).toBe(1);
  });
});

describe.skipIf(repeatsTheEmbeddedPass)('the telesync wrapper of the image', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'telesync-wrapper-'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the compiled command with node, passing every argument through unchanged', async () => {
    const target = '/usr/local/bin/telesync';
    const command = runInstructionWriting(target);
    expect(command).toBeDefined();
    const wrapper = join(dir, 'telesync');
    // The Dockerfile's RUN instruction, writing into the temporary directory instead.
    const written = await run('/bin/sh', ['-c', command!.replaceAll(target, wrapper)]);
    expect(written.code).toBe(0);
    expect(readFileSync(wrapper, 'utf8').startsWith('#!/bin/sh\n')).toBe(true);

    // A stand-in for node that prints what it was asked to run, one argument a line.
    writeFileSync(
      join(dir, 'node'),
      '#!/bin/sh\nfor arg in "$@"; do printf "%s\\n" "$arg"; done\n',
    );
    chmodSync(join(dir, 'node'), 0o755);
    const result = await run(wrapper, ['backfill', '--from', '2026-10-01 00:00', '--json'], {
      PATH: `${dir}:/usr/bin:/bin`,
    });
    expect(result).toEqual({
      code: 0,
      stdout: '/app/dist/src/cli/entry.js\nbackfill\n--from\n2026-10-01 00:00\n--json\n',
    });
  });
});

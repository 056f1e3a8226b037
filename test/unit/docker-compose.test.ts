import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  REPOSITORY_ROOT,
  finalDockerStage,
  nodeHealthcheckScript,
  readComposeService,
  runInstructionWriting,
} from '../support/container-files.js';

/**
 * There is no container engine where the tests run, so these read docker-compose.yml and the
 * Dockerfile for the facts that make the compose service usable from outside its container.
 * (test/e2e/container-commands.test.ts runs the healthcheck and the `telesync` wrapper.)
 */

/** A compose duration ("75s", "1m30s", "2m") in seconds. */
function durationSeconds(text: string): number {
  const match = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?$/.exec(text);
  if (match === null || text === '') throw new Error(`not a compose duration: "${text}"`);
  const [, hours = '0', minutes = '0', seconds = '0'] = match;
  return Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds);
}

const service = readComposeService();
const environment = service.environment ?? {};

describe('docker-compose.yml, the telesync service', () => {
  it('serves /healthz and /metrics on every interface of the container, on the published port', () => {
    expect(environment.TELESYNC_HTTP_HOST).toBe('0.0.0.0');
    const port = String(environment.TELESYNC_HTTP_PORT);
    expect(service.ports).toContain(`127.0.0.1:${port}:${port}`);
  });

  it('is health-checked on /healthz with node, which the image has (it has no curl)', () => {
    const script = nodeHealthcheckScript(service);
    expect(script, 'healthcheck.test must be ["CMD", "node", "-e", script]').toBeDefined();
    expect(script).toContain(`http://127.0.0.1:${String(environment.TELESYNC_HTTP_PORT)}/healthz`);
    // The first minutes go to migrating and starting; failures then must not count.
    expect(durationSeconds(service.healthcheck?.start_period ?? '0s')).toBeGreaterThanOrEqual(60);
  });

  it('gives runs longer than the shutdown timeout to finish before SIGKILL', () => {
    const timeout = Number(environment.TELESYNC_SHUTDOWN_TIMEOUT_SECONDS);
    expect(
      timeout,
      'set TELESYNC_SHUTDOWN_TIMEOUT_SECONDS beside stop_grace_period',
    ).toBeGreaterThan(0);
    // Closing the database and the clients after the timeout takes up to a few seconds more.
    expect(durationSeconds(service.stop_grace_period ?? '10s')).toBeGreaterThanOrEqual(
      timeout + 10,
    );
  });

  it('runs `telesync` from the PATH of the image, and execs the scheduler so it gets SIGTERM', () => {
    expect(service.entrypoint).toEqual([
      '/bin/sh',
      '-c',
      'telesync migrate && exec telesync schedule',
    ]);
    const writer = runInstructionWriting('/usr/local/bin/telesync');
    expect(writer, 'the Dockerfile writes /usr/local/bin/telesync').toBeDefined();
    expect(writer).toContain('chmod 755 /usr/local/bin/telesync');
    expect(finalDockerStage()).toMatch(/^ENTRYPOINT \["telesync"\]$/m);
  });

  it('gives node options that node accepts, and a young generation larger than the default', () => {
    const options = /^ENV NODE_OPTIONS=(.+)$/m.exec(finalDockerStage())?.[1];
    expect(options, 'the image sets NODE_OPTIONS').toBeDefined();
    // A flag NODE_OPTIONS does not allow stops every node of the image before it starts.
    const started = spawnSync(process.execPath, ['-e', 'process.exit(0)'], {
      env: { ...process.env, NODE_OPTIONS: options },
      encoding: 'utf8',
    });
    expect(started.stderr).toBe('');
    expect(started.status).toBe(0);
    expect(Number(/--max-semi-space-size=(\d+)/.exec(options!)?.[1])).toBeGreaterThan(16);
  });

  it('points the wrapper at the compiled entry of the command', () => {
    const writer = runInstructionWriting('/usr/local/bin/telesync') ?? '';
    const entry = /\/app\/(dist\/[\w/.-]+\.js)/.exec(writer)?.[1];
    expect(entry).toBe('dist/src/cli/entry.js');
    // tsc compiles <root>/X.ts to dist/X.js (tsconfig.build.json: rootDir ".", outDir "dist").
    const build = JSON.parse(
      readFileSync(join(REPOSITORY_ROOT, 'tsconfig.build.json'), 'utf8'),
    ) as {
      compilerOptions: { rootDir: string; outDir: string };
    };
    expect(build.compilerOptions).toMatchObject({ rootDir: '.', outDir: 'dist' });
    const source = entry!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    expect(existsSync(join(REPOSITORY_ROOT, source)), `${source} exists`).toBe(true);
  });
});

describe('durationSeconds', () => {
  it('reads the compose forms', () => {
    expect([durationSeconds('75s'), durationSeconds('1m30s'), durationSeconds('2m')]).toEqual([
      75, 90, 120,
    ]);
    expect(() => durationSeconds('75')).toThrow(/not a compose duration/);
    expect(() => durationSeconds('soon')).toThrow(/not a compose duration/);
  });
});

import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { createHealthzRoute } from '../../src/http/healthz-route.js';
import { createMetricsRoute } from '../../src/http/metrics-route.js';

const request = {} as IncomingMessage;

describe('the /healthz route', () => {
  it('answers 200 with the report when healthy, 503 when not', async () => {
    const route = createHealthzRoute(() => Promise.resolve({ healthy: true, streams: [] }));
    expect(route).toMatchObject({ method: 'GET', path: '/healthz' });
    expect(await route.answer(request)).toEqual({
      status: 200,
      contentType: 'application/json',
      body: '{"healthy":true,"streams":[]}\n',
    });
    const sick = createHealthzRoute(() => Promise.resolve({ healthy: false }));
    expect((await sick.answer(request)).status).toBe(503);
  });
});

describe('the /metrics route', () => {
  it('answers 200 with the exposition and its content type', async () => {
    const route = createMetricsRoute(() =>
      Promise.resolve({ contentType: 'text/plain; version=0.0.4', body: 'up 1\n' }),
    );
    expect(route).toMatchObject({ method: 'GET', path: '/metrics' });
    expect(await route.answer(request)).toEqual({
      status: 200,
      contentType: 'text/plain; version=0.0.4',
      body: 'up 1\n',
    });
  });
});

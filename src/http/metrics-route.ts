import type { HttpRoute } from './http-route.js';

/** GET /metrics: the Prometheus text exposition `render` returns. */
export function createMetricsRoute(
  render: () => Promise<{ readonly contentType: string; readonly body: string }>,
): HttpRoute {
  return {
    method: 'GET',
    path: '/metrics',
    async answer() {
      const { contentType, body } = await render();
      return { status: 200, contentType, body };
    },
  };
}

import type { HttpRoute } from './http-route.js';

/**
 * GET /healthz: the report `check` returns, as JSON; 200 when it says `healthy`, 503 otherwise
 * (what load balancers and liveness probes act on).
 */
export function createHealthzRoute(check: () => Promise<{ readonly healthy: boolean }>): HttpRoute {
  return {
    method: 'GET',
    path: '/healthz',
    async answer() {
      const report = await check();
      return {
        status: report.healthy ? 200 : 503,
        contentType: 'application/json',
        body: `${JSON.stringify(report)}\n`,
      };
    },
  };
}

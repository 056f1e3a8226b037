import type { HttpRoute } from './http-route.js';
import { renderStatusPage, type StatusPageView } from './status-page.js';

/**
 * GET /: the status page, rendered from what `read` returns (see status-page.ts). Answers 200
 * with HTML; a failed read answers 500 like any route.
 */
export function createStatusPageRoute(read: () => Promise<StatusPageView>): HttpRoute {
  return {
    method: 'GET',
    path: '/',
    async answer() {
      return {
        status: 200,
        contentType: 'text/html; charset=utf-8',
        body: renderStatusPage(await read()),
      };
    },
  };
}

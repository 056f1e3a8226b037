import { randomUUID } from 'node:crypto';
import { decideRequestFault, type RequestFault } from '../faults.js';
import type { SimulatorState } from '../state/simulator-state.js';
import type { SimulatorStats } from '../state/simulator-stats.js';
import { API_ROUTER, type ApiContext } from './api-routes.js';
import { authenticateAccount } from './authenticate-account.js';
import { errorAnswer, type SimAnswer } from './sim-answer.js';
import type { SimOutcome, SimRequest } from './sim-request.js';

/**
 * What a request to the service's API gets, in the order the service checks: the request fault
 * drawn for it, the path, the credentials, the account's request budget, the route and method,
 * then the route's handler. Every request is counted by route and status, and draws exactly one
 * request fault, whatever it gets: the draws stay in step from run to run.
 */
export function handleApiRequest(state: SimulatorState, request: SimRequest, url: URL): SimOutcome {
  const apiId = randomUUID();
  const target = parseAccountPath(url.pathname);
  const match =
    target === undefined ? undefined : API_ROUTER.match(request.method, target.segments);
  const routeName =
    match === undefined || match.kind === 'no-route'
      ? 'unknown'
      : `${request.method} ${match.route}`;
  const { stats } = state;

  const faults = state.activeFaults;
  const decision = decideRequestFault(faults, state.faultRng);
  if (decision.spiked) stats.countFault('spikes');
  const answer = (result: SimAnswer, truncateFraction?: number): SimOutcome => {
    stats.countRequest(routeName, result.status);
    return {
      kind: 'answer',
      answer: result,
      delayMs: decision.delayMs,
      ...(truncateFraction === undefined ? {} : { truncateFraction }),
    };
  };
  const injected = injectedAnswer(stats, decision.fault, apiId);
  if (injected === 'drop') {
    stats.countRequest(routeName, 'dropped');
    return { kind: 'drop', delayMs: decision.delayMs };
  }
  if (injected !== undefined) return answer(injected);
  const truncate = decision.fault.kind === 'truncate' ? decision.fault.fraction : undefined;
  if (truncate !== undefined) stats.countFault('truncations');

  if (target === undefined || match === undefined) {
    return answer(errorAnswer(404, `no such resource: ${url.pathname}`, apiId), truncate);
  }
  const account = authenticateAccount(state.accounts, request.authorization);
  if (typeof account === 'string') {
    return answer(
      errorAnswer(401, account, apiId, {
        'WWW-Authenticate': 'Basic realm="telesync simulator"',
      }),
      truncate,
    );
  }
  if (account.authId !== target.authId) {
    return answer(
      errorAnswer(
        401,
        `these credentials are for account ${account.authId}, not ${target.authId}`,
        apiId,
      ),
      truncate,
    );
  }
  const now = state.now();
  const { limiter } = state;
  if (limiter !== undefined) {
    const taken = limiter.take(account.authId, request.arrivedAtMicros ?? now);
    if (!taken.allowed) {
      stats.countRateLimited();
      return answer(
        errorAnswer(
          429,
          `rate limit of ${limiter.limit.requests} requests per ${limiter.limit.windowMs} ms exceeded; retry after ${taken.retryAfterSeconds} s`,
          apiId,
          { 'Retry-After': String(taken.retryAfterSeconds) },
        ),
        truncate,
      );
    }
  }
  if (match.kind === 'no-route') {
    return answer(errorAnswer(404, `no such resource: ${url.pathname}`, apiId), truncate);
  }
  if (match.kind === 'wrong-method') {
    return answer(
      errorAnswer(
        405,
        `${request.method} is not allowed on ${url.pathname}; use ${match.allowed.join(' or ')}`,
        apiId,
        { Allow: match.allowed.join(', ') },
      ),
      truncate,
    );
  }
  const context: ApiContext = {
    account,
    nowMicros: now,
    faults,
    stats,
    rng: state.pagingRng,
    apiId,
    streams: state.streamDriver,
    realShapes: state.realShapes,
  };
  const result = match.handler(context, {
    params: match.params,
    query: url.searchParams,
    path: url.pathname,
    body: request.body,
  });
  return answer(result, truncate);
}

/** The answer a request fault replaces the real one with; 'drop' for a reset. */
function injectedAnswer(
  stats: SimulatorStats,
  fault: RequestFault,
  apiId: string,
): SimAnswer | 'drop' | undefined {
  switch (fault.kind) {
    case 'down':
      stats.countFault('down');
      return errorAnswer(503, 'the service is unavailable (simulated outage)', apiId);
    case 'too-many-requests':
      stats.countFault('tooManyRequests');
      return errorAnswer(429, 'too many requests (simulated)', apiId, {
        'Retry-After': String(fault.retryAfterSeconds),
      });
    case 'server-error':
      stats.countFault('serverErrors');
      return errorAnswer(fault.status, `simulated server error ${fault.status}`, apiId);
    case 'reset':
      stats.countFault('resets');
      return 'drop';
    default:
      return undefined;
  }
}

/** The auth_id and the segments after /v1/Account/{auth_id}/, or undefined for other paths. */
function parseAccountPath(pathname: string): { authId: string; segments: string[] } | undefined {
  const match = /^\/v1\/Account\/([^/]+)\/(.*)$/.exec(pathname);
  if (match === null) return undefined;
  const segments = (match[2] ?? '').split('/');
  // One trailing slash is optional on every path.
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop();
  try {
    return {
      authId: decodeURIComponent(match[1] ?? ''),
      segments: segments.map(decodeURIComponent),
    };
  } catch {
    return undefined;
  }
}

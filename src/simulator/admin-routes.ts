import { randomUUID } from 'node:crypto';
import { parseEpochMicros } from '../util/micros.js';
import {
  addCall,
  addEndpoint,
  checkNewCall,
  removeEndpoint,
  type AccountState,
} from './account-state.js';
import { errorAnswer, jsonAnswer, type SimAnswer } from './sim-answer.js';
import type { Simulator } from './simulator.js';

/**
 * The admin API of the simulator, under /__admin/, without authentication (the simulator listens
 * on 127.0.0.1 by default). It is never faulted, rate limited or counted. JSON in, JSON out.
 *
 * - `GET /__admin/stats` — counters: requests (total, by route, by status), faults injected by
 *   kind, rate-limited requests, trunk call records generated.
 * - `POST /__admin/stats/reset` — zeroes the counters; answers the zeroed counters.
 * - `GET /__admin/faults` — the faults in force (see FaultConfig).
 * - `PUT /__admin/faults` — replaces them; fields left out are off. 400 lists every bad field.
 * - `POST /__admin/calls` — adds a trunk call: `{"account"?: auth_id (default: the first),
 *   "end_time": ISO date-time, "visible_at"?: ISO date-time (default now; later makes a late
 *   arrival), "overrides"?: {field: value}, "omit"?: [field]}`. Answers 201 with the record.
 * - `POST /__admin/endpoints` — adds a SIP endpoint: `{"account"?, "registered"?: boolean,
 *   "overrides"?: {field: value}}`. Answers 201 with the endpoint.
 * - `DELETE /__admin/endpoints/{auth_id}/{endpoint_id}` — removes one; 204, or 404.
 * - `GET /__admin/dataset` — accounts (without tokens), sizes, call counts of the last 90 and 7
 *   days, example message UUIDs, pack UUIDs, live call UUIDs, calls with streams.
 */
export function handleAdminRequest(
  simulator: Simulator,
  method: string,
  url: URL,
  body: string,
): SimAnswer {
  const apiId = randomUUID();
  const path = url.pathname.replace(/\/+$/, '');
  const fail = (status: number, message: string): SimAnswer => errorAnswer(status, message, apiId);
  const only = (allowed: string, run: () => SimAnswer): SimAnswer =>
    method === allowed
      ? run()
      : errorAnswer(405, `${method} is not allowed on ${path}; use ${allowed}`, apiId, {
          Allow: allowed,
        });

  if (path === '/__admin/stats')
    return only('GET', () => jsonAnswer(200, simulator.stats.snapshot()));
  if (path === '/__admin/stats/reset') {
    return only('POST', () => {
      simulator.stats.reset();
      return jsonAnswer(200, simulator.stats.snapshot());
    });
  }
  if (path === '/__admin/faults') {
    if (method === 'GET') return jsonAnswer(200, simulator.faults());
    if (method !== 'PUT') {
      return errorAnswer(405, `${method} is not allowed on ${path}; use GET or PUT`, apiId, {
        Allow: 'GET, PUT',
      });
    }
    const input = parseJsonBody(body);
    if (!input.ok) return fail(400, input.problem);
    const replaced = simulator.replaceFaults(input.value);
    return replaced.ok ? jsonAnswer(200, replaced.config) : fail(400, replaced.problems.join('; '));
  }
  if (path === '/__admin/dataset') return only('GET', () => jsonAnswer(200, simulator.summary()));
  if (path === '/__admin/calls') {
    return only('POST', () => {
      const input = parseJsonObjectBody(body);
      if (!input.ok) return fail(400, input.problem);
      const account = accountOf(simulator, input.value.account);
      if (typeof account === 'string') return fail(404, account);
      const endMicros = dateTimeField(input.value.end_time);
      const visibleFromMicros =
        input.value.visible_at === undefined ? undefined : dateTimeField(input.value.visible_at);
      const problems: string[] = [];
      if (endMicros === undefined)
        problems.push('end_time must be an ISO date-time such as 2024-05-01T12:00:00Z');
      if (input.value.visible_at !== undefined && visibleFromMicros === undefined) {
        problems.push('visible_at must be an ISO date-time such as 2024-05-01T12:30:00Z');
      }
      const overrides = input.value.overrides ?? {};
      if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
        problems.push('overrides must be an object of field values');
      }
      const omit = input.value.omit ?? [];
      if (!Array.isArray(omit) || !omit.every((key) => typeof key === 'string')) {
        problems.push('omit must be a list of field names');
      }
      if (problems.length > 0 || endMicros === undefined) return fail(400, problems.join('; '));
      const call = {
        endMicros,
        ...(visibleFromMicros === undefined ? {} : { visibleFromMicros }),
        overrides: overrides as Record<string, unknown>,
        omit: omit as string[],
      };
      const invalid = checkNewCall(call);
      if (invalid.length > 0) return fail(400, invalid.join('; '));
      return jsonAnswer(201, addCall(account, call, simulator.now()).record);
    });
  }
  if (path === '/__admin/endpoints') {
    return only('POST', () => {
      const input = parseJsonObjectBody(body);
      if (!input.ok) return fail(400, input.problem);
      const account = accountOf(simulator, input.value.account);
      if (typeof account === 'string') return fail(404, account);
      const registered = input.value.registered;
      if (registered !== undefined && typeof registered !== 'boolean') {
        return fail(400, 'registered must be true or false');
      }
      const overrides = input.value.overrides ?? {};
      if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
        return fail(400, 'overrides must be an object of field values');
      }
      return jsonAnswer(
        201,
        addEndpoint(account, registered, overrides as Record<string, unknown>),
      );
    });
  }
  const endpoint = /^\/__admin\/endpoints\/([^/]+)\/([^/]+)$/.exec(path);
  if (endpoint !== null) {
    return only('DELETE', () => {
      const account = accountOf(simulator, decodeURIComponent(endpoint[1] ?? ''));
      if (typeof account === 'string') return fail(404, account);
      const endpointId = decodeURIComponent(endpoint[2] ?? '');
      return removeEndpoint(account, endpointId)
        ? { status: 204, body: '', headers: {} }
        : fail(404, `account ${account.authId} has no endpoint ${endpointId}`);
    });
  }
  return fail(404, `no admin resource ${path}`);
}

function accountOf(simulator: Simulator, authId: unknown): AccountState | string {
  if (authId === undefined) {
    const first = simulator.accounts.values().next();
    return first.done === true ? 'the simulator has no account' : first.value;
  }
  if (typeof authId !== 'string') return 'account must be an auth_id';
  return simulator.accounts.get(authId) ?? `no account ${authId}`;
}

function dateTimeField(value: unknown): number | undefined {
  return typeof value === 'string' ? parseEpochMicros(value) : undefined;
}

function parseJsonBody(
  body: string,
): { ok: true; value: unknown } | { ok: false; problem: string } {
  try {
    return { ok: true, value: JSON.parse(body === '' ? '{}' : body) };
  } catch {
    return { ok: false, problem: 'the request body must be JSON' };
  }
}

function parseJsonObjectBody(
  body: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; problem: string } {
  const parsed = parseJsonBody(body);
  if (!parsed.ok) return parsed;
  const { value } = parsed;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, problem: 'the request body must be a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

import { randomUUID } from 'node:crypto';
import { formatIsoMicros, parseEpochMicros } from '../../util/micros.js';
import {
  addCall,
  addEndpoint,
  checkNewCall,
  removeEndpoint,
  type AccountState,
} from '../state/account-state.js';
import { errorAnswer, jsonAnswer, type SimAnswer } from './sim-answer.js';
import { summarizeDataset } from '../state/dataset-summary.js';
import { isRunning, statusAt, timeoutMicros, type LiveStream } from '../state/live-streams.js';
import type { SimulatorState } from '../state/simulator-state.js';
import { RequestRouter, type Route } from './request-router.js';

/**
 * The admin API of the simulator, under /__admin/, without authentication (the simulator listens
 * on 127.0.0.1 by default). It is never faulted, rate limited or counted. JSON in, JSON out.
 *
 * - `GET /__admin/stats` — counters: requests (total, by route, by status), faults injected by
 *   kind, rate-limited requests, trunk call records generated, and per account the most requests
 *   in any 5 s and the most in flight (`accounts`).
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
 * - `GET /__admin/streams` — every started stream: account, ids, service_url, status (started,
 *   connected, stopped, timed-out, failed, disconnected), error, and the times of its occasions.
 * - `POST /__admin/streams/{stream_id}/stop` — stops a running stream as if on request (StopStream);
 *   answers 200 with the stream, 404 for an unknown one, 409 when it has already ended.
 * - `POST /__admin/streams/{stream_id}/disconnect` — drops a connected stream's connection
 *   (DroppedStream); 200, 404, or 409 when it is not connected.
 */
export function handleAdminRequest(
  state: SimulatorState,
  method: string,
  url: URL,
  body: string,
): SimAnswer {
  const apiId = randomUUID();
  const path = url.pathname.replace(/\/+$/, '');
  const match = path.startsWith(ADMIN_PREFIX)
    ? ADMIN_ROUTER.match(method, path.slice(ADMIN_PREFIX.length).split('/'))
    : undefined;
  if (match === undefined || match.kind === 'no-route') {
    return errorAnswer(404, `no admin resource ${path}`, apiId);
  }
  if (match.kind === 'wrong-method') {
    return errorAnswer(
      405,
      `${method} is not allowed on ${path}; use ${match.allowed.join(' or ')}`,
      apiId,
      { Allow: match.allowed.join(', ') },
    );
  }
  return match.handler(state, { params: match.params, body, apiId });
}

/** One admin request, as a handler sees it. */
export interface AdminRequest {
  /** Path parameters, in order, as received (not yet percent-decoded). */
  readonly params: readonly string[];
  readonly body: string;
  /** A fresh api_id for this request. */
  readonly apiId: string;
}

export type AdminHandler = (state: SimulatorState, request: AdminRequest) => SimAnswer;

const ADMIN_PREFIX = '/__admin/';

/** Every admin route, relative to /__admin/. */
export const ADMIN_ROUTES: readonly Route<AdminHandler>[] = [
  { pattern: 'stats', methods: { GET: getStats } },
  { pattern: 'stats/reset', methods: { POST: resetStats } },
  { pattern: 'faults', methods: { GET: getFaults, PUT: replaceFaults } },
  { pattern: 'dataset', methods: { GET: getDataset } },
  { pattern: 'calls', methods: { POST: addTrunkCall } },
  { pattern: 'endpoints', methods: { POST: addSipEndpoint } },
  { pattern: 'endpoints/:auth_id/:endpoint_id', methods: { DELETE: removeSipEndpoint } },
  { pattern: 'streams', methods: { GET: listStreams } },
  { pattern: 'streams/:stream_id/stop', methods: { POST: stopStream } },
  { pattern: 'streams/:stream_id/disconnect', methods: { POST: disconnectStream } },
];

const ADMIN_ROUTER = new RequestRouter(ADMIN_ROUTES);

function fail(request: AdminRequest, status: number, message: string): SimAnswer {
  return errorAnswer(status, message, request.apiId);
}

function getStats(state: SimulatorState): SimAnswer {
  return jsonAnswer(200, state.stats.snapshot());
}

function resetStats(state: SimulatorState): SimAnswer {
  state.stats.reset();
  return jsonAnswer(200, state.stats.snapshot());
}

function getFaults(state: SimulatorState): SimAnswer {
  return jsonAnswer(200, state.faults());
}

function replaceFaults(state: SimulatorState, request: AdminRequest): SimAnswer {
  const input = parseJsonBody(request.body);
  if (!input.ok) return fail(request, 400, input.problem);
  const replaced = state.replaceFaults(input.value);
  return replaced.ok
    ? jsonAnswer(200, replaced.config)
    : fail(request, 400, replaced.problems.join('; '));
}

function getDataset(state: SimulatorState): SimAnswer {
  return jsonAnswer(200, summarizeDataset(state));
}

function addTrunkCall(state: SimulatorState, request: AdminRequest): SimAnswer {
  const input = parseJsonObjectBody(request.body);
  if (!input.ok) return fail(request, 400, input.problem);
  const account = accountOf(state, input.value.account);
  if (typeof account === 'string') return fail(request, 404, account);
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
  if (problems.length > 0 || endMicros === undefined)
    return fail(request, 400, problems.join('; '));
  const call = {
    endMicros,
    ...(visibleFromMicros === undefined ? {} : { visibleFromMicros }),
    overrides: overrides as Record<string, unknown>,
    omit: omit as string[],
  };
  const invalid = checkNewCall(call);
  if (invalid.length > 0) return fail(request, 400, invalid.join('; '));
  return jsonAnswer(201, addCall(account, call, state.now()).record);
}

function addSipEndpoint(state: SimulatorState, request: AdminRequest): SimAnswer {
  const input = parseJsonObjectBody(request.body);
  if (!input.ok) return fail(request, 400, input.problem);
  const account = accountOf(state, input.value.account);
  if (typeof account === 'string') return fail(request, 404, account);
  const registered = input.value.registered;
  if (registered !== undefined && typeof registered !== 'boolean') {
    return fail(request, 400, 'registered must be true or false');
  }
  const overrides = input.value.overrides ?? {};
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
    return fail(request, 400, 'overrides must be an object of field values');
  }
  return jsonAnswer(201, addEndpoint(account, registered, overrides as Record<string, unknown>));
}

function removeSipEndpoint(state: SimulatorState, request: AdminRequest): SimAnswer {
  const account = accountOf(state, decodeURIComponent(request.params[0] ?? ''));
  if (typeof account === 'string') return fail(request, 404, account);
  const endpointId = decodeURIComponent(request.params[1] ?? '');
  return removeEndpoint(account, endpointId)
    ? { status: 204, body: '', headers: {} }
    : fail(request, 404, `account ${account.authId} has no endpoint ${endpointId}`);
}

/** A started stream as the admin API shows it. */
function streamView(account: AccountState, stream: LiveStream, nowMicros: number): object {
  const time = (micros: number | undefined): string | null =>
    micros === undefined ? null : formatIsoMicros(micros);
  return {
    account: account.authId,
    stream_id: stream.streamId,
    call_uuid: stream.callUuid,
    service_url: stream.serviceUrl,
    bidirectional: stream.params.bidirectional,
    status: statusAt(stream, nowMicros),
    error: stream.error ?? null,
    started_at: time(stream.startMicros),
    connected_at: time(stream.connectedMicros),
    ended_at: time(
      stream.endMicros ?? (isRunning(stream, nowMicros) ? undefined : timeoutMicros(stream)),
    ),
  };
}

function listStreams(state: SimulatorState): SimAnswer {
  const now = state.now();
  const streams = [...state.accounts.values()].flatMap((account) =>
    account.streams.all().map((stream) => streamView(account, stream, now)),
  );
  return jsonAnswer(200, { streams });
}

function stopStream(state: SimulatorState, request: AdminRequest): SimAnswer {
  return endStream(state, request, 'stopped');
}

function disconnectStream(state: SimulatorState, request: AdminRequest): SimAnswer {
  return endStream(state, request, 'disconnected');
}

/** Ends a stream on request, records it, and lets the driver act on it (socket, callback). */
function endStream(
  state: SimulatorState,
  request: AdminRequest,
  ending: 'stopped' | 'disconnected',
): SimAnswer {
  const streamId = decodeURIComponent(request.params[0] ?? '');
  const found = state.findStream(streamId);
  if (found === undefined) return fail(request, 404, `no stream ${streamId} was started`);
  const { account, stream } = found;
  const now = state.now();
  const status = statusAt(stream, now);
  if (ending === 'disconnected' && status !== 'connected') {
    return fail(
      request,
      409,
      `stream ${streamId} is ${status}, not connected: only a connected stream can be disconnected`,
    );
  }
  const error =
    ending === 'disconnected'
      ? 'the connection to the WebSocket service was lost (disconnected through the admin API)'
      : undefined;
  if (!isRunning(stream, now) || account.streams.end(stream, ending, now, error) === undefined) {
    return fail(request, 409, `stream ${streamId} has already ended (${status})`);
  }
  state.streamDriver.ended(account, stream);
  return jsonAnswer(200, streamView(account, stream, now));
}

function accountOf(state: SimulatorState, authId: unknown): AccountState | string {
  if (authId === undefined) return state.firstAccount() ?? 'the simulator has no account';
  if (typeof authId !== 'string') return 'account must be an auth_id';
  return state.accounts.get(authId) ?? `no account ${authId}`;
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

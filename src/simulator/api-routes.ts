import { checkStartStreamParams } from '../api/stream-rules.js';
import type {
  ListEnvelopeWire,
  StartStreamResponseWire,
  StreamRecordWire,
} from '../api/wire-types.js';
import { MICROS_PER_SECOND, type EpochMicros } from '../util/micros.js';
import { addCall, type AccountState } from './account-state.js';
import { CALL_INDEX_LIMIT } from './dataset.js';
import type { FaultConfig } from './faults.js';
import { writeMessageJson } from './message-data.js';
import type { Rng } from './prng.js';
import { buildPageMeta, parseListQuery, planTrunkCallQuery } from './rules.js';
import { errorAnswer, jsonAnswer, jsonTextAnswer, type SimAnswer } from './sim-answer.js';
import type { SimulatorStats } from './simulator-stats.js';
import { malformTrunkCallRecord } from './trunk-call-data.js';
import { isGeneratedCallVisible, selectTrunkCalls } from './trunk-call-index.js';

/**
 * The service's operations (spec 4.1–4.6, plus listing a call's streams, A8) over one account's
 * state. Each handler answers one authenticated request; routing, authentication, rate limits and
 * faults are the server's.
 */

/** What a handler works with. */
export interface ApiContext {
  readonly account: AccountState;
  readonly nowMicros: EpochMicros;
  readonly faults: Readonly<FaultConfig>;
  readonly stats: SimulatorStats;
  /** Draws the paging fault. */
  readonly rng: Rng;
  /** A fresh api_id for this request. */
  readonly apiId: string;
}

/** One request, as a handler sees it. */
export interface ApiRequest {
  /** Path parameters, in order. */
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  /** The path as requested (used in meta.next and meta.previous). */
  readonly path: string;
  /** The body text of a POST. */
  readonly body: string;
}

export type ApiHandler = (context: ApiContext, request: ApiRequest) => SimAnswer;

/** A route under /v1/Account/{auth_id}/: segments (`:name` is a parameter) and handlers. */
export interface ApiRoute {
  readonly segments: readonly string[];
  readonly methods: Readonly<Partial<Record<string, ApiHandler>>>;
}

/** Every route of the service, relative to /v1/Account/{auth_id}/. */
export const API_ROUTES: readonly ApiRoute[] = [
  { segments: ['Endpoint'], methods: { GET: listEndpoints } },
  { segments: ['VerifiedCallerId'], methods: { GET: listCallerIds } },
  { segments: ['VerifiedCallerId', ':phone_number'], methods: { GET: listCallerIds } },
  { segments: ['Message', ':message_uuid'], methods: { GET: getMessage } },
  { segments: ['Powerpack', ':powerpack_uuid'], methods: { GET: getPowerpack } },
  { segments: ['Call', ':call_uuid', 'Stream'], methods: { GET: listStreams, POST: startStream } },
  { segments: ['Trunk', 'Call'], methods: { GET: listTrunkCalls } },
];

export type RouteMatch =
  | { kind: 'found'; name: string; handler: ApiHandler; params: string[] }
  | { kind: 'no-route' }
  | { kind: 'wrong-method'; name: string; allowed: string[] };

/** Finds the route of a method and the path segments after /v1/Account/{auth_id}/. */
export function matchApiRoute(method: string, segments: readonly string[]): RouteMatch {
  for (const route of API_ROUTES) {
    if (route.segments.length !== segments.length) continue;
    const params: string[] = [];
    const fits = route.segments.every((expected, k) => {
      const actual = segments[k] ?? '';
      if (expected.startsWith(':')) {
        params.push(actual);
        return actual !== '';
      }
      return actual === expected;
    });
    if (!fits) continue;
    const name = routeName(route);
    const handler = route.methods[method];
    if (handler === undefined) {
      return { kind: 'wrong-method', name, allowed: Object.keys(route.methods) };
    }
    return { kind: 'found', name: `${method} ${name}`, handler, params };
  }
  return { kind: 'no-route' };
}

function routeName(route: ApiRoute): string {
  return route.segments.map((s) => (s.startsWith(':') ? `{${s.slice(1)}}` : s)).join('/');
}

function badRequest(context: ApiContext, problems: readonly string[]): SimAnswer {
  return errorAnswer(400, problems.join('; '), context.apiId);
}

function notFound(context: ApiContext, message: string): SimAnswer {
  return errorAnswer(404, message, context.apiId);
}

function envelope<T>(
  context: ApiContext,
  request: ApiRequest,
  items: readonly T[],
  limit: number,
  offset: number,
): SimAnswer {
  const body: ListEnvelopeWire<T> = {
    api_id: context.apiId,
    meta: buildPageMeta(request.path, request.query, limit, offset, items.length),
    objects: items.slice(offset, offset + limit),
  };
  return jsonAnswer(200, body);
}

/** 4.1: the account's SIP endpoints. */
function listEndpoints(context: ApiContext, request: ApiRequest): SimAnswer {
  const parsed = parseListQuery(request.query);
  if (!parsed.ok) return badRequest(context, parsed.problems);
  const { limit, offset } = parsed.query;
  return envelope(context, request, context.account.endpoints, limit, offset);
}

const COUNTRY_CODE = /^[A-Z]{2}$/;

/**
 * 4.2: verified caller IDs, filtered by alias, subaccount and country (exact matches); with a
 * phone number in the path, the envelope holds that number only, and an unknown number is a 404 (A9).
 */
function listCallerIds(context: ApiContext, request: ApiRequest): SimAnswer {
  const parsed = parseListQuery(request.query, ['alias', 'subaccount', 'country']);
  if (!parsed.ok) return badRequest(context, parsed.problems);
  const { limit, offset, filters } = parsed.query;
  if (filters.country !== undefined && !COUNTRY_CODE.test(filters.country)) {
    return badRequest(context, [
      `country must be a 2-letter ISO country code such as US (got "${filters.country}")`,
    ]);
  }
  let items = context.account.callerIds;
  const phone = request.params[0];
  if (phone !== undefined) {
    // The path segment is already decoded (parseAccountPath); decoding again would misread a '%'.
    const digits = phone.replace(/^\+/, '');
    items = items.filter((item) => item.phone_number === `+${digits}`);
    if (items.length === 0)
      return notFound(context, `no verified caller ID +${digits} on this account`);
  }
  items = items.filter(
    (item) =>
      (filters.alias === undefined || item.alias === filters.alias) &&
      (filters.subaccount === undefined || item.subaccount === filters.subaccount) &&
      (filters.country === undefined || item.country === filters.country),
  );
  return envelope(context, request, items, limit, offset);
}

/** 4.3: one message detail record, with is_domestic twice (spec 2.3). */
function getMessage(context: ApiContext, request: ApiRequest): SimAnswer {
  if (request.query.size > 0)
    return badRequest(context, ['this operation takes no query parameters']);
  const uuid = request.params[0] ?? '';
  const message = context.account.dataset.messageByUuid(uuid);
  if (message === undefined) return notFound(context, `no message ${uuid} on this account`);
  return jsonTextAnswer(200, writeMessageJson(message, context.apiId));
}

/** 4.4: one sender pack, with api_id. */
function getPowerpack(context: ApiContext, request: ApiRequest): SimAnswer {
  if (request.query.size > 0)
    return badRequest(context, ['this operation takes no query parameters']);
  const uuid = (request.params[0] ?? '').toLowerCase();
  const pack = context.account.dataset.packs().find((candidate) => candidate.uuid === uuid);
  if (pack === undefined) return notFound(context, `no powerpack ${uuid} on this account`);
  return jsonAnswer(200, { api_id: context.apiId, ...pack });
}

/**
 * A8: the streams of a call — a live call's started streams, or the recorded streams of a
 * completed call (often none: an empty list). A call neither live nor listed is a 404.
 */
function listStreams(context: ApiContext, request: ApiRequest): SimAnswer {
  const parsed = parseListQuery(request.query);
  if (!parsed.ok) return badRequest(context, parsed.problems);
  const { limit, offset } = parsed.query;
  const callUuid = request.params[0] ?? '';
  const streams = findCallStreams(context, callUuid);
  if (streams === undefined) return notFound(context, `no call ${callUuid} on this account`);
  return envelope(context, request, streams, limit, offset);
}

function findCallStreams(context: ApiContext, callUuid: string): StreamRecordWire[] | undefined {
  const { account, nowMicros } = context;
  const live = account.streams.records(callUuid, nowMicros);
  if (live !== undefined) return live;
  const added = account.overlay.findByUuid(callUuid);
  if (added !== undefined)
    return added.visibleFromMicros <= nowMicros && added.endMicros <= nowMicros ? [] : undefined;
  const index = account.dataset.callIndexOf(callUuid);
  if (index === undefined || index >= CALL_INDEX_LIMIT) return undefined;
  const late = lateArrivals(context.faults);
  if (!isGeneratedCallVisible(account.dataset, index, nowMicros, late)) return undefined;
  return account.dataset.streamsOfCall(index, account.dataset.callFactsAt(index));
}

/**
 * 4.5: starts a stream on a live call. The body is JSON; the parameters are checked by the shared
 * stream rules (every violation listed in one 400); a stream still running to the same URL on the
 * call is a 400 (spec 7). A call that is not in progress is a 404 (assumption A30).
 */
function startStream(context: ApiContext, request: ApiRequest): SimAnswer {
  const callUuid = request.params[0] ?? '';
  if (!context.account.streams.isLive(callUuid)) {
    return notFound(
      context,
      `call ${callUuid} is not in progress; streams start on live calls only`,
    );
  }
  let input: unknown;
  try {
    input = request.body.trim() === '' ? {} : JSON.parse(request.body);
  } catch {
    return badRequest(context, [
      'the request body must be JSON, such as {"service_url": "wss://host/path"}',
    ]);
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return badRequest(context, ['the request body must be a JSON object']);
  }
  const checked = checkStartStreamParams(input as Record<string, unknown>);
  if (!checked.ok)
    return badRequest(
      context,
      checked.violations.map((v) => v.message),
    );
  const started = context.account.streams.start(callUuid, checked.params, context.nowMicros);
  if (!started.ok) {
    return started.reason === 'duplicate'
      ? badRequest(context, [
          `an active stream already exists at ${checked.params.service_url} on call ${callUuid}`,
        ])
      : notFound(context, `call ${callUuid} is not in progress`);
  }
  const body: StartStreamResponseWire = {
    api_id: context.apiId,
    message: 'audio streaming started',
    stream_id: started.stream.streamId,
  };
  return jsonAnswer(201, body);
}

function lateArrivals(faults: Readonly<FaultConfig>): { share: number; delayMicros: number } {
  return { share: faults.late, delayMicros: faults.lateSeconds * MICROS_PER_SECOND };
}

/**
 * 4.6: completed trunk calls, every rule of the spec (see planTrunkCallQuery), in the stable order
 * of assumption A17. Also where the record faults act: malformed records, late arrivals, and calls
 * added inside the range after a page at offset > 0 is served.
 */
function listTrunkCalls(context: ApiContext, request: ApiRequest): SimAnswer {
  const { account, nowMicros, faults, stats } = context;
  const planned = planTrunkCallQuery(request.query, nowMicros);
  if (!planned.ok) return badRequest(context, planned.problems);
  const { plan } = planned;
  const selection = selectTrunkCalls(
    account.dataset,
    account.overlay.list(),
    plan,
    nowMicros,
    lateArrivals(faults),
    account.scanCache,
  );
  const objects = selection.page.map((selected) => {
    if (selected.kind === 'added') return selected.call.record;
    const record = account.dataset.callRecordAt(selected.index);
    const malformation = account.dataset.malformationAt(selected.index, faults.malformed);
    if (malformation === undefined) return record;
    stats.countFault('malformed');
    return malformTrunkCallRecord(
      record,
      malformation,
      account.dataset.malformationVariant(selected.index),
    );
  });
  if (selection.lateWithheld > 0) stats.countFault('lateWithheld', selection.lateWithheld);

  const body: ListEnvelopeWire<unknown> = {
    api_id: context.apiId,
    meta: buildPageMeta(request.path, request.query, plan.limit, plan.offset, selection.totalCount),
    objects,
  };
  const answer = jsonAnswer(200, body);

  // A call lands inside the range while the client is paging: later offsets shift.
  if (plan.offset > 0 && faults.insertDuringPaging > 0 && plan.lowerMicros <= plan.upperMicros) {
    if (context.rng.next() < faults.insertDuringPaging) {
      const lowSeconds = Math.ceil(plan.lowerMicros / MICROS_PER_SECOND);
      const highSeconds = Math.floor(plan.upperMicros / MICROS_PER_SECOND);
      if (lowSeconds <= highSeconds) {
        const endSeconds = lowSeconds + context.rng.below(highSeconds - lowSeconds + 1);
        addCall(account, { endMicros: endSeconds * MICROS_PER_SECOND }, nowMicros);
        stats.countFault('insertedDuringPaging');
      }
    }
  }
  return answer;
}

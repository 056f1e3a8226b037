import { checkStartStreamParams } from '../../api/stream-rules.js';
import type {
  ListEnvelopeWire,
  StartStreamResponseWire,
  StreamRecordWire,
  TrunkCallRecordWire,
} from '../../api/wire-types.js';
import { MICROS_PER_SECOND, type EpochMicros } from '../../util/micros.js';
import { addCall, type AccountState } from '../state/account-state.js';
import { CALL_INDEX_LIMIT } from '../data/dataset.js';
import type { FaultConfig } from '../faults.js';
import { writeMessageJson } from '../data/message-data.js';
import type { Rng } from '../data/prng.js';
import { buildPageMeta, parseListQuery, planTrunkCallQuery } from '../rules.js';
import { RequestRouter, type Route } from './request-router.js';
import {
  errorAnswer,
  jsonAnswer,
  jsonTextAnswer,
  listEnvelopeBytes,
  type SimAnswer,
} from './sim-answer.js';
import type { SimulatorStats } from '../state/simulator-stats.js';
import type { StreamDriver } from '../state/stream-driver.js';
import { malformTrunkCallRecord, trunkCallRecordJson } from '../data/trunk-call-data.js';
import {
  realCallerId,
  realMessageJson,
  realPackJson,
  realSingleCallerId,
  realStreamListMeta,
  realStreamRecord,
  realTrunkCallRecord,
} from '../data/real-shapes.js';
import { isGeneratedCallVisible, selectTrunkCalls } from '../data/trunk-call-index.js';

/**
 * The service's operations (spec 4.1–4.6, plus listing a call's streams, A8) over one account's
 * state. Each handler answers one authenticated request; routing, authentication, rate limits and
 * request faults come before it (handle-api-request.ts).
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
  /** Carries out the life of a stream this request starts. */
  readonly streams: StreamDriver;
  /** Serve the real service's shapes instead of the spec's (data/real-shapes.ts). */
  readonly realShapes: boolean;
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

/** Every route of the service, relative to /v1/Account/{auth_id}/. */
export const API_ROUTES: readonly Route<ApiHandler>[] = [
  { pattern: 'Endpoint', methods: { GET: listEndpoints } },
  { pattern: 'VerifiedCallerId', methods: { GET: listCallerIds } },
  { pattern: 'VerifiedCallerId/:phone_number', methods: { GET: listCallerIds } },
  { pattern: 'Message/:message_uuid', methods: { GET: getMessage } },
  { pattern: 'Powerpack/:powerpack_uuid', methods: { GET: getPowerpack } },
  { pattern: 'Call/:call_uuid/Stream', methods: { GET: listStreams, POST: startStream } },
  { pattern: 'Trunk/Call', methods: { GET: listTrunkCalls } },
];

/** The service's routes, matched on the decoded segments after /v1/Account/{auth_id}/. */
export const API_ROUTER = new RequestRouter(API_ROUTES);

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
  if (!context.realShapes) return envelope(context, request, items, limit, offset);
  // The real service answers one number with the caller ID itself (A9), a list with 9-digit times.
  const single = phone !== undefined ? items[0] : undefined;
  if (single !== undefined) return jsonAnswer(200, realSingleCallerId(single, context.apiId));
  return envelope(context, request, items.map(realCallerId), limit, offset);
}

/** 4.3: one message detail record, with is_domestic twice (spec 2.3). */
function getMessage(context: ApiContext, request: ApiRequest): SimAnswer {
  if (request.query.size > 0)
    return badRequest(context, ['this operation takes no query parameters']);
  const uuid = request.params[0] ?? '';
  const message = context.account.dataset.messageByUuid(uuid);
  if (message === undefined) return notFound(context, `no message ${uuid} on this account`);
  return jsonTextAnswer(
    200,
    context.realShapes
      ? realMessageJson(message, context.apiId)
      : writeMessageJson(message, context.apiId),
  );
}

/** 4.4: one sender pack, with api_id. */
function getPowerpack(context: ApiContext, request: ApiRequest): SimAnswer {
  if (request.query.size > 0)
    return badRequest(context, ['this operation takes no query parameters']);
  const uuid = (request.params[0] ?? '').toLowerCase();
  const pack = context.account.dataset.packs().find((candidate) => candidate.uuid === uuid);
  if (pack === undefined) return notFound(context, `no powerpack ${uuid} on this account`);
  if (context.realShapes) return jsonTextAnswer(200, realPackJson(pack, context.apiId));
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
  if (context.realShapes) {
    return jsonAnswer(200, {
      api_id: context.apiId,
      meta: realStreamListMeta(
        buildPageMeta(request.path, request.query, limit, offset, streams.length),
      ),
      objects: streams.slice(offset, offset + limit).map(realStreamRecord),
    });
  }
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
 * call is a 400 (spec 7). A call that is not in progress is a 404 (assumption A30). A started
 * stream then lives on in the background (connects, streams audio, calls back): see StreamDriver.
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
  context.streams.started(context.account, started.stream);
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
  // A record in the real service's shape when asked for, else as it is: generated records written
  // as JSON text directly (trunkCallRecordJson) or taken as the bytes rendered at start, added ones
  // through JSON.stringify (their text is not the generator's). The page is the same bytes either
  // way.
  const recordText = <T extends TrunkCallRecordWire | Readonly<Record<string, unknown>>>(
    record: T,
    asIs: (record: T) => string,
  ): string => (context.realShapes ? JSON.stringify(realTrunkCallRecord(record)) : asIs(record));
  const rendered = context.realShapes ? undefined : account.renderedCalls;
  // Records served from those bytes count as generated, once for the page.
  let servedRendered = 0;
  const objectTexts = selection.page.map((selected): string | Buffer => {
    if (selected.kind === 'added') return recordText(selected.call.record, JSON.stringify);
    const malformation = account.dataset.malformationAt(selected.index, faults.malformed);
    const bytes = malformation === undefined ? rendered?.textAt(selected.index) : undefined;
    if (bytes !== undefined) {
      servedRendered++;
      return bytes;
    }
    const record = account.dataset.callRecordAt(selected.index);
    if (malformation === undefined) return recordText(record, trunkCallRecordJson);
    stats.countFault('malformed');
    return JSON.stringify(
      malformTrunkCallRecord(
        record,
        malformation,
        account.dataset.malformationVariant(selected.index),
      ),
    );
  });
  if (servedRendered > 0) stats.countRecords(servedRendered);
  if (selection.lateWithheld > 0) stats.countFault('lateWithheld', selection.lateWithheld);

  const meta = buildPageMeta(
    request.path,
    request.query,
    plan.limit,
    plan.offset,
    selection.totalCount,
  );
  const answer = jsonTextAnswer(200, listEnvelopeBytes(context.apiId, meta, objectTexts));

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

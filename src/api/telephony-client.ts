import { ApiError, mayHaveActed } from './api-errors.js';
import { findStartedStream } from './find-started-stream.js';
import {
  type MalformedBody,
  parseListBody,
  parseListOrRecordBody,
  parseRecordBody,
  type ReceivedList,
  type ReceivedRecord,
} from './received-json.js';
import {
  checkStartStreamParams,
  type StartStreamParams,
  type StreamRuleViolation,
} from './stream-rules.js';
import { PAGE_LIMIT_MAX } from '../domain/service-rules.js';
import { encodeTrunkCallQuery, type TrunkCallFilters } from './trunk-call-query.js';
import type { HttpTransport, RequestOptions } from './transport.js';
import type { StartStreamResponseWire } from './wire-types.js';
import { epochMicrosFromMillis } from '../util/micros.js';
import { StoppedError, throwIfStopped } from '../util/stopped-error.js';

/** Stream-start parameters that break the rules of 4.5; nothing was sent. */
export class StreamRulesError extends Error {
  override name = 'StreamRulesError';
  constructor(readonly violations: readonly StreamRuleViolation[]) {
    super(
      `cannot start the stream: ${violations.map((violation) => violation.message).join('; ')}`,
    );
  }
}

/** What became of a stream start (startStreamOnce). */
export type StreamStartOutcome =
  /** The service answered: the stream started. */
  | { readonly kind: 'answered'; readonly answer: StartStreamResponseWire }
  /**
   * The answer was lost (a 5xx, a timeout, a reset after sending), and the call's stream list
   * shows the one stream the request began.
   */
  | {
      readonly kind: 'found';
      readonly streamId: string;
      readonly record: ReceivedRecord;
      readonly lostAnswer: ApiError;
    };

/**
 * A stream start whose answer was lost, and the call's stream list does not say whether it
 * started: none, or several, of the streams to its URL began after it was sent, or the list could
 * not be read. Starting it again may start a second stream.
 */
export class StreamStartUnknownError extends Error {
  override name = 'StreamStartUnknownError';
  constructor(
    readonly callUuid: string,
    readonly lostAnswer: ApiError,
    readonly candidateIds: readonly string[],
    readonly listFailure?: Error,
  ) {
    const why =
      listFailure !== undefined
        ? `listing the call's streams failed too (${listFailure.message})`
        : candidateIds.length === 0
          ? "the call's stream list shows no stream to that URL begun after the request (it may not have started, or the list may not show it yet)"
          : `the call's stream list shows ${candidateIds.length} streams to that URL begun after the request (${candidateIds.join(', ')})`;
    super(
      `whether the stream started is unknown: ${lostAnswer.message}; ${why}. Check with \`telesync lookup streams ${callUuid}\` before starting it again`,
      { cause: listFailure ?? lostAnswer },
    );
  }
}

/** Pages of a call's stream list read to find a stream whose start lost its answer. */
const STREAM_SEARCH_MAX_PAGES = 50;

/** How a listing is paged (iterateTrunkCalls, and the lists that follow meta.next). */
export interface PagingOptions extends RequestOptions {
  /** Pages requested at once after the first; 1 (the default) reads them in offset order. */
  readonly pageConcurrency?: number;
  /**
   * Most pages one listing may take, whatever the service says (total_count, meta.next);
   * MAX_PAGES_PER_LISTING unless given. A listing that needs more fails with PageLimitError.
   */
  readonly maxPages?: number;
}

/** Pages one listing may take unless PagingOptions.maxPages says otherwise (a million calls). */
export const MAX_PAGES_PER_LISTING = 50_000;

/**
 * What the service says about a listing cannot be true for one listing (a total_count of 2^53−1, a
 * meta.next that never ends): nothing more was requested.
 */
export class PageLimitError extends Error {
  override name = 'PageLimitError';
  constructor(
    readonly listPath: string,
    readonly detail: string,
  ) {
    super(
      `${listPath}: ${detail}; not read further (TELESYNC_MAX_PAGES_PER_WINDOW bounds a listing)`,
    );
  }
}

const LISTING_STOPPED = 'stopped on request before the last page was fetched';

/** What an identifier names, for InvalidIdentifierError. */
export type IdentifierKind = 'message_uuid' | 'powerpack_uuid' | 'call_uuid' | 'phone_number';

/**
 * An identifier that cannot go into a request path (`.`, `..`, a slash, anything that is not the
 * form the service uses): nothing was sent. Identifiers come from queue tables other systems fill,
 * so one such value must never become a request to another path.
 */
export class InvalidIdentifierError extends Error {
  override name = 'InvalidIdentifierError';
  constructor(
    readonly kind: IdentifierKind,
    readonly value: string,
  ) {
    super(
      `not a valid ${kind}: ${JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)} (${IDENTIFIER_FORMS[kind]}); nothing was sent`,
    );
  }
}

/**
 * A `meta.next` that names a page outside the list being read (another account, another resource,
 * another host): not followed, since the request would carry this account's credentials there.
 */
export class ForeignNextPageError extends Error {
  override name = 'ForeignNextPageError';
  constructor(
    readonly listPath: string,
    readonly next: string,
  ) {
    super(
      `meta.next ${JSON.stringify(next.length > 200 ? `${next.slice(0, 200)}…` : next)} is not a page of ${listPath}; not followed (only this account's own list is read with its credentials)`,
    );
  }
}

const UUID_FORM = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** E.164 with or without its plus sign, as the service writes caller IDs and their URIs. */
const PHONE_NUMBER_FORM = /^\+?[0-9]{1,20}$/;

const IDENTIFIER_FORMS: Readonly<Record<IdentifierKind, string>> = {
  message_uuid: 'expected a UUID such as 5b40a428-bfc7-4daf-9d06-726c558bf3b8',
  powerpack_uuid: 'expected a UUID such as 5ec4c8c9-cd74-42b5-9e41-0d7670d6bb46',
  call_uuid: 'expected a UUID such as 4f045f7a-b04a-4364-8523-74e6072f4f72',
  phone_number: 'expected an E.164 number of digits, with or without a leading +',
};

/** The identifier, checked to be of its form before it goes into a path; throws otherwise. */
export function checkIdentifier(kind: IdentifierKind, value: string): string {
  const form = kind === 'phone_number' ? PHONE_NUMBER_FORM : UUID_FORM;
  if (typeof value !== 'string' || !form.test(value)) throw new InvalidIdentifierError(kind, value);
  return value;
}

/** Paging of the lists that take limit and offset. */
export interface PageRequest {
  limit?: number;
  offset?: number;
}

export interface VerifiedCallerIdFilters extends PageRequest {
  alias?: string;
  subaccount?: string;
  country?: string;
  /** The optional path segment (assumption A9): lists just that number. */
  phoneNumber?: string;
}

/** Whether an error is the service's "not found" (404). */
export function isNotFound(error: unknown): boolean {
  return error instanceof ApiError && error.status === 404;
}

/**
 * One typed method per operation of the spec, for one account. Records come back as received
 * (exact bytes plus the parsed value): the normalisers, not this client, decide whether a record
 * is well-formed, so one bad record never costs the rest of its page.
 */
export class TelephonyClient {
  readonly #account: string;

  constructor(
    private readonly transport: HttpTransport,
    readonly authId: string,
  ) {
    this.#account = `/v1/Account/${encodeURIComponent(authId)}`;
  }

  /** 4.1: one page of SIP endpoints. */
  listEndpoints(page: PageRequest = {}, options?: RequestOptions): Promise<ReceivedList> {
    return this.#getList(`${this.#account}/Endpoint/`, pageQuery(page), options);
  }

  /** 4.1: every page of SIP endpoints, following meta.next. */
  iterateEndpoints(options?: PagingOptions): AsyncGenerator<ReceivedList> {
    return this.#followNext(`${this.#account}/Endpoint/`, this.listEndpoints({}, options), options);
  }

  /** 4.2: one page of verified caller IDs. */
  async listVerifiedCallerIds(
    filters: VerifiedCallerIdFilters = {},
    options?: RequestOptions,
  ): Promise<ReceivedList> {
    const query = pageQuery(filters);
    if (filters.alias !== undefined) query.set('alias', filters.alias);
    if (filters.subaccount !== undefined) query.set('subaccount', filters.subaccount);
    if (filters.country !== undefined) query.set('country', filters.country);
    if (filters.phoneNumber === undefined) {
      return this.#getList(`${this.#account}/VerifiedCallerId/`, query, options);
    }
    // The real service answers one number with the caller ID itself, not a list (A9).
    const number = encodeURIComponent(checkIdentifier('phone_number', filters.phoneNumber));
    return this.transport.request(
      { method: 'GET', path: `${this.#account}/VerifiedCallerId/${number}`, query },
      parseListOrRecordBody,
      options,
    );
  }

  /** 4.2: every page of verified caller IDs, following meta.next. */
  iterateVerifiedCallerIds(
    filters: Omit<VerifiedCallerIdFilters, 'offset'> = {},
    options?: PagingOptions,
  ): AsyncGenerator<ReceivedList> {
    const path =
      filters.phoneNumber === undefined
        ? `${this.#account}/VerifiedCallerId/`
        : `${this.#account}/VerifiedCallerId/${encodeURIComponent(filters.phoneNumber)}`;
    return this.#followNext(path, this.listVerifiedCallerIds(filters, options), options);
  }

  /** 4.3: one message detail record. A 404 throws ApiError (see isNotFound). */
  async getMessage(messageUuid: string, options?: RequestOptions): Promise<ReceivedRecord> {
    const uuid = checkIdentifier('message_uuid', messageUuid);
    return this.#getRecord(`${this.#account}/Message/${uuid}/`, options);
  }

  /** 4.4: one sender pack. A 404 throws ApiError (see isNotFound). */
  async getPowerpack(packUuid: string, options?: RequestOptions): Promise<ReceivedRecord> {
    const uuid = checkIdentifier('powerpack_uuid', packUuid);
    return this.#getRecord(`${this.#account}/Powerpack/${uuid}/`, options);
  }

  /**
   * 4.5: starts streaming a live call's audio. The parameters are checked against every rule of
   * 4.5 first; a violation throws StreamRulesError and nothing is sent.
   */
  async startStream(
    callUuid: string,
    params: StartStreamParams,
    options?: RequestOptions,
  ): Promise<StartStreamResponseWire> {
    const uuid = checkIdentifier('call_uuid', callUuid);
    const checked = checkStartStreamParams(params as unknown as Record<string, unknown>);
    if (!checked.ok) throw new StreamRulesError(checked.violations);
    return this.transport.request(
      {
        method: 'POST',
        path: `${this.#account}/Call/${uuid}/Stream/`,
        body: checked.params,
      },
      readStartStreamResponse,
      options,
    );
  }

  /**
   * 4.5, sent at most once: starts the stream (the transport never sends a POST twice when the
   * service may have acted on it). When the answer is lost after sending (a 5xx, a timeout, a
   * reset), the call's stream list is read for the stream the request began (findStartedStream):
   * exactly one is `found`; otherwise StreamStartUnknownError. A refusal (4xx) throws its ApiError.
   */
  async startStreamOnce(
    callUuid: string,
    params: StartStreamParams,
    options?: RequestOptions,
  ): Promise<StreamStartOutcome> {
    const sentAtMicros = epochMicrosFromMillis(Date.now());
    try {
      return { kind: 'answered', answer: await this.startStream(callUuid, params, options) };
    } catch (error) {
      if (!(error instanceof ApiError) || !mayHaveActed(error)) throw error;
      const records: ReceivedRecord[] = [];
      try {
        const pages = this.iterateCallStreams(callUuid, {
          ...options,
          maxPages: STREAM_SEARCH_MAX_PAGES,
        });
        for await (const page of pages) records.push(...page.records);
      } catch (listError) {
        throw new StreamStartUnknownError(
          callUuid,
          error,
          [],
          listError instanceof Error ? listError : new Error(String(listError)),
        );
      }
      const { candidates } = findStartedStream(records, {
        serviceUrl: params.service_url,
        sentAtMicros,
      });
      const [only] = candidates;
      if (only === undefined || candidates.length > 1) {
        throw new StreamStartUnknownError(
          callUuid,
          error,
          candidates.map((candidate) => candidate.streamId),
        );
      }
      return { kind: 'found', streamId: only.streamId, record: only.record, lostAnswer: error };
    }
  }

  /** 4.5 (assumption A8): one page of the stream records of a call. */
  async listCallStreams(
    callUuid: string,
    page: PageRequest = {},
    options?: RequestOptions,
  ): Promise<ReceivedList> {
    const uuid = checkIdentifier('call_uuid', callUuid);
    return this.#getList(`${this.#account}/Call/${uuid}/Stream/`, pageQuery(page), options);
  }

  /** Every page of the stream records of a call, following meta.next. */
  iterateCallStreams(callUuid: string, options?: PagingOptions): AsyncGenerator<ReceivedList> {
    const uuid = checkIdentifier('call_uuid', callUuid);
    return this.#followNext(
      `${this.#account}/Call/${uuid}/Stream/`,
      this.listCallStreams(uuid, {}, options),
      options,
    );
  }

  /** 4.6: one page of completed trunk call records matching `filters`. */
  listTrunkCalls(filters: TrunkCallFilters, options?: RequestOptions): Promise<ReceivedList> {
    return this.#getList(`${this.#account}/Trunk/Call/`, encodeTrunkCallQuery(filters), options);
  }

  /**
   * 4.6: how many calls match `filters`, asked with limit=1 (one small request, whatever the
   * count).
   */
  async countTrunkCalls(
    filters: Omit<TrunkCallFilters, 'limit' | 'offset'>,
    options?: RequestOptions,
  ): Promise<number> {
    const page = await this.listTrunkCalls({ ...filters, limit: 1, offset: 0 }, options);
    return page.meta.total_count;
  }

  /**
   * 4.6: every page of the calls matching `filters`, by offset (20 a page). The first page gives
   * total_count; the other offsets are then requested together, at most `pageConcurrency` in
   * flight (the transport's limiter still decides when each goes out), and each page is yielded as
   * it arrives: in offset order only with the default concurrency of 1. A failed page stops new
   * requests; the pages already in flight are still yielded, then its error is thrown. Likewise
   * `stopSignal`, checked between pages, never cancels a request in flight: the pages in flight are
   * yielded, then StoppedError is thrown, so no caller takes part of a listing for all of it.
   */
  async *iterateTrunkCalls(
    filters: Omit<TrunkCallFilters, 'limit' | 'offset'>,
    options: PagingOptions = {},
  ): AsyncGenerator<ReceivedList> {
    const {
      pageConcurrency: wanted = 1,
      maxPages = MAX_PAGES_PER_LISTING,
      ...requestOptions
    } = options;
    const { stopSignal } = requestOptions;
    const pageConcurrency = Math.max(1, wanted);
    const stopRequested = (): boolean => stopSignal?.aborted === true;
    const list = (offset: number): Promise<ReceivedList> =>
      this.listTrunkCalls({ ...filters, limit: PAGE_LIMIT_MAX, offset }, requestOptions);

    throwIfStopped(stopSignal, LISTING_STOPPED);
    const first = await list(0);
    const total = first.meta.total_count;
    // Offsets are made one at a time below, never as a list; the count is still bounded before
    // any, so a total_count of 2^53−1 fails here instead of paging for ever.
    const pagesNeeded = Math.ceil(total / PAGE_LIMIT_MAX);
    if (!Number.isSafeInteger(total) || total < 0 || pagesNeeded > maxPages) {
      throw new PageLimitError(
        `${this.#account}/Trunk/Call/`,
        `total_count ${total} would take ${pagesNeeded} pages of ${PAGE_LIMIT_MAX}, more than the ${maxPages} allowed for one window`,
      );
    }
    yield first;

    // Pages requested and not yet yielded (in flight, or arrived and waiting) stay within the
    // limit, so a slow consumer holds at most `pageConcurrency` pages.
    let nextOffset = PAGE_LIMIT_MAX;
    let inFlight = 0;
    const arrived: ({ page: ReceivedList } | { error: unknown })[] = [];
    let failure: { error: unknown } | undefined;
    let wake: (() => void) | undefined;
    const settle = (arrival: { page: ReceivedList } | { error: unknown }): void => {
      inFlight--;
      arrived.push(arrival);
      wake?.();
    };
    const launch = (): void => {
      while (
        failure === undefined &&
        nextOffset < total &&
        inFlight + arrived.length < pageConcurrency &&
        !stopRequested()
      ) {
        inFlight++;
        list(nextOffset).then(
          (page) => settle({ page }),
          (error: unknown) => settle({ error }),
        );
        nextOffset += PAGE_LIMIT_MAX;
      }
    };

    launch();
    while (inFlight > 0 || arrived.length > 0) {
      if (arrived.length === 0) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      const arrival = arrived.shift()!;
      if ('error' in arrival) {
        failure ??= arrival;
        continue;
      }
      // The next request goes out before the consumer takes this page, as a worker would send it.
      launch();
      yield arrival.page;
    }
    if (failure !== undefined) throw failure.error;
    // Pages were left unrequested only because the stop came.
    if (nextOffset < total) throw new StoppedError(LISTING_STOPPED, { cause: stopSignal?.reason });
  }

  #getList(path: string, query: URLSearchParams, options?: RequestOptions): Promise<ReceivedList> {
    return this.transport.request({ method: 'GET', path, query }, parseListBody, options);
  }

  #getRecord(path: string, options?: RequestOptions): Promise<ReceivedRecord> {
    return this.transport.request({ method: 'GET', path }, parseRecordBody, options);
  }

  /**
   * Yields the first page, then each page meta.next names, until it is null. Only a next page of
   * the same list (`listPath`, this account's) is followed: anything else throws
   * ForeignNextPageError before a request is made.
   */
  async *#followNext(
    listPath: string,
    first: Promise<ReceivedList>,
    options: PagingOptions = {},
  ): AsyncGenerator<ReceivedList> {
    const {
      pageConcurrency: _sequential,
      maxPages = MAX_PAGES_PER_LISTING,
      ...requestOptions
    } = options;
    const { stopSignal } = requestOptions;
    let page = await first;
    const seen = new Set<string>();
    let pages = 1;
    let records = 0;
    for (;;) {
      yield page;
      records += page.records.length;
      const next = page.meta.next;
      if (next === null || next === '') return;
      // A service that pointed back at a page already read would otherwise loop for ever.
      if (seen.has(next)) throw new PageLimitError(listPath, `meta.next repeats ${next}`);
      // One that always points at a new page is bounded by its own count, then by the hard cap.
      const total = page.meta.total_count;
      if (Number.isSafeInteger(total) && records >= total) {
        throw new PageLimitError(
          listPath,
          `meta.next still names a page after ${records} records of the total_count of ${total}`,
        );
      }
      if (pages >= maxPages) {
        throw new PageLimitError(
          listPath,
          `meta.next still names a page after ${pages} pages, the most allowed for one listing`,
        );
      }
      throwIfStopped(stopSignal, LISTING_STOPPED);
      seen.add(next);
      const url = nextPageUrl(listPath, next);
      page = await this.transport.request(
        { method: 'GET', path: url.pathname, query: url.searchParams },
        parseListBody,
        requestOptions,
      );
      pages++;
    }
  }
}

/** Stands in for the service's origin when resolving a `meta.next` (assumption A6: a path). */
const SERVICE_ORIGIN = 'http://service.invalid';

/**
 * The URL `next` names, when it is a page of the list at `listPath`: same origin (a relative
 * reference), and the same path once resolved (`..` and encoded dots included) up to a trailing
 * slash. Throws ForeignNextPageError otherwise.
 */
function nextPageUrl(listPath: string, next: string): URL {
  let url: URL;
  try {
    url = new URL(next, `${SERVICE_ORIGIN}${listPath}`);
  } catch {
    throw new ForeignNextPageError(listPath, next);
  }
  const trimmed = (path: string): string => (path.endsWith('/') ? path.slice(0, -1) : path);
  if (
    url.origin !== SERVICE_ORIGIN ||
    url.username !== '' ||
    url.password !== '' ||
    trimmed(url.pathname) !== trimmed(listPath)
  ) {
    throw new ForeignNextPageError(listPath, next);
  }
  return url;
}

function pageQuery(page: PageRequest): URLSearchParams {
  const query = new URLSearchParams();
  if (page.limit !== undefined) query.set('limit', String(page.limit));
  if (page.offset !== undefined) query.set('offset', String(page.offset));
  return query;
}

function readStartStreamResponse(
  body: Uint8Array,
  malformed: MalformedBody,
): StartStreamResponseWire {
  const record = parseRecordBody(body, malformed);
  const value = record.value as Partial<StartStreamResponseWire> | undefined;
  if (value === undefined || typeof value !== 'object' || value === null) {
    throw malformed(record.problem ?? 'the answer to a stream start is not a JSON object');
  }
  return {
    api_id: typeof value.api_id === 'string' ? value.api_id : '',
    message: typeof value.message === 'string' ? value.message : '',
    stream_id: typeof value.stream_id === 'string' ? value.stream_id : '',
  };
}

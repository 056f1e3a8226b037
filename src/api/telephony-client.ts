import { ApiError } from './api-errors.js';
import {
  MalformedBodyError,
  parseListBody,
  parseRecordBody,
  type ReceivedList,
  type ReceivedRecord,
} from './received-json.js';
import {
  checkStartStreamParams,
  type StartStreamParams,
  type StreamRuleViolation,
} from './stream-rules.js';
import {
  encodeTrunkCallQuery,
  TRUNK_PAGE_LIMIT_MAX,
  type TrunkCallFilters,
} from './trunk-call-query.js';
import type { HttpTransport, RequestOptions } from './transport.js';
import type { StartStreamResponseWire } from './wire-types.js';

/** Stream-start parameters that break the rules of 4.5; nothing was sent. */
export class StreamRulesError extends Error {
  override name = 'StreamRulesError';
  constructor(readonly violations: readonly StreamRuleViolation[]) {
    super(
      `cannot start the stream: ${violations.map((violation) => violation.message).join('; ')}`,
    );
  }
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
  iterateEndpoints(options?: RequestOptions): AsyncGenerator<ReceivedList> {
    return this.#followNext(this.listEndpoints({}, options), options);
  }

  /** 4.2: one page of verified caller IDs. */
  listVerifiedCallerIds(
    filters: VerifiedCallerIdFilters = {},
    options?: RequestOptions,
  ): Promise<ReceivedList> {
    const query = pageQuery(filters);
    if (filters.alias !== undefined) query.set('alias', filters.alias);
    if (filters.subaccount !== undefined) query.set('subaccount', filters.subaccount);
    if (filters.country !== undefined) query.set('country', filters.country);
    const segment =
      filters.phoneNumber !== undefined ? `${encodeURIComponent(filters.phoneNumber)}` : '';
    return this.#getList(`${this.#account}/VerifiedCallerId/${segment}`, query, options);
  }

  /** 4.2: every page of verified caller IDs, following meta.next. */
  iterateVerifiedCallerIds(
    filters: Omit<VerifiedCallerIdFilters, 'offset'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<ReceivedList> {
    return this.#followNext(this.listVerifiedCallerIds(filters, options), options);
  }

  /** 4.3: one message detail record. A 404 throws ApiError (see isNotFound). */
  getMessage(messageUuid: string, options?: RequestOptions): Promise<ReceivedRecord> {
    return this.#getRecord(`${this.#account}/Message/${encodeURIComponent(messageUuid)}/`, options);
  }

  /** 4.4: one sender pack. A 404 throws ApiError (see isNotFound). */
  getPowerpack(packUuid: string, options?: RequestOptions): Promise<ReceivedRecord> {
    return this.#getRecord(`${this.#account}/Powerpack/${encodeURIComponent(packUuid)}/`, options);
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
    const checked = checkStartStreamParams(params as unknown as Record<string, unknown>);
    if (!checked.ok) throw new StreamRulesError(checked.violations);
    return this.transport.request(
      {
        method: 'POST',
        path: `${this.#account}/Call/${encodeURIComponent(callUuid)}/Stream/`,
        body: checked.params,
      },
      readStartStreamResponse,
      options,
    );
  }

  /** 4.5 (assumption A8): one page of the stream records of a call. */
  listCallStreams(
    callUuid: string,
    page: PageRequest = {},
    options?: RequestOptions,
  ): Promise<ReceivedList> {
    return this.#getList(
      `${this.#account}/Call/${encodeURIComponent(callUuid)}/Stream/`,
      pageQuery(page),
      options,
    );
  }

  /** Every page of the stream records of a call, following meta.next. */
  iterateCallStreams(callUuid: string, options?: RequestOptions): AsyncGenerator<ReceivedList> {
    return this.#followNext(this.listCallStreams(callUuid, {}, options), options);
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
   * 4.6: every page of the calls matching `filters`, one after the other, by offset (20 a page).
   * Callers that want pages concurrently use listTrunkCalls with their own offsets.
   */
  async *iterateTrunkCalls(
    filters: Omit<TrunkCallFilters, 'limit' | 'offset'>,
    options?: RequestOptions,
  ): AsyncGenerator<ReceivedList> {
    for (let offset = 0; ; offset += TRUNK_PAGE_LIMIT_MAX) {
      const page = await this.listTrunkCalls(
        { ...filters, limit: TRUNK_PAGE_LIMIT_MAX, offset },
        options,
      );
      yield page;
      if (page.records.length === 0 || offset + page.records.length >= page.meta.total_count)
        return;
    }
  }

  #getList(path: string, query: URLSearchParams, options?: RequestOptions): Promise<ReceivedList> {
    return this.transport.request({ method: 'GET', path, query }, parseListBody, options);
  }

  #getRecord(path: string, options?: RequestOptions): Promise<ReceivedRecord> {
    return this.transport.request({ method: 'GET', path }, parseRecordBody, options);
  }

  /** Yields the first page, then each page meta.next names, until it is null. */
  async *#followNext(
    first: Promise<ReceivedList>,
    options?: RequestOptions,
  ): AsyncGenerator<ReceivedList> {
    let page = await first;
    const seen = new Set<string>();
    for (;;) {
      yield page;
      const next = page.meta.next;
      if (next === null || next === '') return;
      // A service that pointed back at a page already read would otherwise loop for ever.
      if (seen.has(next)) throw new MalformedBodyError(`meta.next repeats ${next}`);
      seen.add(next);
      const url = new URL(next, 'http://service.invalid');
      page = await this.transport.request(
        { method: 'GET', path: url.pathname, query: url.searchParams },
        parseListBody,
        options,
      );
    }
  }
}

function pageQuery(page: PageRequest): URLSearchParams {
  const query = new URLSearchParams();
  if (page.limit !== undefined) query.set('limit', String(page.limit));
  if (page.offset !== undefined) query.set('offset', String(page.offset));
  return query;
}

function readStartStreamResponse(body: Uint8Array): StartStreamResponseWire {
  const record = parseRecordBody(body);
  const value = record.value as Partial<StartStreamResponseWire> | undefined;
  if (value === undefined || typeof value !== 'object' || value === null) {
    throw new MalformedBodyError(
      record.problem ?? 'the answer to a stream start is not a JSON object',
    );
  }
  return {
    api_id: typeof value.api_id === 'string' ? value.api_id : '',
    message: typeof value.message === 'string' ? value.message : '',
    stream_id: typeof value.stream_id === 'string' ? value.stream_id : '',
  };
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the service that serves a trunk-call list made of records given as raw bytes:
 * invalid UTF-8, duplicate keys, NUL escapes, a 5 MB field — what no JSON serializer would write.
 * Every trunk-call request, whatever its end_time range, gets these records, paged by limit and
 * offset with a consistent total_count; any other path is a 404.
 */
export interface HostileService {
  readonly url: string;
  readonly requests: () => number;
  /** Replaces how the service misbehaves (besides its records), from the next request on. */
  setBehaviour(behaviour: HostileBehaviour): void;
  close(): Promise<void>;
}

/** What a review that attacked the running tool made the service do. */
export interface HostileBehaviour {
  /** total_count told on every trunk-call page instead of the true count (2^53−1, say). */
  readonly totalCount?: number;
  /** Records added to the first trunk-call page, past its limit when that page is full. */
  readonly pastLimit?: readonly Buffer[];
  /** Every request answered 429 with this Retry-After, in seconds. */
  readonly retryAfterSeconds?: number;
  /** Every trunk-call answer is a body of this many bytes (a list that never ends). */
  readonly bodyBytes?: number;
  /** Every request answered 302 to this address. */
  readonly redirectTo?: string;
  /**
   * The endpoint list: `endless`, a meta.next that always names a new page of new endpoints;
   * `foreign`, a meta.next that names another account's list.
   */
  readonly endpoints?: 'endless' | 'foreign';
  /**
   * Every request answered with this status and an error body that echoes the request's
   * Authorization header, every character of it a JSON `\u` escape.
   */
  readonly echoAuthorizationEscaped?: number;
}

export async function startHostileService(
  records: readonly Buffer[],
  accountId: string,
  initial: HostileBehaviour = {},
): Promise<HostileService> {
  let requests = 0;
  let behaviour = initial;
  const endpointList = `/v1/Account/${accountId}/Endpoint/`;
  const server: Server = createServer((req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://hostile.invalid');
    if (behaviour.redirectTo !== undefined) {
      res.writeHead(302, { location: behaviour.redirectTo });
      res.end();
      return;
    }
    if (behaviour.echoAuthorizationEscaped !== undefined) {
      const escaped = [...(req.headers.authorization ?? '')]
        .map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
        .join('');
      res.writeHead(behaviour.echoAuthorizationEscaped, { 'content-type': 'application/json' });
      res.end(`{"api_id":"echo","error":"you sent ${escaped}"}`);
      return;
    }
    if (behaviour.retryAfterSeconds !== undefined) {
      res.writeHead(429, {
        'content-type': 'application/json',
        'retry-after': String(behaviour.retryAfterSeconds),
      });
      res.end(JSON.stringify({ api_id: 'x', error: 'too many requests' }));
      return;
    }
    if (url.pathname === endpointList && behaviour.endpoints !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(endpointPage(url, accountId, behaviour.endpoints));
      return;
    }
    if (url.pathname !== `/v1/Account/${accountId}/Trunk/Call/`) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ api_id: 'x', error: 'not found' }));
      return;
    }
    if (behaviour.bodyBytes !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"api_id":"big","meta":{},"objects":["');
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      let left = behaviour.bodyBytes;
      const pump = (): void => {
        while (left > 0) {
          left -= chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end('"]}');
      };
      res.on('error', () => undefined);
      pump();
      return;
    }
    const limit = Number(url.searchParams.get('limit') ?? 20);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const page = [
      ...records.slice(offset, offset + limit),
      ...(offset === 0 ? (behaviour.pastLimit ?? []) : []),
    ];
    const meta = {
      limit,
      offset,
      next: null,
      previous: null,
      total_count: behaviour.totalCount ?? records.length,
    };
    const body = Buffer.concat([
      Buffer.from(`{"api_id":"hostile-${requests}","meta":${JSON.stringify(meta)},"objects":[`),
      ...page.flatMap((record, index) => (index === 0 ? [record] : [Buffer.from(','), record])),
      Buffer.from(']}'),
    ]);
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': String(body.length),
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    setBehaviour: (next) => (behaviour = next),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A well-formed trunk call record (spec 2.6) ending at `endTime` (service form), with overrides. */
export function trunkCallJson(
  callUuid: string,
  endTime: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    call_uuid: callUuid,
    parent_call_uuid: null,
    conference_uuid: null,
    api_id: `api-${callUuid}`,
    resource_uri: `/v1/Account/X/Call/${callUuid}/`,
    call_direction: 'outbound',
    call_state: 'ANSWER',
    from_number: '14155550100',
    to_number: 'sip:alice@example.com',
    initiation_time: endTime,
    answer_time: endTime,
    end_time: endTime,
    call_duration: 60,
    bill_duration: 60,
    billed_duration: 60,
    total_rate: '0.00850',
    total_amount: '0.00850',
    hangup_cause_code: 4000,
    hangup_cause_name: 'Normal Hangup',
    hangup_source: 'Caller',
    stir_verification: 'Verified',
    Stir_attestation: 'A',
    voice_network_group: '',
    source_ip: '10.0.0.1',
    ...overrides,
  };
}

/** A page of the endpoint list: 20 new endpoints and a meta.next that never runs out. */
function endpointPage(url: URL, accountId: string, kind: 'endless' | 'foreign'): string {
  const offset = Number(url.searchParams.get('offset') ?? 0);
  const limit = 20;
  const objects = Array.from({ length: limit }, (_, k) => ({
    endpoint_id: String(100_000 + offset + k),
    username: `hostile${offset + k}`,
    alias: `Hostile ${offset + k}`,
    sip_uri: `sip:hostile${offset + k}@phone.example.com`,
    application: `/v1/Account/${accountId}/Application/1/`,
    resource_uri: `/v1/Account/${accountId}/Endpoint/${100_000 + offset + k}/`,
    sip_registered: 'false',
  }));
  const nextPath =
    kind === 'endless'
      ? `/v1/Account/${accountId}/Endpoint/?limit=${limit}&offset=${offset + limit}`
      : `/v1/Account/MA_SOMEONE_ELSE/Endpoint/?limit=${limit}&offset=${offset + limit}`;
  return JSON.stringify({
    api_id: `endpoints-${offset}`,
    meta: { limit, offset, total_count: 40, next: nextPath, previous: null },
    objects,
  });
}

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
  close(): Promise<void>;
}

export async function startHostileService(
  records: readonly Buffer[],
  accountId: string,
): Promise<HostileService> {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://hostile.invalid');
    if (url.pathname !== `/v1/Account/${accountId}/Trunk/Call/`) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ api_id: 'x', error: 'not found' }));
      return;
    }
    const limit = Number(url.searchParams.get('limit') ?? 20);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const page = records.slice(offset, offset + limit);
    const meta = { limit, offset, next: null, previous: null, total_count: records.length };
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

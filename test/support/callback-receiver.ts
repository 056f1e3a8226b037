import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A status-callback receiver on 127.0.0.1 (node:http) that records every request as received:
 * method, path with query, headers, form fields. It answers 200, or 500 while `failNext` is above
 * zero (counting down), or 500 to everything with `failAll`, or never with `hang`.
 */

export interface ReceivedCallback {
  readonly method: string;
  /** Path and query as received. */
  readonly url: string;
  /** The absolute URL the sender called: the receiver's base plus `url`. */
  readonly fullUrl: string;
  readonly headers: IncomingMessage['headers'];
  /** The form fields of a POST body (empty for GET). */
  readonly form: Record<string, string>;
  /** The fields wherever they came: the query for GET, the body for POST. */
  readonly fields: Record<string, string>;
  /** The status it was answered with. */
  readonly status: number;
}

export interface CallbackReceiver {
  /** http://127.0.0.1:{port} */
  readonly url: string;
  readonly received: ReceivedCallback[];
  failNext: number;
  failAll: boolean;
  hang: boolean;
  close(): Promise<void>;
}

export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  let base = '';
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = request.url ?? '/';
      const form =
        request.method === 'POST'
          ? Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')))
          : {};
      const query = Object.fromEntries(new URL(url, base).searchParams);
      if (receiver.hang) return;
      let status = 200;
      if (receiver.failAll) status = 500;
      else if (receiver.failNext > 0) {
        receiver.failNext--;
        status = 500;
      }
      received.push({
        method: request.method ?? '',
        url,
        fullUrl: `${base}${url}`,
        headers: request.headers,
        form,
        fields: request.method === 'POST' ? form : query,
        status,
      });
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const receiver: CallbackReceiver = {
    url: base,
    received,
    failNext: 0,
    failAll: false,
    hang: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return receiver;
}

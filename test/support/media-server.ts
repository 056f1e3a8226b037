import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A stand-in for a user's media server: a WebSocket server over TLS on 127.0.0.1 that records
 * every connection (its path, upgrade headers, every message received) and lets the test answer
 * on it or close it. Connections to a path starting with /reject are refused with a 403.
 */

export interface MediaSession {
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Every text message received, parsed. */
  readonly messages: Record<string, unknown>[];
  readonly socket: WebSocket;
  /** Resolves with the close code when the connection closes. */
  readonly closed: Promise<number>;
}

export interface MediaServer {
  /** wss://127.0.0.1:{port} */
  readonly url: string;
  readonly sessions: MediaSession[];
  /** Waits for the connection to `path` (the first one made to it). */
  session(path: string, timeoutMs?: number): Promise<MediaSession>;
  close(): Promise<void>;
}

export async function startMediaServer(tls: { cert: string; key: string }): Promise<MediaServer> {
  const https: Server = createServer({ cert: tls.cert, key: tls.key });
  const sockets = new WebSocketServer({
    server: https,
    verifyClient: (info, done) => {
      if ((info.req.url ?? '').startsWith('/reject')) done(false, 403, 'Forbidden');
      else done(true);
    },
  });
  const sessions: MediaSession[] = [];
  sockets.on('connection', (socket, request) => {
    const messages: Record<string, unknown>[] = [];
    socket.on('message', (data, isBinary) => {
      if (!isBinary)
        messages.push(JSON.parse((data as Buffer).toString('utf8')) as Record<string, unknown>);
    });
    sessions.push({
      path: request.url ?? '',
      headers: request.headers,
      messages,
      socket,
      closed: new Promise((resolve) => socket.once('close', (code) => resolve(code))),
    });
  });
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  const { port } = https.address() as AddressInfo;
  return {
    url: `wss://127.0.0.1:${port}`,
    sessions,
    session: (path, timeoutMs = 5000) =>
      waitFor(
        () => sessions.find((session) => session.path === path),
        timeoutMs,
        `a connection to ${path}`,
      ),
    close: async () => {
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      await new Promise<void>((resolve) => {
        https.close(() => resolve());
        https.closeAllConnections();
      });
    },
  };
}

/** Polls `probe` every 10 ms until it gives a value; rejects after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => T | undefined | false,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

import type { IncomingMessage } from 'node:http';

/** What a route answers; the server writes it (with `cache-control: no-store`). */
export interface HttpAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/**
 * One endpoint of telesync's HTTP server: a method and an exact path, and how to answer. A new
 * route is a file of its own in src/http that exports a `create…Route` function; the app that
 * serves it adds it to the server's list.
 */
export interface HttpRoute {
  readonly method: 'GET' | 'POST';
  /** The exact path, without the query string, e.g. `/healthz`. */
  readonly path: string;
  /** Throwing answers 500 with a body that says nothing of the error (which is logged). */
  answer(request: IncomingMessage): Promise<HttpAnswer>;
}

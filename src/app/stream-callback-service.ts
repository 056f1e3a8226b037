import { CallbackNonceLedger } from '../api/callback-replay-guard.js';
import type { AccountConfig, TelesyncConfig } from '../config/config-types.js';
import type { Database } from '../db/connect.js';
import { insertStreamEvent } from '../db/repositories/stream-events-repository.js';
import type { HttpRoute } from '../http/http-route.js';
import { streamCallbackUrl, type HttpSettings } from '../http/http-settings.js';
import {
  createStreamCallbackRoutes,
  STREAM_CALLBACK_VERDICTS,
  type StreamCallbackVerdict,
} from '../http/stream-callback-route.js';
import type { Logger } from '../util/logger.js';
import { epochMicrosFromMillis } from '../util/micros.js';

/**
 * The receiving side of stream status callbacks, for any process that serves HTTP: `schedule`
 * today, the worker next (its app calls createStreamCallbackService the same way and adds `routes`
 * to its server). Off, with the reason, when the service cannot reach telesync.
 */
export type StreamCallbackService =
  | {
      readonly on: true;
      /** The address the service sends callbacks to (and the signatures are checked against). */
      readonly callbackUrl: string;
      /** The route's path on this process's server. */
      readonly path: string;
      /** GET and POST of the route. */
      readonly routes: readonly HttpRoute[];
      /** Their own listener (TELESYNC_CALLBACK_HOST/PORT); undefined: the main HTTP server. */
      readonly listen: HttpSettings | undefined;
    }
  | {
      readonly on: false;
      /** Why callbacks are off and how to turn them on, for the start-up message. */
      readonly reason: string;
    };

/** Where the callback outcomes are counted (the process's metrics). */
export interface StreamCallbackCounter {
  initializeStreamCallbacks(verdicts: readonly StreamCallbackVerdict[]): void;
  recordStreamCallback(verdict: StreamCallbackVerdict): void;
}

export interface StreamCallbackServiceInput {
  readonly config: TelesyncConfig;
  /** The accounts whose tokens may sign callbacks (every configured one). */
  readonly accounts: readonly AccountConfig[];
  readonly database: Database;
  readonly log: Logger;
  readonly metrics: StreamCallbackCounter;
  /** Whether this process serves HTTP at all (TELESYNC_HTTP_PORT is not 0). */
  readonly serving: boolean;
}

/** Builds the callback routes from the configuration, or says why there are none. */
export function createStreamCallbackService(
  input: StreamCallbackServiceInput,
): StreamCallbackService {
  const { config, database, log, metrics } = input;
  const callbackUrl = streamCallbackUrl(config.callbacks);
  if (callbackUrl === undefined)
    return {
      on: false,
      reason:
        'TELESYNC_PUBLIC_URL is not set, so the service cannot be told where to send them; set it to ' +
        "the address the service reaches this process's HTTP server at (e.g. https://telesync.example.com)",
    };
  if (!input.serving)
    return {
      on: false,
      reason: `TELESYNC_HTTP_PORT=0: no HTTP server to receive them at ${callbackUrl}`,
    };
  metrics.initializeStreamCallbacks(STREAM_CALLBACK_VERDICTS);
  const routes = createStreamCallbackRoutes({
    path: config.callbacks.path,
    callbackUrl,
    accounts: input.accounts,
    storeEvent: (event) =>
      database.db.transaction().execute((trx) => insertStreamEvent(trx, event)),
    nonces: new CallbackNonceLedger(),
    now: () => epochMicrosFromMillis(Date.now()),
    onVerdict: (verdict) => metrics.recordStreamCallback(verdict),
    log,
  });
  return {
    on: true,
    callbackUrl,
    path: config.callbacks.path,
    routes,
    listen: config.callbacks.listen,
  };
}

/** Where telesync's HTTP server listens (config assembles them). */
export interface HttpSettings {
  /** Address to listen on (TELESYNC_HTTP_HOST). */
  readonly host: string;
  /** Port to listen on; 0 means no server at all (TELESYNC_HTTP_PORT). */
  readonly port: number;
  /**
   * When `port` is taken, listen on the next free one instead of failing: for processes of which
   * a host runs several (workers) and whose port nobody chose. Default false.
   */
  readonly orNextFree?: boolean;
}

/** The route the service's stream status callbacks are sent to, unless configured otherwise. */
export const DEFAULT_STREAM_CALLBACK_PATH = '/callbacks/stream';

/**
 * How the service reaches telesync for stream status callbacks (config assembles them; `schedule`
 * mounts the route and `stream start` names its address).
 */
export interface StreamCallbackSettings {
  /**
   * The absolute http(s) address at which the service reaches the root of telesync's HTTP server,
   * without a trailing slash (TELESYNC_PUBLIC_URL), e.g. `https://telesync.example.com`; undefined
   * when not configured: no callback route is served and `stream start` sets no callback.
   */
  readonly publicUrl: string | undefined;
  /** The route's path on the HTTP server (TELESYNC_STREAM_CALLBACK_PATH), e.g. `/callbacks/stream`. */
  readonly path: string;
  /**
   * A listener of their own for the callbacks (TELESYNC_CALLBACK_HOST, TELESYNC_CALLBACK_PORT), so
   * that only they face the service's side; undefined: served by the main HTTP server.
   */
  readonly listen?: HttpSettings;
}

/**
 * The address the service sends stream callbacks to: the public URL followed by the route's path;
 * undefined without a public URL. It is also the URL the signatures are verified against, so it is
 * built from the configured text as written, never from a request's Host header. Pure.
 */
export function streamCallbackUrl(settings: StreamCallbackSettings): string | undefined {
  return settings.publicUrl === undefined ? undefined : `${settings.publicUrl}${settings.path}`;
}

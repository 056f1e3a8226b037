import type { AccountState } from './account-state.js';
import type { LiveStream } from './live-streams.js';

/**
 * What carries out a stream's life once the routes have recorded a change: opening its WebSocket,
 * its timeout timer, closing the socket, the status callbacks. The routes stay decisions over
 * state; the driver (../media/stream-runtime.ts) does the I/O, in the background.
 */
export interface StreamDriver {
  /** A stream was just started (recorded as `started`): connect it, time it, call back. */
  started(account: AccountState, stream: LiveStream): void;
  /** A stream was just ended on request (recorded as stopped or disconnected): act on it. */
  ended(account: AccountState, stream: LiveStream): void;
  /** Stops everything running in the background; nothing is left to keep the process alive. */
  close(): Promise<void>;
}

/** A driver that does nothing: the stream's life is only what the routes record. */
export const IDLE_STREAM_DRIVER: StreamDriver = {
  started: () => undefined,
  ended: () => undefined,
  close: () => Promise.resolve(),
};

import { rootCertificates } from 'node:tls';
import { MICROS_PER_SECOND } from '../../util/micros.js';
import type { ResolvedStreamOptions } from '../simulator-options.js';
import type { AccountState } from '../state/account-state.js';
import { timeoutMicros, type LiveStream, type LiveStreamEnding } from '../state/live-streams.js';
import type { SimulatorState } from '../state/simulator-state.js';
import type { StreamOccasion } from '../state/simulator-stats.js';
import type { StreamDriver } from '../state/stream-driver.js';
import { MediaConnection } from './media-connection.js';
import { buildStreamCallbackFields, type CallbackOccasion } from './stream-callback-fields.js';
import { StreamCallbackSender } from './stream-callback-sender.js';

/**
 * Carries out streams' lives in the background: for each started stream, its WebSocket (or, with
 * connectMedia off, an imagined far side that accepts at once), its stream_timeout timer, and a
 * status callback on each occasion. Every change of a stream's life is recorded in the account's
 * registry first, then acted on, so the records the API lists always say what happened. close()
 * ends it all: sockets cut, timers cleared, callbacks abandoned.
 */
export class StreamRuntime implements StreamDriver {
  readonly #state: SimulatorState;
  readonly #options: ResolvedStreamOptions;
  readonly #callbacks: StreamCallbackSender;
  /** Authorities for TLS: the usual ones plus the extra ones; undefined when none are added. */
  readonly #ca: readonly (string | Buffer)[] | undefined;
  readonly #connections = new Map<string, MediaConnection>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #closed = false;

  constructor(state: SimulatorState, options: ResolvedStreamOptions) {
    this.#state = state;
    this.#options = options;
    this.#ca =
      options.mediaCa === undefined ? undefined : [...rootCertificates, ...options.mediaCa];
    this.#callbacks = new StreamCallbackSender({
      stats: state.stats,
      retry: options.callbackRetry,
      ca: this.#ca,
    });
  }

  started(account: AccountState, stream: LiveStream): void {
    if (this.#closed) return;
    this.#count('started');
    this.#armTimeout(account, stream);
    if (stream.endMicros !== undefined) return;
    if (!this.#options.connectMedia) {
      this.#connected(account, stream);
      return;
    }
    const { stats } = this.#state;
    let connection: MediaConnection;
    try {
      connection = new MediaConnection({
        stream,
        accountId: account.authId,
        ca: this.#ca,
        audioSeconds: this.#options.audioSeconds,
        nowMillis: () => this.#state.now() / 1000,
        events: {
          opened: () => this.#connected(account, stream),
          failed: (reason) => this.#end(account, stream, 'failed', reason),
          lost: (reason) => this.#end(account, stream, 'disconnected', reason),
          sent: () => stats.countMessageSent(stream.streamId),
          playAudio: (outcome) => stats.countPlayAudio(stream.streamId, outcome),
        },
      });
    } catch (error) {
      // The stream rules only let wss:// URLs through; whatever ws still refuses is a failed connect.
      this.#end(
        account,
        stream,
        'failed',
        `could not connect to ${stream.serviceUrl}: ${String(error)}`,
      );
      return;
    }
    this.#connections.set(stream.streamId, connection);
  }

  ended(account: AccountState, stream: LiveStream): void {
    this.#afterEnd(account, stream);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    const closing = [...this.#connections.values()].map((connection) => {
      connection.drop();
      return connection.closed;
    });
    this.#connections.clear();
    await Promise.all([...closing, this.#callbacks.close()]);
  }

  #connected(account: AccountState, stream: LiveStream): void {
    if (!account.streams.markConnected(stream, this.#state.now())) return;
    this.#count('connected');
    this.#callBack(account, stream, 'connected');
  }

  #end(account: AccountState, stream: LiveStream, ending: LiveStreamEnding, error?: string): void {
    if (account.streams.end(stream, ending, this.#state.now(), error) === undefined) return;
    this.#afterEnd(account, stream);
  }

  /** Acts on an ending already recorded: stops the timer, closes the socket, calls back. */
  #afterEnd(account: AccountState, stream: LiveStream): void {
    const status = stream.status;
    if (status === 'started' || status === 'connected') return;
    const timer = this.#timers.get(stream.streamId);
    if (timer !== undefined) clearTimeout(timer);
    this.#timers.delete(stream.streamId);
    const connection = this.#connections.get(stream.streamId);
    this.#connections.delete(stream.streamId);
    if (status === 'disconnected') connection?.drop();
    else connection?.close(status === 'timed-out' ? 'stream_timeout reached' : 'stream stopped');
    this.#count(status === 'timed-out' ? 'timedOut' : status);
    this.#callBack(account, stream, status);
  }

  /**
   * The stream_timeout timer. The simulator's clock decides: when the timer fires before the clock
   * reaches the timeout (a clock a test holds still, or one that drifted), it waits again.
   */
  #armTimeout(account: AccountState, stream: LiveStream): void {
    const remainingMs = (timeoutMicros(stream) - this.#state.now()) / (MICROS_PER_SECOND / 1000);
    if (remainingMs <= 0) {
      this.#end(account, stream, 'timed-out');
      return;
    }
    const timer = setTimeout(
      () => {
        this.#timers.delete(stream.streamId);
        this.#armTimeout(account, stream);
      },
      // setTimeout fires at once past about 24.8 days; longer timeouts wait in steps.
      Math.min(Math.ceil(remainingMs), MAX_TIMER_MS),
    );
    timer.unref();
    this.#timers.set(stream.streamId, timer);
  }

  #callBack(account: AccountState, stream: LiveStream, occasion: CallbackOccasion): void {
    const url = stream.params.status_callback_url;
    if (url === undefined || this.#closed) return;
    this.#callbacks.enqueue(stream.streamId, {
      url,
      method: stream.params.status_callback_method,
      fields: buildStreamCallbackFields(stream, occasion),
      authToken: account.authToken,
    });
  }

  #count(occasion: StreamOccasion): void {
    this.#state.stats.countStreamOccasion(occasion);
  }
}

/** Longest delay setTimeout takes (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

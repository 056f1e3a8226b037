/**
 * Counters of what the simulator served and injected, read through GET /__admin/stats. Tests use
 * them to assert what happened (how many 429s, how many records a page generated, how many
 * playAudio messages a stream accepted, how many callbacks were retried) without timers.
 */

import { RATE_BUDGET_REQUESTS, RATE_BUDGET_WINDOW_SECONDS } from '../../domain/service-rules.js';

/** Kinds of injected faults, as counted. */
export type FaultKind =
  | 'down'
  | 'tooManyRequests'
  | 'serverErrors'
  | 'resets'
  | 'truncations'
  | 'spikes'
  | 'malformed'
  | 'lateWithheld'
  | 'insertedDuringPaging';

export interface SimulatorStatsSnapshot {
  requests: {
    /** API requests (the admin API is not counted). */
    total: number;
    /** By route name, e.g. `GET Trunk/Call`. */
    byRoute: Record<string, number>;
    /** By HTTP status; `dropped` for connections closed without an answer. */
    byStatus: Record<string, number>;
  };
  /** Injected faults by kind: requests for the request faults, records for malformed and late. */
  faults: Record<FaultKind, number>;
  /** Requests refused by the rate limit (not counting injected 429s). */
  rateLimited: number;
  /** Trunk call records generated, for lists and lookups (a page without field filters makes ≤ limit). */
  recordsGenerated: number;
  /** The life of started streams and what went over their WebSockets. */
  streams: StreamStats;
  /** Status callbacks of streams. */
  callbacks: CallbackStats;
  /**
   * The load each account put on the service, by auth_id: what the budget is asserted on. Every
   * API request naming the account in its path counts, whatever it was answered.
   */
  accounts: Record<string, AccountLoad>;
}

/** playAudio messages received on stream WebSockets. */
export interface PlayAudioStats {
  /** Valid messages on bidirectional streams. */
  accepted: number;
  /** Invalid messages, and any message on a stream that is not bidirectional. */
  refused: number;
  /** Milliseconds of audio in the accepted messages (fractional: a µ-law byte is 0.125 ms). */
  audioMs: number;
}

/** One stream's WebSocket traffic. */
export interface StreamMediaStats {
  /** `start` and `media` messages sent. */
  messagesSent: number;
  playAudio: PlayAudioStats;
  /** Why the latest refused message was refused; null when none was. */
  lastRefusal: string | null;
}

export interface StreamStats {
  /** Occasions: each stream starts once and ends once (stopped, timedOut, failed or disconnected). */
  started: number;
  connected: number;
  stopped: number;
  timedOut: number;
  failed: number;
  disconnected: number;
  /** `start` and `media` messages sent, all streams. */
  messagesSent: number;
  /** playAudio of all streams. */
  playAudio: PlayAudioStats;
  /** Per stream_id, for the streams that had WebSocket traffic since the last reset. */
  byStream: Record<string, StreamMediaStats>;
}

export interface CallbackStats {
  /** HTTP requests sent, retries included. */
  sent: number;
  /** Callbacks the receiver answered with a 2xx. */
  delivered: number;
  /** Callbacks given up after the last attempt failed (or when the simulator closed). */
  failed: number;
  /** Attempts after a failed one. */
  retried: number;
}

/** A stream occasion, as counted. */
export type StreamOccasion =
  'started' | 'connected' | 'stopped' | 'timedOut' | 'failed' | 'disconnected';

function emptyPlayAudio(): PlayAudioStats {
  return { accepted: 0, refused: 0, audioMs: 0 };
}

function emptyStreams(): StreamStats {
  return {
    started: 0,
    connected: 0,
    stopped: 0,
    timedOut: 0,
    failed: 0,
    disconnected: 0,
    messagesSent: 0,
    playAudio: emptyPlayAudio(),
    byStream: {},
  };
}

function emptyCallbacks(): CallbackStats {
  return { sent: 0, delivered: 0, failed: 0, retried: 0 };
}

/** The load of one account, measured as requests arrive and as their answers end. */
export interface AccountLoad {
  requests: number;
  /** The most requests that arrived in any LOAD_WINDOW_MS (sliding, not aligned). */
  maxPerWindow: number;
  /** The most requests of the account being served at once. */
  maxInFlight: number;
  /**
   * The shortest time, in milliseconds, in which LOAD_WINDOW_REQUESTS + 1 of the account's requests
   * arrived; null until that many have. Under LOAD_WINDOW_MS the budget was broken; how far above
   * it is the margin a client kept.
   */
  tightestSpanMs: number | null;
}

/** The window of AccountLoad.maxPerWindow: the window of the service's published budget. */
export const LOAD_WINDOW_MS = RATE_BUDGET_WINDOW_SECONDS * 1000;
/** The requests the service allows in LOAD_WINDOW_MS (its published budget). */
export const LOAD_WINDOW_REQUESTS = RATE_BUDGET_REQUESTS;

class AccountLoadMeter {
  readonly load: AccountLoad = {
    requests: 0,
    maxPerWindow: 0,
    maxInFlight: 0,
    tightestSpanMs: null,
  };
  /** Arrival times within the last window, oldest first. */
  private readonly arrivals: number[] = [];
  private head = 0;
  private inFlight = 0;
  /** The last LOAD_WINDOW_REQUESTS + 1 arrival times, a ring: request n at n mod its length. */
  private readonly recent = new Array<number>(LOAD_WINDOW_REQUESTS + 1);

  arrived(nowMicros: number): void {
    const slot = this.load.requests % this.recent.length;
    // Before it is overwritten: the arrival LOAD_WINDOW_REQUESTS requests before this one.
    if (this.load.requests >= LOAD_WINDOW_REQUESTS) {
      const first = this.recent[(slot + 1) % this.recent.length] as number;
      const spanMs = (nowMicros - first) / 1_000;
      if (this.load.tightestSpanMs === null || spanMs < this.load.tightestSpanMs) {
        this.load.tightestSpanMs = spanMs;
      }
    }
    this.recent[slot] = nowMicros;
    this.load.requests++;
    this.arrivals.push(nowMicros);
    while ((this.arrivals[this.head] as number) <= nowMicros - LOAD_WINDOW_MS * 1_000) this.head++;
    // Compacts now and then rather than shifting on every request.
    if (this.head > 1_024) {
      this.arrivals.splice(0, this.head);
      this.head = 0;
    }
    this.load.maxPerWindow = Math.max(this.load.maxPerWindow, this.arrivals.length - this.head);
    this.inFlight++;
    this.load.maxInFlight = Math.max(this.load.maxInFlight, this.inFlight);
  }

  ended(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }
}

function emptyFaults(): Record<FaultKind, number> {
  return {
    down: 0,
    tooManyRequests: 0,
    serverErrors: 0,
    resets: 0,
    truncations: 0,
    spikes: 0,
    malformed: 0,
    lateWithheld: 0,
    insertedDuringPaging: 0,
  };
}

/** The counters of one running simulator. */
export class SimulatorStats {
  private total = 0;
  private byRoute: Record<string, number> = {};
  private byStatus: Record<string, number> = {};
  private faults = emptyFaults();
  private rateLimited = 0;
  private recordsGenerated = 0;
  private streams = emptyStreams();
  private callbacks = emptyCallbacks();
  private accountLoads = new Map<string, AccountLoadMeter>();

  /** Counts one API request by its route and the status it got (or `dropped`). */
  countRequest(route: string, status: number | 'dropped'): void {
    this.total++;
    this.byRoute[route] = (this.byRoute[route] ?? 0) + 1;
    const key = String(status);
    this.byStatus[key] = (this.byStatus[key] ?? 0) + 1;
  }

  countFault(kind: FaultKind, count = 1): void {
    this.faults[kind] += count;
  }

  /**
   * An API request of `authId` arrived at `nowMicros`; `requestEnded` must follow once its answer
   * is sent or its connection dropped.
   */
  requestArrived(authId: string, nowMicros: number): void {
    let meter = this.accountLoads.get(authId);
    if (meter === undefined) {
      meter = new AccountLoadMeter();
      this.accountLoads.set(authId, meter);
    }
    meter.arrived(nowMicros);
  }

  requestEnded(authId: string): void {
    this.accountLoads.get(authId)?.ended();
  }

  countRateLimited(): void {
    this.rateLimited++;
  }

  countRecords(count: number): void {
    this.recordsGenerated += count;
  }

  countStreamOccasion(occasion: StreamOccasion): void {
    this.streams[occasion]++;
  }

  /** Counts a `start` or `media` message sent on a stream's WebSocket. */
  countMessageSent(streamId: string): void {
    this.streams.messagesSent++;
    this.mediaOf(streamId).messagesSent++;
  }

  /** Counts a playAudio message received: accepted with its length, or refused with the reason. */
  countPlayAudio(
    streamId: string,
    outcome: { ok: true; durationMs: number } | { ok: false; reason: string },
  ): void {
    const stream = this.mediaOf(streamId);
    for (const counts of [this.streams.playAudio, stream.playAudio]) {
      if (outcome.ok) {
        counts.accepted++;
        counts.audioMs += outcome.durationMs;
      } else {
        counts.refused++;
      }
    }
    if (!outcome.ok) stream.lastRefusal = outcome.reason;
  }

  countCallback(kind: keyof CallbackStats): void {
    this.callbacks[kind]++;
  }

  private mediaOf(streamId: string): StreamMediaStats {
    let stream = this.streams.byStream[streamId];
    if (stream === undefined) {
      stream = { messagesSent: 0, playAudio: emptyPlayAudio(), lastRefusal: null };
      this.streams.byStream[streamId] = stream;
    }
    return stream;
  }

  snapshot(): SimulatorStatsSnapshot {
    return {
      requests: { total: this.total, byRoute: { ...this.byRoute }, byStatus: { ...this.byStatus } },
      faults: { ...this.faults },
      rateLimited: this.rateLimited,
      recordsGenerated: this.recordsGenerated,
      streams: {
        ...this.streams,
        playAudio: { ...this.streams.playAudio },
        byStream: Object.fromEntries(
          Object.entries(this.streams.byStream).map(([id, stream]) => [
            id,
            { ...stream, playAudio: { ...stream.playAudio } },
          ]),
        ),
      },
      callbacks: { ...this.callbacks },
      accounts: Object.fromEntries(
        [...this.accountLoads].map(([authId, meter]) => [authId, { ...meter.load }]),
      ),
    };
  }

  reset(): void {
    this.total = 0;
    this.byRoute = {};
    this.byStatus = {};
    this.faults = emptyFaults();
    this.rateLimited = 0;
    this.recordsGenerated = 0;
    this.streams = emptyStreams();
    this.callbacks = emptyCallbacks();
    this.accountLoads = new Map();
  }
}

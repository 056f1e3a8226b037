import type { EpochMicros } from '../../util/micros.js';
import type { SimAnswer } from './sim-answer.js';

/** A request as the simulator needs it. */
export interface SimRequest {
  readonly method: string;
  /** Path and query, as received. */
  readonly url: string;
  /** The Authorization header, if any. */
  readonly authorization: string | undefined;
  readonly body: string;
  /**
   * When the request arrived (its headers were read), which is what the account's request budget
   * counts; the time it is handled (default) can be later, after its body and other requests.
   */
  readonly arrivedAtMicros?: EpochMicros;
}

/** What to do with a request: the simulator decides, the HTTP server carries it out. */
export type SimOutcome =
  | {
      readonly kind: 'answer';
      readonly answer: SimAnswer;
      /** Wait before answering, milliseconds. */
      readonly delayMs: number;
      /** Send only this fraction of the body, then close the connection. */
      readonly truncateFraction?: number;
    }
  /** Close the connection without answering. */
  | { readonly kind: 'drop'; readonly delayMs: number };

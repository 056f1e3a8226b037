import { StreamRuntime } from './media/stream-runtime.js';
import { handleAdminRequest } from './routes/admin-routes.js';
import { handleApiRequest } from './routes/handle-api-request.js';
import type { SimOutcome, SimRequest } from './routes/sim-request.js';
import { resolveSimulatorOptions, type SimulatorOptions } from './simulator-options.js';
import { SimulatorState } from './state/simulator-state.js';

/**
 * The simulator without its socket: its state, and the routes that decide what each request gets.
 * The HTTP server (simulator-server.ts) only reads requests and carries out these decisions, so
 * everything here runs the same in-process (test and bench oracles) and behind a port. Started
 * streams live on in the background (media/stream-runtime.ts) until close().
 */
export class Simulator {
  readonly state: SimulatorState;

  /** Builds a simulator; throws SimulatorOptionsError listing every unusable option. */
  constructor(options: SimulatorOptions = {}) {
    const resolved = resolveSimulatorOptions(options);
    this.state = new SimulatorState(
      resolved,
      (state) => new StreamRuntime(state, resolved.streams),
    );
  }

  /**
   * Stops what runs in the background for started streams (WebSockets, timeout timers, callback
   * deliveries and their retries) and waits until it has. Requests can still be handled after.
   */
  close(): Promise<void> {
    return this.state.streamDriver.close();
  }

  /** Decides what a request gets. Admin requests (under /__admin/) are never faulted or counted. */
  handle(request: SimRequest): SimOutcome {
    const url = new URL(request.url, 'http://simulator.invalid');
    if (url.pathname === '/__admin' || url.pathname.startsWith('/__admin/')) {
      return {
        kind: 'answer',
        answer: handleAdminRequest(this.state, request.method, url, request.body),
        delayMs: 0,
      };
    }
    return handleApiRequest(this.state, request, url);
  }
}

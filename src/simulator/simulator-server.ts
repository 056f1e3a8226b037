import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toEpochMicros } from '../util/micros.js';
import { sleep } from '../util/sleep.js';
import type { FaultConfig } from './faults.js';
import { errorAnswer, type SimAnswer } from './routes/sim-answer.js';
import { Simulator } from './simulator.js';
import { SimulatorOptionsError, type SimulatorOptions } from './simulator-options.js';
import { addCall, checkNewCall, type SimulatorAccount } from './state/account-state.js';
import { summarizeDataset, type DatasetSummary } from './state/dataset-summary.js';
import type { SimulatorStatsSnapshot } from './state/simulator-stats.js';

/**
 * The simulator behind a real HTTP port: node:http, no framework. It reads each request, asks the
 * Simulator what to do, then does it — answer, answer late, cut the body short, or drop the
 * connection.
 */

/** Where and how to listen, on top of the simulator's options. */
export interface StartSimulatorOptions extends SimulatorOptions {
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 0: a free one, see `port` of the result). */
  port?: number;
}

/** A listening simulator. */
export interface RunningSimulator {
  /** Base address, e.g. http://127.0.0.1:43117 (what TELESYNC_BASE_URL should be). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Credentials of every account. */
  readonly accounts: readonly SimulatorAccount[];
  /** The simulator itself (state, counters), for in-process use. */
  readonly simulator: Simulator;
  stats(): SimulatorStatsSnapshot;
  resetStats(): void;
  faults(): FaultConfig;
  /** Replaces the faults in force (fields left out are off); throws on invalid input. */
  setFaults(faults: Partial<FaultConfig>): FaultConfig;
  /**
   * Adds a trunk call (see POST /__admin/calls). `endTime` and `visibleAt` are ISO date-times or
   * epoch microseconds. Returns the record as served.
   */
  addCall(call: AddCallInput): Readonly<Record<string, unknown>>;
  dataset(): DatasetSummary;
  /**
   * Stops listening and closes every open connection, and everything started streams run in the
   * background (WebSockets, timers, callback retries).
   */
  close(): Promise<void>;
}

export interface AddCallInput {
  /** auth_id of the account (default: the first). */
  account?: string;
  endTime: string | number;
  visibleAt?: string | number;
  overrides?: Readonly<Record<string, unknown>>;
  omit?: readonly string[];
}

/** Largest request body read, bytes; a stream start is a few hundred. */
const BODY_MAX_BYTES = 1_048_576;

/**
 * Starts a simulator listening on `host:port` (default 127.0.0.1 and a free port). Throws
 * SimulatorOptionsError for unusable options, and the listen error (say, EADDRINUSE) as is.
 */
export async function startSimulator(
  options: StartSimulatorOptions = {},
): Promise<RunningSimulator> {
  const simulator = new Simulator(options);
  const { state } = simulator;
  const host = options.host ?? '127.0.0.1';
  const server = createServer((request, response) => {
    void serve(simulator, request, response);
  });
  await listen(server, host, options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    host,
    port,
    accounts: state.credentials(),
    simulator,
    stats: () => state.stats.snapshot(),
    resetStats: () => state.stats.reset(),
    faults: () => state.faults(),
    setFaults(faults) {
      const replaced = state.replaceFaults(faults);
      if (!replaced.ok) throw new SimulatorOptionsError(replaced.problems);
      return replaced.config;
    },
    addCall(input) {
      const authId = input.account ?? state.credentials()[0]?.authId ?? '';
      const account = state.accounts.get(authId);
      if (account === undefined) throw new SimulatorOptionsError([`no account ${authId}`]);
      const toMicros = (value: string | number): number =>
        typeof value === 'number' ? value : toEpochMicros(value);
      const call = {
        endMicros: toMicros(input.endTime),
        ...(input.visibleAt === undefined ? {} : { visibleFromMicros: toMicros(input.visibleAt) }),
        ...(input.overrides === undefined ? {} : { overrides: input.overrides }),
        ...(input.omit === undefined ? {} : { omit: input.omit }),
      };
      const problems = checkNewCall(call);
      if (problems.length > 0) throw new SimulatorOptionsError(problems);
      return addCall(account, call, state.now()).record;
    },
    dataset: () => summarizeDataset(state),
    close: async () => {
      await Promise.all([close(server), simulator.close()]);
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    // Idle keep-alive connections would hold close() open until they time out.
    server.close((error) => (error === undefined ? resolve() : reject(error)));
    server.closeAllConnections();
  });
}

async function serve(
  simulator: Simulator,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const stats = simulator.state.stats;
  const arrivedAtMicros = simulator.state.now();
  const authId = accountInPath(request.url ?? '/');
  if (authId !== undefined) {
    stats.requestArrived(authId, arrivedAtMicros);
    response.once('close', () => stats.requestEnded(authId));
  }
  try {
    const body = await readBody(request);
    if (body === undefined) {
      send(response, errorAnswer(413, `request body over ${BODY_MAX_BYTES} bytes`, randomUUID()));
      return;
    }
    const outcome = simulator.handle({
      method: request.method ?? 'GET',
      url: request.url ?? '/',
      authorization: request.headers.authorization,
      body,
      arrivedAtMicros,
    });
    if (outcome.delayMs > 0) await sleep(outcome.delayMs);
    if (outcome.kind === 'drop') {
      request.socket.destroy();
      return;
    }
    send(response, outcome.answer, outcome.truncateFraction);
  } catch (error) {
    // A bug must not take the simulator down: answer 500 and go on serving.
    if (!response.headersSent) {
      send(response, errorAnswer(500, `simulator failure: ${String(error)}`, randomUUID()));
    } else {
      response.destroy();
    }
  }
}

/** The account an API request names in its path (`/v1/Account/{auth_id}/…`), if any. */
function accountInPath(url: string): string | undefined {
  const match = /^\/v1\/Account\/([^/?#]+)\//.exec(url);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1] ?? '');
  } catch {
    return undefined;
  }
}

/** The body as text, or undefined when it is larger than BODY_MAX_BYTES. */
async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > BODY_MAX_BYTES) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Sends an answer; with `truncateFraction`, only that part of the body, then the socket closes. */
function send(response: ServerResponse, answer: SimAnswer, truncateFraction?: number): void {
  const bytes = typeof answer.body === 'string' ? Buffer.from(answer.body, 'utf8') : answer.body;
  const headers: Record<string, string | number> = { ...answer.headers };
  if (answer.status !== 204) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = bytes.length;
  }
  response.writeHead(answer.status, headers);
  if (truncateFraction === undefined || bytes.length < 2) {
    response.end(answer.status === 204 ? undefined : bytes);
    return;
  }
  // Content-Length promises the whole body; the client sees the connection close short of it.
  const cut = Math.min(bytes.length - 1, Math.max(1, Math.floor(bytes.length * truncateFraction)));
  response.write(bytes.subarray(0, cut), () => response.destroy());
}

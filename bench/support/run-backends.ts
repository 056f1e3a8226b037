import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readProcessCpuTicks } from './proc-stats.js';

/**
 * The PostgreSQL backends serving one process, and their CPU time: the process's TCP connections
 * to the server (its socket inodes, found in the kernel's TCP table) give its client ports, and
 * pg_stat_activity maps a client port to the backend's pid. Counting only these keeps other users
 * of a shared server out of a run's PostgreSQL figure.
 */

/** One row of /proc/<pid>/net/tcp or tcp6. */
export interface TcpSocket {
  readonly localPort: number;
  readonly remotePort: number;
  readonly inode: number;
}

/** One connection as pg_stat_activity shows it. */
export interface BackendConnection {
  readonly pid: number;
  readonly clientPort: number;
}

/** The sockets of a /proc/net/tcp(6) table; the header and malformed lines are skipped. */
export function parseTcpTable(text: string): TcpSocket[] {
  const sockets: TcpSocket[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    if (fields.length < 10 || !/^\d+:$/.test(fields[0] ?? '')) continue;
    const localPort = portOf(fields[1]);
    const remotePort = portOf(fields[2]);
    const inode = Number(fields[9]);
    if (localPort === undefined || remotePort === undefined || !Number.isSafeInteger(inode))
      continue;
    sockets.push({ localPort, remotePort, inode });
  }
  return sockets;
}

function portOf(address: string | undefined): number | undefined {
  const hex = address?.split(':')[1];
  if (hex === undefined || !/^[0-9A-Fa-f]{4}$/.test(hex)) return undefined;
  return Number.parseInt(hex, 16);
}

/** The inode of a `/proc/<pid>/fd/<n>` link's target when it is a socket ("socket:[123]"). */
export function socketInode(linkTarget: string): number | undefined {
  const match = /^socket:\[(\d+)\]$/.exec(linkTarget);
  return match === null ? undefined : Number(match[1]);
}

/** The local ports of the sockets among `inodes` that are connected to `serverPort`. */
export function clientPortsTo(
  sockets: readonly TcpSocket[],
  inodes: ReadonlySet<number>,
  serverPort: number,
): number[] {
  return sockets
    .filter((socket) => socket.remotePort === serverPort && inodes.has(socket.inode))
    .map((socket) => socket.localPort);
}

/** The backend pids of the connections whose client port is one of `ports`. */
export function backendPidsFor(
  connections: readonly BackendConnection[],
  ports: readonly number[],
): number[] {
  const wanted = new Set(ports);
  return connections.filter((row) => wanted.has(row.clientPort)).map((row) => row.pid);
}

/** Socket inodes of `pid`'s open file descriptors; empty when the process is gone. */
function readSocketInodes(pid: number): Set<number> {
  const inodes = new Set<number>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const inode = socketInode(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (inode !== undefined) inodes.add(inode);
    } catch {
      // Closed meanwhile.
    }
  }
  return inodes;
}

function readTcpTables(pid: number): TcpSocket[] {
  const sockets: TcpSocket[] = [];
  for (const table of ['tcp', 'tcp6']) {
    try {
      sockets.push(...parseTcpTable(readFileSync(`/proc/${pid}/net/${table}`, 'utf8')));
    } catch {
      // No IPv6, or the process is gone.
    }
  }
  return sockets;
}

/** Looks up the backends of client ports (pg_stat_activity, through the harness's pool). */
export type BackendLookup = (ports: readonly number[]) => Promise<BackendConnection[]>;

/**
 * CPU time of the backends serving one client process over its life. Backends are discovered
 * every `discoverEveryMs` (pools open connections as they go) and their CPU time read at each
 * `sample()`; a backend found after it started counts from zero, its start-up included. A backend
 * that ends loses what it used after its last sample.
 */
export class RunBackendsCpu {
  readonly #latest = new Map<number, number>();
  readonly #lookup: BackendLookup;
  readonly #serverPort: number;
  #clientPid: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #discovering: Promise<void> | undefined;
  #failure: string | undefined;

  constructor(lookup: BackendLookup, serverPort: number) {
    this.#lookup = lookup;
    this.#serverPort = serverPort;
  }

  /** Starts discovering the backends of `clientPid`. */
  start(clientPid: number, discoverEveryMs = 200): void {
    this.#clientPid = clientPid;
    this.#timer = setInterval(() => {
      if (this.#discovering === undefined) {
        this.#discovering = this.#discover().finally(() => (this.#discovering = undefined));
      }
    }, discoverEveryMs);
  }

  async #discover(): Promise<void> {
    if (this.#clientPid === undefined) return;
    const ports = clientPortsTo(
      readTcpTables(this.#clientPid),
      readSocketInodes(this.#clientPid),
      this.#serverPort,
    );
    if (ports.length === 0) return;
    try {
      for (const pid of backendPidsFor(await this.#lookup(ports), ports)) {
        if (!this.#latest.has(pid)) this.#latest.set(pid, 0);
      }
    } catch (error) {
      this.#failure = String(error);
    }
    this.sample();
  }

  /** Reads the CPU time of every backend found so far. */
  sample(): void {
    for (const pid of this.#latest.keys()) {
      const ticks = readProcessCpuTicks(pid);
      if (ticks !== undefined) this.#latest.set(pid, Math.max(this.#latest.get(pid) ?? 0, ticks));
    }
  }

  /** Stops discovering; the backends found and their CPU ticks, or why none could be found. */
  async stop(): Promise<{ backends: number; ticks: number } | { error: string }> {
    clearInterval(this.#timer);
    await this.#discovering;
    this.sample();
    if (this.#latest.size === 0) {
      return { error: this.#failure ?? 'no backend of the process was found' };
    }
    let ticks = 0;
    for (const value of this.#latest.values()) ticks += value;
    return { backends: this.#latest.size, ticks };
  }
}

/** The port of a postgres:// URL (5432 when it names none); undefined for a socket directory. */
export function serverPortOf(databaseUrl: string): number | undefined {
  try {
    const url = new URL(databaseUrl);
    if (url.hostname === '' || url.hostname.startsWith('%2F')) return undefined;
    return url.port === '' ? 5432 : Number(url.port);
  } catch {
    return undefined;
  }
}

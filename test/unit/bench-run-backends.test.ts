import { describe, expect, it } from 'vitest';
import {
  backendPidsFor,
  clientPortsTo,
  parseTcpTable,
  serverPortOf,
  socketInode,
} from '../../bench/support/run-backends.js';

// Two of telesync's connections to 127.0.0.1:5432 (client ports 0xC350 and 0xC351), one of another
// process to the server, and a listening socket.
const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0 5001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:C350 0100007F:1538 01 00000000:00000000 00:00000000 00000000  1000        0 7001 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:C351 0100007F:1538 01 00000000:00000000 00:00000000 00000000  1000        0 7002 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:D000 0100007F:1538 01 00000000:00000000 00:00000000 00000000  1000        0 9001 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:C352 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 7003 1 0000000000000000 20 4 30 10 -1
`;

describe('the backends serving one process (benchmark 1)', () => {
  it('reads ports and inodes from the kernel TCP table, skipping the header', () => {
    const sockets = parseTcpTable(TCP);
    expect(sockets).toHaveLength(5);
    expect(sockets[1]).toEqual({ localPort: 50_000, remotePort: 5432, inode: 7001 });
  });

  it('reads a socket inode from an fd link, and nothing from a file', () => {
    expect(socketInode('socket:[7001]')).toBe(7001);
    expect(socketInode('/dev/null')).toBeUndefined();
    expect(socketInode('pipe:[12]')).toBeUndefined();
  });

  it("keeps the process's own sockets to the server's port only", () => {
    const ports = clientPortsTo(parseTcpTable(TCP), new Set([7001, 7002, 7003]), 5432);
    expect(ports).toEqual([50_000, 50_001]);
  });

  it('maps client ports to backend pids, leaving out other clients', () => {
    const connections = [
      { pid: 301, clientPort: 50_000 },
      { pid: 302, clientPort: 50_001 },
      { pid: 399, clientPort: 53_248 },
    ];
    expect(backendPidsFor(connections, [50_000, 50_001])).toEqual([301, 302]);
    expect(backendPidsFor(connections, [])).toEqual([]);
  });

  it("takes the server's port from the database URL, 5432 by default", () => {
    expect(serverPortOf('postgres://postgres@127.0.0.1:5433/x')).toBe(5433);
    expect(serverPortOf('postgres://postgres@127.0.0.1/x')).toBe(5432);
    expect(serverPortOf('not a url')).toBeUndefined();
  });
});

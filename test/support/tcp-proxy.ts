import { connect, createServer, type Socket } from 'node:net';

/** A TCP proxy to pull the plug on: what a database that becomes unreachable looks like. */
export interface TcpProxy {
  readonly port: number;
  /** Stops accepting and cuts every connection in flight. */
  stop(): Promise<void>;
  /**
   * Cuts every connection in flight and goes on accepting new ones: a network blip, or a database
   * restart, as the clients see it. Returns how many connections were cut.
   */
  cut(): number;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    cut() {
      const cut = [...sockets];
      for (const socket of cut) socket.destroy();
      // Two sockets (client and upstream) per connection.
      return cut.length / 2;
    },
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

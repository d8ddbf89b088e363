import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy that can cut the line: every open connection is reset and new ones are reset as
 * soon as they arrive, until `restore()`. Hand-written on node:net because all it has to do is
 * pipe bytes and drop them on demand (about 60 lines), and the fault it injects must be exactly a
 * network failure between triad and PostgreSQL — the server itself keeps running.
 */
export class TcpProxy {
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly sockets: Set<Socket>,
    private readonly line: { cut: boolean },
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const sockets = new Set<Socket>();
    const line = { cut: false };
    const server = createServer((client) => {
      if (line.cut) {
        client.resetAndDestroy();
        return;
      }
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('the proxy has no port');
    return new TcpProxy(server, address.port, sockets, line);
  }

  /** Resets every open connection and every new one until `restore()`. */
  cut(): void {
    this.line.cut = true;
    for (const s of this.sockets) s.resetAndDestroy();
  }

  restore(): void {
    this.line.cut = false;
  }

  get openConnections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

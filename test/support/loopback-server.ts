import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * An HTTP server on 127.0.0.1 at an ephemeral port, for the fake model servers (fake-messages-api.ts,
 * fake-chat-completions.ts): it keeps its connections, so that stopping it drops hung and kept-alive
 * ones instead of waiting for them.
 */
export class LoopbackServer {
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  port = 0;

  private constructor(handle: (req: IncomingMessage, res: ServerResponse) => void, onConnection?: () => void) {
    this.server = createServer(handle);
    this.server.on('connection', (socket) => {
      onConnection?.();
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async listen(handle: (req: IncomingMessage, res: ServerResponse) => void, onConnection?: () => void): Promise<LoopbackServer> {
    const loopback = new LoopbackServer(handle, onConnection);
    await new Promise<void>((resolve, reject) => {
      loopback.server.once('error', reject);
      loopback.server.listen(0, '127.0.0.1', () => resolve());
    });
    loopback.port = (loopback.server.address() as AddressInfo).port;
    return loopback;
  }

  /** Closes the server, dropping hung and kept-alive connections. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

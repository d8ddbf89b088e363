import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { chmod } from 'node:fs/promises';
import { hostAllowed, type HostPattern } from './sandbox-policy';

/**
 * The only way out of a sandbox that has network: an HTTP proxy on a Unix socket that the sandbox
 * reaches through a bridge on its own loopback (the sandbox has no network interface but `lo`).
 * It lets through only the hosts of the command's allow-list:
 *
 * - `CONNECT host:port` (HTTPS, git over HTTPS, any TLS): a tunnel to an allowed host, refused
 *   with 403 otherwise;
 * - absolute-form requests (`GET http://host/path`): forwarded to an allowed host. For a host with
 *   a credential (TRIAD_SANDBOX_CREDENTIALS_FILE) the proxy adds its headers and sends the request
 *   on over HTTPS: the command asks for `http://host/…` and never holds the credential (a tunnel's
 *   TLS cannot be added to without breaking it).
 *
 * Hand-written, because its allow-list check and its credential headers are triad's policy: a
 * generic proxy library would still need both written around it. Node's own HTTP server parses.
 */

/** Headers added to requests for one host, e.g. `{"authorization": "Bearer …"}`. */
export type HostCredentials = Record<string, Record<string, string>>;

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export class NetworkProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** Hosts refused, for the command's report. */
  readonly refused = new Set<string>();

  constructor(
    private readonly allowed: readonly HostPattern[],
    private readonly credentials: HostCredentials = {},
  ) {
    this.server = createServer((req, res) => this.forward(req, res));
    this.server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => this.tunnel(req, client, head));
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server.on('clientError', (_err, socket) => socket.destroy());
  }

  async listen(path: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(path, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    // Only this process's user (and the sandbox, which runs as it) may connect.
    await chmod(path, 0o600);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private tunnel(req: IncomingMessage, client: Socket, head: Buffer): void {
    const target = splitHostPort(req.url ?? '', 443);
    if (!target || !hostAllowed(this.allowed, target.host, target.port)) {
      this.refuse(target ? `${target.host}:${target.port}` : String(req.url));
      client.end(refusal(target ? `${target.host}:${target.port}` : 'that address'));
      return;
    }
    const upstream = connect(target.port, target.host);
    this.sockets.add(upstream);
    upstream.once('close', () => this.sockets.delete(upstream));
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n'));
    client.once('error', () => upstream.destroy());
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('triad sandbox proxy: send absolute-form requests (http://host/path)\n');
      return;
    }
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (url.protocol !== 'http:' || !hostAllowed(this.allowed, host, port)) {
      this.refuse(`${host}:${port}`);
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`triad sandbox: ${host}:${port} is not in this run's network allow-list\n`);
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    const added = this.credentials[host.toLowerCase()];
    // A credential upgrades the request to HTTPS (same host, port 443 unless one is given).
    const secure = added !== undefined;
    if (added) for (const [name, value] of Object.entries(added)) headers[name.toLowerCase()] = value;
    const send = secure ? httpsRequest : httpRequest;
    const upstream = send(
      { host, port: url.port ? port : secure ? 443 : 80, method: req.method, path: `${url.pathname}${url.search}`, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end();
    });
    req.pipe(upstream);
  }

  private refuse(what: string): void {
    if (this.refused.size < 20) this.refused.add(what);
  }
}

function refusal(what: string): string {
  const body = `triad sandbox: ${what} is not in this run's network allow-list\n`;
  return `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

function splitHostPort(authority: string, fallbackPort: number): { host: string; port: number } | undefined {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(authority) ?? /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return undefined;
  return { host: m[1]!, port: m[2] !== undefined ? Number(m[2]) : fallbackPort };
}

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { HttpEdgeSettings } from '../config/config';
import { normaliseHostName } from '../config/config';

/**
 * The edge of the HTTP server: what reaches a route at all. Node's own server limits the time a
 * request may take to arrive; the checks here refuse, before routing and before a body is read,
 * a request for a host triad does not serve or with a declared body over the limit. Every refusal
 * is a JSON body like every other error, and is counted (`triad_http_refusals_total{reason}`).
 */

/** The largest body any route reads (the JSON parser's limit). */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Why the edge refused a request: the label of `triad_http_refusals_total`. */
export type EdgeRefusal = 'host' | 'no_host' | 'body_too_large' | 'expect_too_large' | 'timeout';

const REASON: Record<number, string> = { 400: 'Bad Request', 413: 'Payload Too Large', 421: 'Misdirected Request' };

function refuse(res: ServerResponse, statusCode: number, message: string, close: boolean): void {
  const body = JSON.stringify({ statusCode, error: REASON[statusCode], message });
  res.writeHead(statusCode, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    // The body was not read: the connection cannot carry another request.
    ...(close ? { Connection: 'close' } : {}),
  });
  res.end(body);
}

/** The Content-Length a request declares, when it declares a valid one. */
function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

const tooLarge = (length: number): string => `the request body is ${length} bytes; at most ${MAX_BODY_BYTES} are accepted`;

/**
 * Node's server limits, set before it listens: headers within `headersTimeoutMs`, the whole request
 * within `requestTimeoutMs` (checked every second, not Node's default 30 s, so a slow body is cut
 * near its limit); a request without Host reaches the host check (and its JSON 400) instead of
 * Node's bare one; `Expect: 100-continue` is answered 413 when the declared body is over the limit,
 * 100 Continue otherwise.
 */
export function limitServer(server: Server, settings: HttpEdgeSettings, refused: (reason: EdgeRefusal) => void): void {
  server.headersTimeout = settings.headersTimeoutMs;
  server.requestTimeout = settings.requestTimeoutMs;
  // Read by Node when the server starts listening (lib/_http_server.js setupConnectionsTracking).
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1000;
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const length = declaredLength(req);
    if (length !== undefined && length > MAX_BODY_BYTES) {
      refused('expect_too_large');
      refuse(res, 413, tooLarge(length), true);
      return;
    }
    res.writeContinue();
    server.emit('request', req, res);
  });
}

/** Whether `hostname` (as Express reads it from Host, or X-Forwarded-Host behind a trusted proxy) is served. */
export function hostAllowed(hostname: string, allowed: readonly string[]): boolean {
  return allowed.includes('*') || allowed.includes(normaliseHostName(hostname));
}

/** The host name of a Host header value (`name:port`, `[v6]:port`), lowercase. */
export function hostNameOf(host: string): string {
  const v6 = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (v6) return normaliseHostName(v6[1]);
  return normaliseHostName(host.replace(/:\d*$/, ''));
}

/**
 * Express middleware, first of all: a request whose Host names no allowed host is refused 421
 * (the Host a DNS-rebinding page sends is its own name), one without Host 400; then a declared
 * Content-Length over the limit is refused 413 before the body is read.
 */
export function edgeChecks(allowed: readonly string[], refused: (reason: EdgeRefusal) => void) {
  return (req: Request, res: Response, next: NextFunction): void => {
    // Express's req.host: X-Forwarded-Host when the proxy is trusted, else Host; with its port.
    const host = req.host;
    if (host === undefined || host === '') {
      refused('no_host');
      return refuse(res, 400, 'the request has no Host header', true);
    }
    if (!hostAllowed(hostNameOf(host), allowed)) {
      refused('host');
      return refuse(res, 421, `this server does not answer for the host ${JSON.stringify(host.slice(0, 100))}; its allowed hosts are set by TRIAD_ALLOWED_HOSTS`, false);
    }
    const length = declaredLength(req);
    if (length !== undefined && length > MAX_BODY_BYTES) {
      refused('body_too_large');
      return refuse(res, 413, tooLarge(length), true);
    }
    next();
  };
}

/** Whether a browser's Origin header names an allowed host (and is a URL at all). */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return hostAllowed(url.hostname, allowed);
}

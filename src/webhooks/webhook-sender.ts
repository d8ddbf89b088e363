import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { AttemptResult } from './domain/delivery-schedule';
import { checkedAddress, systemResolver, type Resolver } from './address-guard';

/**
 * One attempt of one delivery: the message POSTed as JSON, signed per the Standard Webhooks
 * specification by the maintained `standardwebhooks` package (`webhook-id`, `webhook-timestamp`
 * — the attempt's time —, `webhook-signature`), to the address the SSRF rule checked just now.
 * Redirects are not followed (a 3xx is a failed attempt); the answer's body is read and dropped,
 * never stored or logged.
 */

export interface Attempt {
  url: string;
  secret: string;
  allowPrivate: boolean;
  webhookId: string;
  body: string;
  /** The attempt's time (its `webhook-timestamp`). */
  at: Date;
  timeoutMs: number;
  userAgent: string;
  resolver?: Resolver;
  signal?: AbortSignal;
}

/** The three Standard Webhooks headers for `body`, signed with `secret` (`whsec_…`). */
export function signedHeaders(secret: string, webhookId: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(webhookId, at, body),
  };
}

/** Sends once; never throws: every failure is an `AttemptResult` with a short reason. */
export async function sendWebhook(a: Attempt): Promise<AttemptResult> {
  const url = new URL(a.url);
  let pinned: Awaited<ReturnType<typeof checkedAddress>>;
  try {
    pinned = await checkedAddress(url.hostname, a.allowPrivate, a.resolver ?? systemResolver);
  } catch (err) {
    return { kind: 'failed', error: (err as Error).message };
  }
  // The connection goes to the address just checked, whatever the name resolves to by then.
  const lookup: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: (typeof pinned)[]) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const headers = { 'content-type': 'application/json', 'user-agent': a.userAgent, ...signedHeaders(a.secret, a.webhookId, a.at, a.body) };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const done = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      a.signal?.removeEventListener('abort', onAbort);
      req.destroy();
      resolve(result);
    };
    const req = send(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(a.body) }, lookup, agent: false }, (res: IncomingMessage) => {
      // The body is drained and dropped: only the status acknowledges.
      res.on('data', () => undefined);
      res.on('end', () => done({ kind: 'answered', status: res.statusCode ?? 0 }));
      res.on('error', () => done({ kind: 'answered', status: res.statusCode ?? 0 }));
    });
    const timer = setTimeout(() => done({ kind: 'failed', error: `no answer within ${a.timeoutMs} ms` }), a.timeoutMs);
    const onAbort = () => done({ kind: 'failed', error: 'stopped' });
    a.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) => done({ kind: 'failed', error: err.code ?? 'connection failed' }));
    req.end(a.body);
  });
}

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver for the tests: a real HTTP server on loopback that records every request
 * (its webhook id, headers, body and the status it answered) and answers 204, or 503 while it is
 * `down`; `close()` then `open()` takes it off the network and back on the same port.
 */
export interface ReceivedWebhook {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  /** Answer 503 to everything while true. */
  down: boolean;
  /** The requests a 2xx acknowledged, by webhook id. */
  acked(): Map<string, ReceivedWebhook[]>;
  close(): Promise<void>;
  /** Listens again on the same port. */
  open(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let port = 0;
  let server: Server | undefined;
  const receiver: WebhookReceiver = {
    get url() {
      return `http://127.0.0.1:${port}/hook`;
    },
    received,
    down: false,
    acked() {
      const map = new Map<string, ReceivedWebhook[]>();
      for (const r of received) if (r.status < 300) map.set(r.id, [...(map.get(r.id) ?? []), r]);
      return map;
    },
    async close() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
    async open() {
      const s = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString('utf8')));
        req.on('end', () => {
          const status = receiver.down ? 503 : 204;
          received.push({ id: String(req.headers['webhook-id']), headers: req.headers, body, status });
          res.writeHead(status).end();
        });
      });
      await new Promise<void>((r) => s.listen(port, '127.0.0.1', r));
      port = (s.address() as AddressInfo).port;
      server = s;
    },
  };
  await receiver.open();
  return receiver;
}

/** The three Standard Webhooks headers of a received request, as the verifier takes them. */
export function signatureHeaders(r: ReceivedWebhook): Record<string, string> {
  return { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) };
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { checkedAddress, WebhookAddressRefused } from '../../src/webhooks/address-guard';
import { sendWebhook, type Attempt } from '../../src/webhooks/webhook-sender';

// One attempt against a receiver on loopback: signed so that the standardwebhooks verifier accepts
// it, no redirect followed, a silent receiver timed out, and the SSRF rule applied again at
// delivery: a name that resolves to loopback by then reaches nothing.

const SECRET = `whsec_${Buffer.from('a-secret-of-thirty-two-bytes-ok!').toString('base64')}`;
let server: Server;
let base: string;
let received: Array<{ headers: IncomingMessage['headers']; body: string; url?: string }> = [];
let answer: (res: ServerResponse) => void = (res) => res.writeHead(204).end();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, body, url: req.url });
      answer(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  received = [];
  answer = (res) => res.writeHead(204).end();
});

const attempt = (over: Partial<Attempt> = {}): Attempt => ({
  url: `${base}/hook`,
  secret: SECRET,
  allowPrivate: true,
  webhookId: 'msg_0123456789abcdef0123456789abcdef',
  body: JSON.stringify({ type: 'run.ended', timestamp: '2026-01-01T00:00:00.000Z', data: { runId: 'r1' } }),
  at: new Date(),
  timeoutMs: 2000,
  userAgent: 'triad-test',
  ...over,
});

it('signs per Standard Webhooks: the verifier accepts the delivery, and refuses it under another secret', async () => {
  expect(await sendWebhook(attempt())).toEqual({ kind: 'answered', status: 204 });
  const [got] = received;
  const headers = { 'webhook-id': String(got.headers['webhook-id']), 'webhook-timestamp': String(got.headers['webhook-timestamp']), 'webhook-signature': String(got.headers['webhook-signature']) };
  expect(headers['webhook-id']).toBe('msg_0123456789abcdef0123456789abcdef');
  expect(new Webhook(SECRET).verify(got.body, headers)).toMatchObject({ type: 'run.ended' });
  const other = `whsec_${Buffer.from('another-secret-of-32-bytes-long!').toString('base64')}`;
  expect(() => new Webhook(other).verify(got.body, headers)).toThrow();
  expect(() => new Webhook(SECRET).verify(got.body.replace('r1', 'r2'), headers)).toThrow();
});

it('follows no redirect: a 302 is a failed attempt, and its Location is never requested', async () => {
  answer = (res) => res.writeHead(302, { location: `${base}/elsewhere` }).end();
  expect(await sendWebhook(attempt())).toEqual({ kind: 'answered', status: 302 });
  expect(received.map((r) => r.url)).toEqual(['/hook']);
});

it('times out a receiver that never answers', async () => {
  answer = () => undefined;
  expect(await sendWebhook(attempt({ timeoutMs: 200 }))).toEqual({ kind: 'failed', error: 'no answer within 200 ms' });
});

it('attack: a name that resolves to loopback at delivery time is refused and nothing is sent', async () => {
  const rebinding = async () => [{ address: '127.0.0.1', family: 4 }];
  const port = (server.address() as AddressInfo).port;
  const result = await sendWebhook(attempt({ url: `http://hooks.example.com:${port}/hook`, allowPrivate: false, resolver: rebinding }));
  expect(result).toMatchObject({ kind: 'failed', error: expect.stringContaining('resolves to 127.0.0.1') });
  expect(received).toEqual([]);
});

it('attack: a name with one public and one private answer is refused (the resolver may pick either)', async () => {
  const mixed = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '::ffff:169.254.169.254', family: 6 },
  ];
  await expect(checkedAddress('hooks.example.com', false, mixed)).rejects.toThrow(WebhookAddressRefused);
  await expect(checkedAddress('hooks.example.com', true, mixed)).resolves.toEqual({ address: '93.184.216.34', family: 4 });
});

it('attack: localhost is refused through the system resolver', async () => {
  await expect(checkedAddress('localhost', false)).rejects.toThrow(/private, loopback or link-local/);
});

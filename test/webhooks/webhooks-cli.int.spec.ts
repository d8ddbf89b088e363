import { join } from 'node:path';
import { SqliteWebhookStore } from '../../src/webhooks/store/sqlite.webhook-store';
import { runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { openWalDatabase } from '../support/sqlite';
import { tempDir } from '../support/temp-dir';

// `triad webhooks add|list|remove` on a real SQLite store: the id and secret printed once, the
// SSRF rule and bad input refused with exit 2 and one line, the list with each endpoint's last
// delivery and never a secret, remove and its 3 for an unknown id.

const dir = tempDir('triad-webhooks-cli-');
const env = { ...process.env, TRIAD_DATA_DIR: dir.path, TRIAD_STORE: 'sqlite', TRIAD_USER: 'ann', TRIAD_MODEL: 'offline' };
const triad = (...args: string[]) => runCliInProcess(args, env);

afterAll(async () => {
  await stopInProcessCli();
  dir.remove();
});

it('refuses a loopback URL without --allow-private, an unknown event and another scheme: exit 2, one line, nothing added', async () => {
  for (const args of [
    ['http://127.0.0.1:9/hook', '--events', 'run.ended'],
    ['http://localhost:9/hook', '--events', 'run.ended'],
    ['http://169.254.169.254/', '--events', 'run.ended'],
    ['https://hooks.example.com/', '--events', 'run.started'],
    ['ftp://hooks.example.com/', '--events', 'run.ended'],
  ]) {
    const r = await triad('webhooks', 'add', ...args);
    expect([args[0], r.code]).toEqual([args[0], 2]);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  }
  expect((await triad('webhooks', 'list')).stdout.trim()).toBe('no webhooks');
});

it('adds with --allow-private, printing the id and the secret once; lists with the last delivery and never the secret; removes', async () => {
  const added = await triad('webhooks', 'add', 'http://127.0.0.1:9/hook', '--events', 'review.opened,run.ended', '--allow-private', '--json');
  expect(added.code).toBe(0);
  const { id, secret } = JSON.parse(added.stdout) as { id: string; secret: string };
  expect(secret).toMatch(/^whsec_/);
  const human = await triad('webhooks', 'add', 'http://127.0.0.1:9/other', '--events', 'approval.requested', '--allow-private');
  expect(human.stdout).toMatch(/^added webhook wh_[0-9a-f]{16} → http:\/\/127\.0\.0\.1:9\/other \(approval\.requested\), private addresses allowed\nsecret \(shown only now\): whsec_\S+\n$/);

  const db = openWalDatabase(join(dir.path, 'triad.db'));
  await new SqliteWebhookStore(db).settle({ endpointId: id, eventId: 'e1', position: 1, webhookId: 'msg_1', type: 'run.ended', status: 'failed', attempts: 7, responseCode: 503, error: 'HTTP 503', firstAttemptAt: '2026-01-01T00:00:00.000Z', lastAttemptAt: '2026-01-01T00:10:00.000Z' });
  db.close();

  const list = await triad('webhooks', 'list');
  expect(list.stdout).toContain(`${id}  http://127.0.0.1:9/hook  review.opened,run.ended  secret …${secret.slice(-4)}  last: run.ended failed (7 attempts, HTTP 503) at 2026-01-01T00:10:00.000Z`);
  expect(list.stdout).toContain('no deliveries yet');
  const json = await triad('webhooks', 'list', '--json');
  expect(JSON.parse(json.stdout)).toHaveLength(2);
  for (const text of [list.stdout, json.stdout]) expect(text).not.toContain(secret);

  expect((await triad('webhooks', 'remove', id)).stdout.trim()).toBe(`removed webhook ${id}`);
  const again = await triad('webhooks', 'remove', id);
  expect(again.code).toBe(3);
  expect(again.stderr).toBe(`triad: webhook ${id} not found\n`);
});

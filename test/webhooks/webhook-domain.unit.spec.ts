import { parseWebhookUrl } from '../../src/webhooks/domain/endpoint-url';
import { acknowledged, afterFailure, retryDelayMs, type DeliverySchedule } from '../../src/webhooks/domain/delivery-schedule';
import { isPrivateAddress } from '../../src/webhooks/domain/private-address';
import { parseWebhookEventTypes, webhookIdOf, webhookMessageOf, webhookTypeOf } from '../../src/webhooks/domain/webhook-events';

// The pure parts of webhooks, given / when / then: which events become which messages, when a
// delivery is tried again or given up on, and which addresses are private.

const URL_BASE = 'https://triad.example.com/';
const at = '2026-01-02T03:04:05.000Z';
const recorded = (type: string, data: unknown, streamId = 'run-r1') => ({ type, streamId, data, recordedAt: '2026-01-02T03:04:06.000Z' });

describe('event mapping', () => {
  it('given a review opened at the gate, when mapped, then review.opened names the run, goal, review and the reviews page', () => {
    const m = webhookMessageOf(recorded('ReviewOpened', { reviewId: 'rev_1', iteration: 2, at }), 'Write a greeting', URL_BASE);
    expect(m).toEqual({
      type: 'review.opened',
      timestamp: at,
      data: { runId: 'r1', goal: 'Write a greeting', reviewId: 'rev_1', iteration: 2, url: 'https://triad.example.com/#/reviews' },
    });
  });

  it('given a run ended, when mapped, then run.ended carries the outcome and status and links to the run', () => {
    const m = webhookMessageOf(recorded('RunEnded', { status: 'completed', reason: 'COMPLETED', at }), 'g', 'http://h:3000');
    expect(m?.type).toBe('run.ended');
    expect(m?.data).toMatchObject({ runId: 'r1', outcome: 'COMPLETED', status: 'completed', url: 'http://h:3000/#/runs/r1' });
  });

  it('given a tool approval requested, when mapped, then approval.requested names the approval and the tool, never its input', () => {
    const m = webhookMessageOf(recorded('ToolApprovalRequested', { approvalId: 'apr_r1.t1', name: 'run_command', risk: 'high', input: { command: 'secret-ish' }, at }), 'g', URL_BASE);
    expect(m?.data).toMatchObject({ approvalId: 'apr_r1.t1', tool: 'run_command', risk: 'high' });
    expect(JSON.stringify(m)).not.toContain('secret-ish');
  });

  it('given any other event, or one outside a run stream, when mapped, then nothing is worded', () => {
    expect(webhookMessageOf(recorded('ModelTurnCompleted', {}), 'g', URL_BASE)).toBeUndefined();
    expect(webhookTypeOf({ type: 'RunEnded', streamId: 'project-p1' })).toBeUndefined();
  });

  it('given an endpoint and an event, when the webhook id is derived twice, then it is the same; another endpoint gets another', () => {
    expect(webhookIdOf('wh_a', 'ev1')).toBe(webhookIdOf('wh_a', 'ev1'));
    expect(webhookIdOf('wh_a', 'ev1')).not.toBe(webhookIdOf('wh_b', 'ev1'));
    expect(webhookIdOf('wh_a', 'ev1')).toMatch(/^msg_[0-9a-f]{32}$/);
  });

  it('given an events list, when parsed, then known types pass once and anything else is refused', () => {
    expect(parseWebhookEventTypes(['review.opened', 'run.ended', 'review.opened'])).toEqual({ ok: true, types: ['review.opened', 'run.ended'] });
    expect(parseWebhookEventTypes(['run.started'])).toMatchObject({ ok: false });
    expect(parseWebhookEventTypes([''])).toMatchObject({ ok: false });
  });
});

describe('backoff', () => {
  const schedule: DeliverySchedule = { baseMs: 1000, maxDelayMs: 60_000, giveUpAfterMs: 3_600_000 };

  it('given failures in a row, when the jitter is at its top, then each wait doubles up to the cap', () => {
    expect([1, 2, 3, 4, 7, 20].map((n) => retryDelayMs(n, schedule, () => 1))).toEqual([1000, 2000, 4000, 8000, 60_000, 60_000]);
  });

  it('given the jitter at its bottom, when a wait is chosen, then it is still a tenth of its ceiling', () => {
    expect(retryDelayMs(3, schedule, () => 0)).toBe(400);
  });

  it('given a delivery failing for less than the bound, when it fails again, then it is retried; past the bound it is given up', () => {
    expect(afterFailure(5, 0, 10_000, schedule, () => 1)).toEqual({ next: 'retry', retryAt: 26_000, delayMs: 16_000 });
    expect(afterFailure(50, 0, 3_590_000, schedule, () => 1)).toEqual({ next: 'give_up' });
  });

  it('given answers, when judged, then only a 2xx acknowledges', () => {
    expect(acknowledged({ kind: 'answered', status: 204 })).toBe(true);
    expect(acknowledged({ kind: 'answered', status: 301 })).toBe(false);
    expect(acknowledged({ kind: 'answered', status: 503 })).toBe(false);
    expect(acknowledged({ kind: 'failed', error: 'timeout' })).toBe(false);
  });
});

describe('private addresses', () => {
  it.each([
    '127.0.0.1',
    '127.1.2.3',
    '10.0.0.5',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '[::1]',
    '::',
    'fe80::1',
    'fe80::1%eth0',
    'fd00::1',
    'fc12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    '2002:0a00:0001::1',
    'ff02::1',
    'not-an-address',
  ])('given %s, when judged, then it is private', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '2a00:1450:4001:82b::200e'])('given %s, when judged, then it is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe('endpoint URLs', () => {
  it('given http or https with a host, when parsed, then the host comes out bare', () => {
    expect(parseWebhookUrl('https://hooks.example.com/x?y=1')).toEqual({ ok: true, target: { url: 'https://hooks.example.com/x?y=1', host: 'hooks.example.com' } });
    expect(parseWebhookUrl('http://[::1]:8080/')).toMatchObject({ ok: true, target: { host: '::1' } });
  });

  it('given another scheme, credentials or no URL, when parsed, then it is refused', () => {
    for (const raw of ['ftp://example.com/', 'file:///etc/passwd', 'https://user:pw@example.com/', 'not a url', `https://example.com/${'a'.repeat(2100)}`]) {
      expect(parseWebhookUrl(raw).ok).toBe(false);
    }
  });

  it('given a decimal or hex form of loopback, when parsed, then the host is the dotted address the check refuses', () => {
    for (const raw of ['http://2130706433/', 'http://0x7f.1/', 'http://[::ffff:127.0.0.1]/']) {
      const parsed = parseWebhookUrl(raw);
      expect(parsed.ok && isPrivateAddress(parsed.target.host)).toBe(true);
    }
  });
});

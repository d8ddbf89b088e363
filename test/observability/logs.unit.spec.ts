import { CliLogger } from '../../src/cli/cli-io';
import { Redactor } from '../../src/observability/log-format';
import { eventLogLines } from '../../src/observability/event-log';

// Log lines: JSON objects for collectors, text for people, never a secret.

function capture(isTTY: boolean) {
  const lines: string[] = [];
  const stderr = Object.assign({ write: (chunk: string) => (lines.push(chunk), true) }, { isTTY }) as never;
  return { stderr, lines };
}

const NOW = () => new Date('2026-01-01T00:00:00.000Z');

describe('CliLogger', () => {
  it('writes one JSON object per line with time, level, context, msg and the fields given', () => {
    const { stderr, lines } = capture(false);
    const logger = new CliLogger(stderr, ['log', 'warn'], { format: 'json', now: NOW });
    logger.log('run run_1: RunLaunched by user:ann', { runId: 'run_1', actor: 'user:ann', event: 'RunLaunched' }, 'Events');
    logger.warn('lease renewal failed', 'RunSupervisor');
    logger.error('not this level', 'X');
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([
      { time: '2026-01-01T00:00:00.000Z', level: 'log', context: 'Events', msg: 'run run_1: RunLaunched by user:ann', runId: 'run_1', actor: 'user:ann', event: 'RunLaunched' },
      { time: '2026-01-01T00:00:00.000Z', level: 'warn', context: 'RunSupervisor', msg: 'lease renewal failed' },
    ]);
    expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
  });

  it('writes readable text without the format option', () => {
    const { stderr, lines } = capture(false);
    new CliLogger(stderr, ['log'], {}).log('started', 'NestApplication');
    expect(lines).toEqual(['triad LOG [NestApplication] started\n']);
  });

  it('never writes a configured key, an Anthropic key or a bearer credential', () => {
    const redactor = Redactor.fromEnv({ TRIAD_API_KEYS: 'ann:operator:ann-secret-0123456789,bob:reviewer:bob-secret-0123456789', ANTHROPIC_API_KEY: 'sk-ant-api03-abcdefghijklmnop' });
    const { stderr, lines } = capture(false);
    const logger = new CliLogger(stderr, ['error'], { format: 'json', redactor });
    logger.error('request failed: authorization Bearer ann-secret-0123456789 with x-api-key sk-ant-api03-abcdefghijklmnop', { header: 'Bearer zzz-unknown-token' }, 'Http');
    logger.error(new Error('upstream said bob-secret-0123456789 and sk-ant-other-key-999 and triad_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), 'Model');
    const all = lines.join('');
    for (const secret of ['ann-secret-0123456789', 'bob-secret-0123456789', 'sk-ant-api03-abcdefghijklmnop', 'sk-ant-other-key-999', 'zzz-unknown-token', 'triad_AAAA']) expect(all).not.toContain(secret);
    expect(all).toContain('[redacted]');
    expect(lines.map((l) => JSON.parse(l) as { level: string }).map((l) => l.level)).toEqual(['error', 'error']);
  });
});

describe('eventLogLines', () => {
  it('one line for a run\'s lifecycle and human decisions, with run, actor and event; nothing of the data', () => {
    const lines = eventLogLines('run-run_1', [
      { type: 'ModelCallCompleted', data: {}, metadata: { runId: 'run_1', actor: 'agent:executor:run_1' } },
      { type: 'ReviewDecided', data: { outcome: 'approved', reason: 'secret plan' }, metadata: { runId: 'run_1', actor: 'user:bob' } },
      { type: 'RunEnded', data: { status: 'completed', reason: 'APPROVED' }, metadata: { actor: 'system' } },
    ]);
    expect(lines).toEqual([
      { message: 'run run_1: ReviewDecided (approved) by user:bob', fields: { runId: 'run_1', actor: 'user:bob', event: 'ReviewDecided', stream: 'run-run_1' } },
      { message: 'run run_1: RunEnded (completed) by system', fields: { runId: 'run_1', actor: 'system', event: 'RunEnded', stream: 'run-run_1' } },
    ]);
  });
});

import { CliLogger } from '../../src/cli/cli-io';
import { logLevelSetting } from '../../src/config/config';
import { levelsAt, Redactor } from '../../src/observability/log-format';
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
    new CliLogger(stderr, ['log'], {}).log('triad listening on http://127.0.0.1:3000', 'Serve');
    expect(lines).toEqual(['triad LOG [Serve] triad listening on http://127.0.0.1:3000\n']);
  });

  it("writes the framework's start-up lines (modules loaded, routes mapped) at debug only, as debug", () => {
    const quiet = capture(false);
    const atLog = new CliLogger(quiet.stderr, levelsAt('log'), { format: 'json', now: NOW });
    atLog.log('Mapped {/v1/runs, POST} route', 'RouterExplorer');
    atLog.log('EventsModule dependencies initialized', 'InstanceLoader');
    atLog.log('Nest application successfully started', 'NestApplication');
    atLog.log('run run_1: RunLaunched', { event: 'RunLaunched' }, 'Events');
    expect(quiet.lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['run run_1: RunLaunched']);
    const loud = capture(false);
    new CliLogger(loud.stderr, levelsAt('debug'), { format: 'json', now: NOW }).log('Mapped {/v1/runs, POST} route', 'RouterExplorer');
    expect(loud.lines.map((l) => JSON.parse(l) as unknown)).toEqual([{ time: '2026-01-01T00:00:00.000Z', level: 'debug', context: 'RouterExplorer', msg: 'Mapped {/v1/runs, POST} route' }]);
  });

  it('TRIAD_LOG_LEVEL names the least severe level written', () => {
    expect(levelsAt('error')).toEqual(['fatal', 'error']);
    expect(levelsAt('warn')).toEqual(['fatal', 'error', 'warn']);
    expect(levelsAt('log')).toEqual(['fatal', 'error', 'warn', 'log']);
    expect(levelsAt('debug')).toEqual(['fatal', 'error', 'warn', 'log', 'debug', 'verbose']);
    expect(logLevelSetting({})).toBe('log');
    expect(logLevelSetting({ TRIAD_LOG_LEVEL: 'debug' })).toBe('debug');
    expect(() => logLevelSetting({ TRIAD_LOG_LEVEL: 'verbose' })).toThrow("TRIAD_LOG_LEVEL must be error, warn, log, debug, got 'verbose'");
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

describe('Redactor for recorded text and files', () => {
  const redactor = Redactor.fromEnv({
    ANTHROPIC_API_KEY: 'sk-ant-api03-abcdefghijklmnop',
    TRIAD_API_KEYS: 'ann:operator:ann-secret-0123456789',
    TRIAD_PG_URL: 'postgres://triad:pg%40pass-0123@db.example:5432/triad',
    TRIAD_ESDB_URL: 'esdb://admin:esdb-pass-0123@es.example:2113?tls=true',
  });

  it('given any configured secret of 8 characters or more, when a shell encodes it cheaply, then every form is redacted in text and bytes', () => {
    // A 10-character database password: plain, and never searched for before.
    const plain = Redactor.fromEnv({ TRIAD_PG_URL: 'postgres://triad:Tr1adPw-9x@127.0.0.1/test', TRIAD_API_KEYS: 'ann:operator:ann-secret-0123456789' });
    const secret = 'ann-secret-0123456789';
    const forms = [
      secret,
      [...secret].reverse().join(''),
      Buffer.from(secret).toString('hex'),
      Buffer.from(secret).toString('hex').toUpperCase(),
      Buffer.from(secret).toString('base64'),
      Buffer.from(`x${secret}`).toString('base64'),
      Buffer.from(`xy${secret}`).toString('base64'),
      secret.replace(/./g, '$& '),
      secret.replace(/./g, '$&-'),
      [...secret].reverse().join('').replace(/./g, '$&  '),
      'Tr1adPw-9x',
    ];
    for (const form of forms) {
      const out = plain.redactKnown(`before ${form} after`);
      expect({ form, out: out.includes('[redacted]') }).toEqual({ form, out: true });
      expect(out.replace(/[^A-Za-z0-9]/g, '')).not.toContain('secret0123456789');
      expect(plain.redactBytes(Buffer.from(`x ${form} y`))).toBeDefined();
    }
    // The parts of a base64 stream around the secret's core are at most two characters of it.
    expect(plain.redactKnown(Buffer.from(`xy${secret}`).toString('base64'))).toMatch(/^.{0,4}\[redacted\].{0,4}$/);
    expect(plain.redactKnown('ordinary text about postgres and passwords')).toBe('ordinary text about postgres and passwords');
  });

  it('redacts every string of a tool call\'s input, leaving the value as it was', () => {
    const input = { command: 'echo ann-secret-0123456789', nested: [{ v: 'bnn-tpersx' }, 3] };
    expect(redactor.redactDeep(input)).toEqual({ command: 'echo [redacted]', nested: [{ v: 'bnn-tpersx' }, 3] });
    expect(input.command).toBe('echo ann-secret-0123456789');
  });

  it('replaces the known secrets only, the PostgreSQL password as written and decoded, leaving code that merely looks like a credential', () => {
    const text = 'A=sk-ant-api03-abcdefghijklmnop B=ann-secret-0123456789 C=pg%40pass-0123 D=pg@pass-0123 E=esdb-pass-0123 headers: Bearer ${token}';
    expect(redactor.redactKnown(text)).toBe('A=[redacted] B=[redacted] C=[redacted] D=[redacted] E=[redacted] headers: Bearer ${token}');
  });

  it('gives a redacted copy of bytes that hold a secret (every occurrence), and nothing for bytes that hold none', () => {
    const bytes = Buffer.concat([Buffer.from([0, 1]), Buffer.from('x ann-secret-0123456789 y ann-secret-0123456789'), Buffer.from([255])]);
    expect(redactor.redactBytes(bytes)).toEqual(Buffer.concat([Buffer.from([0, 1]), Buffer.from('x [redacted] y [redacted]'), Buffer.from([255])]));
    expect(redactor.redactBytes(Buffer.from('nothing here'))).toBeUndefined();
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

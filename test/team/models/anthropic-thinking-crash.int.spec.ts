import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startFakeMessagesApi, type FakeMessagesApi, type FakeStep, type RecordedRequest } from '../../support/fake-messages-api';
import { tempDir } from '../../support/temp-dir';
import { waitFor } from '../../support/wait-for';

// Thinking blocks survive a crash: `triad run` (a real process, the real SDK, the loopback Messages
// API) is killed with SIGKILL while the executor's second call is in flight; `triad resume` in a new
// process sends that call again, and its request body — thinking blocks and signatures included —
// is byte for byte the one an uninterrupted run sends. So is the same call made by a fork.

const CLI = resolve(__dirname, '..', '..', '..', 'dist', 'cli', 'main.js');
const API_KEY = 'sk-ant-crash-test-0123456789';

const systemOf = (r: RecordedRequest) => JSON.stringify(r.body?.system ?? '');
const isExecutor = (r: RecordedRequest) => systemOf(r).includes('You are the Executor');
const messageCount = (r: RecordedRequest) => (r.body?.messages as unknown[]).length;

/** Stateless answers by role and turn, so both runs get the same ones. */
function answer(r: RecordedRequest): FakeStep {
  const system = systemOf(r);
  if (system.includes('You are the Architect')) {
    return { kind: 'response', content: [{ type: 'tool_use', id: 'toolu_plan', name: 'submit_plan', input: { plan: '1. write hello.txt', steps: ['write hello.txt'] } }] };
  }
  if (system.includes('You are the Reviewer')) {
    return { kind: 'response', content: [{ type: 'tool_use', id: 'toolu_verdict', name: 'submit_verdict', input: { verdict: 'APPROVE', findings: [], summary: 'ok' } }] };
  }
  if (messageCount(r) === 1) {
    return {
      kind: 'response',
      content: [
        { type: 'thinking', thinking: 'The plan says: write hello.txt. I will write it with write_file.' },
        { type: 'redacted_thinking', data: 'RW5jcnlwdGVkIHRoaW5raW5n' },
        { type: 'tool_use', id: 'toolu_write', name: 'write_file', input: { path: 'hello.txt', content: 'Hello\n' } },
      ],
    };
  }
  return {
    kind: 'response',
    content: [
      { type: 'thinking', thinking: 'The file is written; submit the work.' },
      { type: 'tool_use', id: 'toolu_submit', name: 'submit_work', input: { summary: 'wrote hello.txt', files: ['hello.txt'] } },
    ],
  };
}

function cli(args: string[], dataDir: string, url: string): { proc: ChildProcess; exited: Promise<number | null>; output: () => string } {
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, TRIAD_DATA_DIR: dataDir, TRIAD_MODEL: 'anthropic', ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: url, TRIAD_USER: 'ann', TRIAD_LEASE_TTL_MS: '1000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  return { proc, exited, output: () => out };
}

const RUN = ['run', 'Write hello.txt', '-c', 'hello.txt contains Hello', '--no-human-gate', '--thinking', 'executor=2048', '--idempotency-key', 'thinking-crash', '--json'];

describe('thinking blocks across a crash (kill -9) and resume', () => {
  let api: FakeMessagesApi;
  let hangSecondExecutorCall = false;
  const dir = tempDir('triad-thinking-crash-');
  const dataDir = join(dir.path, 'data');

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error('dist/ is missing: jest globalSetup builds it');
    api = await startFakeMessagesApi({
      apiKey: API_KEY,
      promptCache: true,
      fallback: (r) => (hangSecondExecutorCall && isExecutor(r) && messageCount(r) === 3 ? { kind: 'hang', beforeHeaders: true } : answer(r)),
    });
  });
  afterAll(async () => {
    await api.stop();
    dir.remove();
  });

  it('sends the same executor request after the crash as an uninterrupted run, thinking and signatures included', async () => {
    // Uninterrupted.
    mkdirSync(dataDir, { recursive: true });
    const straight = cli(RUN, dataDir, api.url);
    expect(await straight.exited).toBe(0);
    const straightSecond = api.requests.filter((r) => isExecutor(r) && messageCount(r) === 3);
    expect(straightSecond).toHaveLength(1);
    const expected = straightSecond[0].rawBody;
    // The thinking went back exactly as the fake sent it (the fake refuses a changed signature with a 400).
    const assistant = (straightSecond[0].body!.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>)[1];
    expect(assistant.content.map((b) => b.type)).toEqual(['thinking', 'redacted_thinking', 'tool_use']);
    expect(straightSecond[0].body!.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });

    // Crashed during the executor's second call, then resumed by a new process.
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    api.reset();
    hangSecondExecutorCall = true;
    const crashed = cli(RUN, dataDir, api.url);
    await waitFor('the executor\'s second call', async () => api.requests.some((r) => isExecutor(r) && messageCount(r) === 3), 30_000);
    crashed.proc.kill('SIGKILL');
    await crashed.exited;
    // The idempotency key names the same run in both stores.
    const runId = /run_[0-9a-f]+/.exec(straight.output())?.[0];
    expect(runId).toBeDefined();

    hangSecondExecutorCall = false;
    const before = api.requests.length;
    // The dead process's lease runs out (1 s here) before another process may drive the run:
    // resume waits for it to lapse and then takes the run over, in one command.
    const resumed = cli(['resume', runId!, '--json'], dataDir, api.url);
    const code = await resumed.exited;
    expect({ code, output: code === 0 ? '' : resumed.output() }).toEqual({ code: 0, output: '' });
    const afterResume = api.requests.slice(before).filter((r) => isExecutor(r) && messageCount(r) === 3);
    expect(afterResume).toHaveLength(1);
    expect(afterResume[0].rawBody).toBe(expected);

    // A fork after the executor's first turn (architect 1, executor 1) makes the same call, thinking included.
    const beforeFork = api.requests.length;
    const forked = cli(['fork', runId!, '--turn', '2', '--json'], dataDir, api.url);
    const forkCode = await forked.exited;
    expect({ code: forkCode, output: forkCode === 0 ? '' : forked.output() }).toEqual({ code: 0, output: '' });
    const fromFork = api.requests.slice(beforeFork).filter((r) => isExecutor(r) && messageCount(r) === 3);
    expect(fromFork).toHaveLength(1);
    expect(fromFork[0].rawBody).toBe(expected);
  });
});

import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ChatMessage, ModelRequest, ModelResponse, RoleName, ToolSpec, ToolUseBlock } from '../../../src/team/models/model.port';
import { OFFLINE_MODEL_ID, OfflineModelProvider, parseCriterion } from '../../../src/team/models/offline.model';
import { renderTaskMessage, ROLE_PROMPTS, type TaskMessageInput } from '../../../src/team/domain/prompts';
import { tempDir } from '../../support/temp-dir';
import { modelProviderContract } from './model-provider.contract';

// Drives the offline model through a whole team run with a tiny in-test agent loop whose tools
// really touch a temp directory, the way the real loop feeds tool results back.

const spec = (name: string): ToolSpec => ({ name, description: name, input_schema: { type: 'object' } });
const TOOLS: Record<RoleName, ToolSpec[]> = {
  architect: ['read_file', 'list_files', 'search_files', 'submit_plan'].map(spec),
  executor: ['read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command', 'submit_work'].map(spec),
  reviewer: ['read_file', 'list_files', 'search_files', 'submit_verdict'].map(spec),
};
const SUBMIT: Record<RoleName, string> = { architect: 'submit_plan', executor: 'submit_work', reviewer: 'submit_verdict' };

/** How this suite builds the adapter. */
const makeAdapter = (options?: { latencyMs?: number }) => new OfflineModelProvider(options);

/** The executor's first turn of a run: the offline model answers it with a tool call. */
function executorTurn(): ModelRequest {
  const task = renderTaskMessage('executor', { goal: 'Say hello', acceptanceCriteria: ['file hello.txt contains "Hello"'], iteration: 1 });
  return { runId: 'run-1', role: 'executor', model: 'offline', system: ROLE_PROMPTS.executor, messages: [{ role: 'user', content: task }], tools: TOOLS.executor, maxTokens: 4096 };
}

// The offline model is told nothing: it answers by its own rules, a tool call for an agent turn and
// text for a summary.
modelProviderContract('offline', async () => ({
  textTurn: () => ({ provider: makeAdapter(), request: { ...executorTurn(), purpose: 'summary' } }),
  toolTurn: () => ({ provider: makeAdapter(), request: executorTurn() }),
  // The wait begins inside complete(), before its first await.
  hangingTurn: () => ({ provider: makeAdapter({ latencyMs: 10 * 60_000 }), request: executorTurn(), underWay: async () => undefined }),
  cleanup: async () => undefined,
}));

function runTool(workspace: string, call: ToolUseBlock): { content: string; is_error?: boolean } {
  const input = call.input as Record<string, string>;
  const file = join(workspace, input.path ?? '.');
  switch (call.name) {
    case 'list_files':
      return { content: readdirSync(file).join('\n') || '(empty directory)' };
    case 'read_file':
      return existsSync(file) ? { content: readFileSync(file, 'utf8') || '(empty file)' } : { content: `no such file: ${input.path}`, is_error: true };
    case 'write_file':
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, input.content);
      return { content: `wrote ${input.content.length} bytes to ${input.path}` };
    default:
      return { content: 'accepted' };
  }
}

interface RoleRun {
  submitted: Record<string, unknown>;
  responses: ModelResponse[];
  requests: ModelRequest[];
}

async function runRole(model: OfflineModelProvider, workspace: string, role: RoleName, task: TaskMessageInput): Promise<RoleRun> {
  const messages: ChatMessage[] = [{ role: 'user', content: renderTaskMessage(role, task) }];
  const responses: ModelResponse[] = [];
  const requests: ModelRequest[] = [];
  for (let turn = 0; turn < 20; turn++) {
    const request: ModelRequest = { runId: 'run-1', role, model: 'offline', system: ROLE_PROMPTS[role], messages: structuredClone(messages), tools: TOOLS[role], maxTokens: 4096 };
    requests.push(request);
    const response = await model.complete(request);
    responses.push(response);
    messages.push({ role: 'assistant', content: response.content });
    const calls = response.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
    if (calls.length === 0) throw new Error(`${role} ended its turn without submitting: ${JSON.stringify(response.content)}`);
    expect(calls).toHaveLength(1); // one tool call per turn
    const [call] = calls;
    const result = runTool(workspace, call);
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, ...result }] });
    if (call.name === SUBMIT[role]) return { submitted: call.input, responses, requests };
  }
  throw new Error(`${role} did not submit within 20 turns`);
}

describe('OfflineModelProvider playing a team run', () => {
  const model = new OfflineModelProvider();
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('triad-offline-');
  });
  afterEach(() => dir.remove());

  it('plans, works in increments, gets changes requested once, then approval', async () => {
    const criteria = ['file hello.txt exists', 'file src/greeting.ts contains "export const greeting"', 'Document the greeting in the notes'];
    const goal = 'Add a greeting module';

    const plan = await runRole(model, dir.path, 'architect', { goal, acceptanceCriteria: criteria, iteration: 1 });
    expect(plan.responses[0].content.find((b) => b.type === 'tool_use')).toMatchObject({ name: 'list_files' });
    expect(plan.submitted.steps).toHaveLength(criteria.length);
    expect(String(plan.submitted.plan).split('\n').filter((l) => /^\d+\. /.test(l))).toHaveLength(3);
    expect(readdirSync(dir.path)).toEqual([]); // the architect wrote nothing

    const work1 = await runRole(model, dir.path, 'executor', { goal, acceptanceCriteria: criteria, iteration: 1, plan: String(plan.submitted.plan) });
    expect(work1.submitted.files).toEqual(['hello.txt', 'src/greeting.ts']);
    expect(readFileSync(join(dir.path, 'src/greeting.ts'), 'utf8')).toContain('export const greeting');
    expect(existsSync(join(dir.path, 'NOTES.md'))).toBe(false);

    const review1 = await runRole(model, dir.path, 'reviewer', { goal, acceptanceCriteria: criteria, iteration: 1, workSummary: String(work1.submitted.summary) });
    expect(review1.submitted).toMatchObject({ verdict: 'REQUEST_CHANGES', findings: ['Criterion not met: Document the greeting in the notes'] });

    const work2 = await runRole(model, dir.path, 'executor', {
      goal,
      acceptanceCriteria: criteria,
      iteration: 2,
      plan: String(plan.submitted.plan),
      findings: review1.submitted.findings as string[],
    });
    expect(work2.submitted.files).toEqual(['NOTES.md']);
    expect(readFileSync(join(dir.path, 'NOTES.md'), 'utf8')).toMatch(/^- Document the greeting in the notes$/m);

    const review2 = await runRole(model, dir.path, 'reviewer', { goal, acceptanceCriteria: criteria, iteration: 2, workSummary: String(work2.submitted.summary) });
    expect(review2.submitted).toMatchObject({ verdict: 'APPROVE', findings: [] });

    // Everything it says names the offline model.
    for (const run of [plan, work1, review1, work2, review2]) {
      for (const response of run.responses) {
        expect(response.model).toBe(OFFLINE_MODEL_ID);
        expect(response.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('offline model') });
        expect(response.usage.inputTokens).toBeGreaterThan(0);
        expect(response.usage.outputTokens).toBeGreaterThan(0);
      }
    }
  });

  it('appends to existing files instead of overwriting them, and leaves met criteria alone', async () => {
    writeFileSync(join(dir.path, 'README.md'), '# Project\nSome text.\n');
    writeFileSync(join(dir.path, 'NOTES.md'), '# Notes\n\n- an older note\n');
    const criteria = ['file README.md contains \'Usage\'', 'Explain the release process', 'File README.md exists'];
    const work = await runRole(model, dir.path, 'executor', { goal: 'Docs', acceptanceCriteria: criteria, iteration: 1 });
    expect(readFileSync(join(dir.path, 'README.md'), 'utf8')).toBe('# Project\nSome text.\nUsage\n');
    expect(readFileSync(join(dir.path, 'NOTES.md'), 'utf8')).toBe('# Notes\n\n- an older note\n- Explain the release process\n');
    expect(work.submitted.files).toEqual(['README.md', 'NOTES.md']);

    const review = await runRole(model, dir.path, 'reviewer', { goal: 'Docs', acceptanceCriteria: criteria, iteration: 1 });
    expect(review.submitted).toMatchObject({ verdict: 'APPROVE' });
  });

  it('blocks when the goal is empty', async () => {
    const review = await runRole(model, dir.path, 'reviewer', { goal: '', acceptanceCriteria: ['file a exists'], iteration: 1 });
    expect(review.submitted).toMatchObject({ verdict: 'BLOCK' });
  });

  it('is a pure function of the request: same request, deep-equal response', async () => {
    const criteria = ['file a.txt exists', 'file b.txt contains "b"'];
    const run = await runRole(model, dir.path, 'executor', { goal: 'g', acceptanceCriteria: criteria, iteration: 1 });
    for (const request of run.requests) {
      const again = await new OfflineModelProvider().complete(structuredClone(request));
      const twice = await model.complete(structuredClone(request));
      expect(again).toEqual(twice);
    }
    expect(run.requests.length).toBeGreaterThan(2);
    // Replaying the recorded requests gives the recorded responses (crash recovery, replay).
    const replayed = await Promise.all(run.requests.map((r) => model.complete(structuredClone(r))));
    expect(replayed).toEqual(run.responses);
  });

  it('answers text-only for an unknown role, a missing tool, or a conversation it could not have produced', async () => {
    const task = renderTaskMessage('executor', { goal: 'g', acceptanceCriteria: ['file a exists'], iteration: 1 });
    const base = { runId: 'r', model: 'offline', system: '', maxTokens: 100 };

    const unknownRole = await model.complete({ ...base, role: 'auditor' as RoleName, messages: [{ role: 'user', content: task }], tools: TOOLS.executor });
    expect(unknownRole).toMatchObject({ stopReason: 'end_turn', content: [{ type: 'text' }] });
    expect(unknownRole.content).toHaveLength(1);

    const noTools = await model.complete({ ...base, role: 'executor', messages: [{ role: 'user', content: task }], tools: [] });
    expect(noTools.stopReason).toBe('end_turn');
    expect((noTools.content[0] as { text: string }).text).toMatch(/read_file tool is not available/);

    const foreign = await model.complete({
      ...base,
      role: 'executor',
      tools: TOOLS.executor,
      messages: [
        { role: 'user', content: task },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run_command', input: { command: 'rm -rf /' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] },
      ],
    });
    expect(foreign.stopReason).toBe('end_turn');
    expect((foreign.content[0] as { text: string }).text).toMatch(/cannot continue/);
  });
});

describe('parseCriterion', () => {
  it.each([
    ['file hello.txt exists', { kind: 'exists', path: 'hello.txt' }],
    ['File ./docs/a.md EXISTS.', { kind: 'exists', path: 'docs/a.md' }],
    ['file "my notes.txt" exists', { kind: 'exists', path: 'my notes.txt' }],
    ['file a.ts contains "export const x"', { kind: 'contains', path: 'a.ts', needle: 'export const x' }],
    ["file a.ts contains 'hi there'", { kind: 'contains', path: 'a.ts', needle: 'hi there' }],
    ['FILE a.ts CONTAINS plain words', { kind: 'contains', path: 'a.ts', needle: 'plain words' }],
    ['The README explains installation', { kind: 'note', path: 'NOTES.md' }],
  ])('%s', (text, expected) => {
    expect(parseCriterion(text)).toMatchObject({ ...expected, text });
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeMessagesApi, toolUseStep, withoutCacheControl, type FakeMessagesApi } from '../../support/fake-messages-api';
import { runCliInProcess } from '../../support/in-process-cli';
import { tempDir } from '../../support/temp-dir';
import { appEnv, KEYS, startApp, waitForRun, type AppServer, type Loose } from './approvals-app';

// Tool approvals over real HTTP: the app in a child process, its runs driven by the real SDK
// against the fake Messages API. run_command (risk high) waits at the gate by default.

const API_KEY = 'sk-ant-test-approvals-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

let api: FakeMessagesApi;
let server: AppServer;
let dir: { path: string; remove(): void };
const dataDir = () => join(dir.path, 'data');

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-approvals-');
  server = await startApp(appEnv(dataDir(), api.url, API_KEY));
}, 60_000);
afterAll(async () => {
  await server?.close();
  await api?.stop();
  dir?.remove();
});
afterEach(() => api.reset());

async function launchCommandRun(command: string, extra: Record<string, unknown> = {}): Promise<{ runId: string; approvalId: string }> {
  const runId = await launchOnly(command, extra);
  const run = await waitForRun(server, runId, (r) => r.status === 'awaiting_approval');
  expect(run.pendingApprovals).toHaveLength(1);
  return { runId, approvalId: run.pendingApprovals[0].approvalId };
}

/** Launches the run without waiting for its approval: a short timeout policy may decide it first. */
async function launchOnly(command: string, extra: Record<string, unknown> = {}): Promise<string> {
  api.enqueue(
    toolUseStep('submit_plan', { plan: '1. run the command' }),
    toolUseStep('run_command', { command }, { id: 'toolu_cmd_1' }),
    toolUseStep('submit_work', { summary: 'ran it', files: [] }),
    toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
  );
  const res = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'Run a command', acceptanceCriteria: ['the command ran'], team: TEAM, ...extra } });
  expect(res.status).toBe(202);
  return res.body.runId as string;
}

/** The replayed context's conversation is what the live driver sent the model, plus its last answer. */
async function expectReplayMatchesRequests(runId: string): Promise<void> {
  const ctx = await server.request('GET', `/v1/runs/${runId}/context`, { as: 'aud' });
  expect(ctx.status).toBe(200);
  expect(ctx.body.completeness.score).toBe(1);
  const executorRequests = api.requests.filter((r) => JSON.stringify(r.body?.system ?? '').includes('Executor'));
  const last = withoutCacheControl(executorRequests.at(-1)!.body!.messages);
  expect(ctx.body.roles.executor.messages.slice(0, -1)).toEqual(last);
}

describe('tool approvals over HTTP', () => {
  it('lists the waiting call, refuses the wrong people, approves once (409 after), and the command runs', async () => {
    const { runId, approvalId } = await launchCommandRun('echo approved > out.txt');
    expect(approvalId).toBe(`apr_${runId}.toolu_cmd_1`);

    const listed = await server.request('GET', '/v1/approvals', { as: 'bob' });
    expect(listed.status).toBe(200);
    expect(listed.body.approvals).toEqual([
      expect.objectContaining({ approvalId, runId, toolUseId: 'toolu_cmd_1', role: 'executor', tool: 'run_command', input: { command: 'echo approved > out.txt' }, risk: 'high', launchedBy: 'user:ann' }),
    ]);
    expect((await server.request('GET', `/v1/approvals?runId=${runId}`, { as: 'olga' })).body.approvals).toHaveLength(1);
    expect((await server.request('GET', '/v1/approvals?runId=run_other', { as: 'olga' })).body.approvals).toEqual([]);
    expect((await server.request('GET', '/v1/approvals', { as: 'aud' })).status).toBe(403);
    expect((await server.request('GET', '/v1/approvals', { as: null })).status).toBe(401);
    expect(existsSync(join(dataDir(), 'workspaces', runId, 'out.txt'))).toBe(false);

    // The launcher may not approve the run's own calls (like the review gate): 403, nothing written.
    const before = (await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' })).body.events.length;
    const self = await server.request('POST', `/v1/approvals/${approvalId}/approve`, { as: 'ann', body: { reason: 'mine' } });
    expect(self.status).toBe(403);
    expect(self.body).toEqual({ statusCode: 403, error: 'Forbidden', message: 'you may not decide this approval' });
    expect((await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' })).body.events.length).toBe(before);
    expect((await server.request('POST', `/v1/approvals/${approvalId}/approve`, { as: 'aud', body: {} })).status).toBe(403);
    expect((await server.request('POST', `/v1/approvals/apr_${runId}.toolu_nope/approve`, { as: 'bob', body: {} })).status).toBe(404);
    expect((await server.request('POST', `/v1/approvals/nonsense/approve`, { as: 'bob', body: {} })).status).toBe(404);
    expect((await server.request('POST', `/v1/approvals/${approvalId}/reject`, { as: 'bob', body: {} })).status).toBe(400);
    expect((await server.request('POST', `/v1/approvals/${approvalId}/reject`, { as: 'bob', body: { reason: '   ' } })).status).toBe(400);

    const approved = await server.request('POST', `/v1/approvals/${approvalId}/approve`, { as: 'bob', body: { reason: 'safe enough' } });
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ approvalId, runId, outcome: 'approved', runStatus: 'executing' });
    const again = await server.request('POST', `/v1/approvals/${approvalId}/reject`, { as: 'olga', body: { reason: 'too late' } });
    expect(again.status).toBe(409);

    const run = await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
    expect(run.pendingApprovals).toBeUndefined();
    expect(readFileSync(join(dataDir(), 'workspaces', runId, 'out.txt'), 'utf8')).toBe('approved\n');
    const events = (await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' })).body.events as Array<{ type: string; data: Loose; metadata: Loose }>;
    const decided = events.find((e) => e.type === 'ToolApprovalDecided')!;
    expect(decided.data).toMatchObject({ approvalId, outcome: 'approved', reason: 'safe enough', decider: 'user:bob', deciderKind: 'human' });
    expect(decided.metadata.actor).toBe('user:bob');
    const types = events.map((e) => e.type);
    expect(types.indexOf('ToolApprovalRequested')).toBeLessThan(types.indexOf('ToolApprovalDecided'));
    expect(types.indexOf('ToolApprovalDecided')).toBeLessThan(types.indexOf('ToolCallRequested'));
    expect((await server.request('GET', '/v1/approvals', { as: 'bob' })).body.approvals).toEqual([]);
    await expectReplayMatchesRequests(runId);
  });

  it('a rejection reaches the model as an is_error tool_result "rejected by user: <reason>"', async () => {
    const { runId, approvalId } = await launchCommandRun('rm -rf /tmp/never');
    const rejected = await server.request('POST', `/v1/approvals/${approvalId}/reject`, { as: 'olga', body: { reason: 'never delete anything' } });
    expect(rejected.status).toBe(200);
    expect(rejected.body.outcome).toBe('rejected');
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
    const executorSecond = withoutCacheControl(api.requests[2].body!.messages) as Array<{ role: string; content: Array<Record<string, unknown>> }>;
    expect(executorSecond.at(-1)!.content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_cmd_1', content: 'rejected by user: never delete anything', is_error: true }]);
    await expectReplayMatchesRequests(runId);
  });

  it('a timeout policy decides when no human does (auto_deny after 300 ms), fired by the durable timer', async () => {
    // The call may wait less than a poll under load: the events, not a status seen in passing, prove it waited.
    const runId = await launchOnly('echo late', { toolApproval: { timeout: { policy: 'auto_deny', afterMs: 300 } } });
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
    const events = (await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' })).body.events as Array<{ type: string; data: Loose }>;
    const requested = events.find((e) => e.type === 'ToolApprovalRequested')!;
    expect(requested.data.timeout).toEqual({ policy: 'auto_deny', dueAt: expect.any(String) });
    expect(events.find((e) => e.type === 'ToolApprovalDecided')!.data).toMatchObject({ outcome: 'rejected', decider: 'system', deciderKind: 'system', policy: 'auto_deny' });
    const result = events.find((e) => e.type === 'ToolCallCompleted' && e.data.toolUseId === 'toolu_cmd_1')!;
    expect(result.data.output).toMatch(/^rejected: no human approved this call in time \(timeout policy auto_deny\)/);
    await expectReplayMatchesRequests(runId);
  });

  it('launch validation: a timeout policy needs afterMs; an unknown threshold is 400', async () => {
    const bad = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'x', acceptanceCriteria: ['y'], toolApproval: { timeout: { policy: 'auto_approve' } } } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/afterMs/);
    expect((await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'x', acceptanceCriteria: ['y'], toolApproval: { threshold: 'low' } } })).status).toBe(400);
    expect((await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'x', acceptanceCriteria: ['y'], retry: { maxAttempts: 0 } } })).status).toBe(400);
  });

  it('the CLI lists and approves; it drives the run on until it waits for the review', async () => {
    const { runId, approvalId } = await launchCommandRun('echo cli > cli.txt');
    const env = appEnv(dataDir(), api.url, API_KEY);
    const listed = await runCliInProcess(['approvals', 'list', '--json'], env);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ approvalId, runId, tool: 'run_command' })]);
    // ann launched the run: her own key may not approve its calls.
    const self = await runCliInProcess(['approvals', 'approve', approvalId], { ...env, TRIAD_API_KEY: KEYS.ann });
    expect(self.code).toBe(5);
    expect(self.stderr).toContain('you may not decide this approval');
    // The server drives the run once decided (its supervisor starts it); the CLI waits with it.
    const approved = await runCliInProcess(['approvals', 'approve', approvalId, '--as', 'bob', '--reason', 'ok', '--json'], { ...env, TRIAD_API_KEY: KEYS.bob });
    expect(approved.code).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ approvalId, runId, outcome: 'approved' });
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
    expect(readFileSync(join(dataDir(), 'workspaces', runId, 'cli.txt'), 'utf8')).toBe('cli\n');
  });
});

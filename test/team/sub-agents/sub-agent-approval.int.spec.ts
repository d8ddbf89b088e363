import { decideApproval, type ApprovalCommand } from '../../../src/team/domain/approval-decider';
import type { ToolApprovalRequestedData, ToolCallCompletedData } from '../../../src/team/domain/run-events';
import { foldRun, runStatus } from '../../../src/team/domain/run-state';
import { ScriptedModelProvider, textResponse, toolUseResponse } from '../../../src/team/models/scripted.model';
import { PRODUCT_LAUNCH_DEFAULTS } from '../../../src/team/domain/resilience/policies';
import { applyToSummary, type RunSummaryState } from '../../../src/team/runs/run-summary';
import { dataOf, plan, roleScript, startHarness, verdict, type Harness } from '../resilience/resilience-support';

// Under the product's approval policy, a spawn whose sub-agent would get a high-risk tool
// (run_command) waits for a human: the sub-agent is awaiting_approval until then.

let h: Harness | undefined;
afterEach(() => h?.remove());

async function decide(harness: Harness, outcome: 'approve' | 'reject'): Promise<void> {
  const state = foldRun(await harness.events());
  const [req] = dataOf<ToolApprovalRequestedData>(await harness.events(), 'ToolApprovalRequested');
  const at = new Date().toISOString();
  const command: ApprovalCommand =
    outcome === 'approve'
      ? { type: 'ApproveToolCall', approvalId: req.approvalId, approver: { id: 'user:bob', kind: 'human' }, reason: 'fine', at }
      : { type: 'RejectToolCall', approvalId: req.approvalId, approver: { id: 'user:bob', kind: 'human' }, reason: 'no commands', at };
  await harness.appendAsOther(decideApproval(command, state));
}

function model() {
  let sub = 0;
  const team = roleScript({
    architect: [plan()],
    executor: [toolUseResponse('spawn_sub_agent', { role: 'tester', task: 'run the tests' }, { id: 'tu_spawn' }), toolUseResponse('submit_work', { summary: 'delegated' })],
    reviewer: [verdict('APPROVE')],
  });
  return new ScriptedModelProvider((request, n) => (request.subAgent ? (sub++ === 0 ? toolUseResponse('run_command', { command: 'echo tested' }) : textResponse('tests pass')) : team(request, n)));
}

describe('spawning under a tool-approval policy', () => {
  it('given a sub-agent that would get run_command, then the spawn waits; approved, it runs its command without asking again', async () => {
    h = await startHarness({ model: model(), defaults: PRODUCT_LAUNCH_DEFAULTS });
    let state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_approval');
    expect(state.subAgents['executor/1'].status).toBe('awaiting_approval');
    let summary: RunSummaryState | undefined;
    for (const e of await h.events()) summary = applyToSummary(summary, e);
    expect(summary!.summary.subAgents).toEqual([expect.objectContaining({ path: 'executor/1', status: 'awaiting_approval' })]);
    expect(summary!.summary.pendingApprovals).toEqual([expect.objectContaining({ tool: 'spawn_sub_agent', risk: 'high' })]);

    await decide(h, 'approve');
    state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    const events = await h.events();
    expect(events.map((e) => e.type).filter((t) => /^SubAgent(Spawned|AwaitingApproval|Queued|Started|Completed)$/.test(t))).toEqual([
      'SubAgentSpawned',
      'SubAgentAwaitingApproval',
      'SubAgentStarted',
      'SubAgentCompleted',
    ]);
    expect(dataOf<{ name: string; output: string }>(events, 'SubAgentToolCompleted')).toEqual([expect.objectContaining({ name: 'run_command', output: expect.stringContaining('tested') })]);
    expect(dataOf<ToolCallCompletedData>(events, 'ToolCallCompleted').find((d) => d.toolUseId === 'tu_spawn')).toMatchObject({ isError: false, output: expect.stringContaining('tests pass') });
  });

  it('rejected, the sub-agent is cancelled and never runs', async () => {
    h = await startHarness({ model: model(), defaults: PRODUCT_LAUNCH_DEFAULTS });
    await h.driver.drive();
    await decide(h, 'reject');
    const state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(state.subAgents['executor/1'].status).toBe('cancelled');
    const events = await h.events();
    expect(dataOf(events, 'SubAgentModelCalled')).toEqual([]);
    expect(dataOf<ToolCallCompletedData>(events, 'ToolCallCompleted').find((d) => d.toolUseId === 'tu_spawn')).toMatchObject({ isError: true, output: 'rejected by user: no commands' });
  });
});

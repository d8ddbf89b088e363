import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decideApproval, type ApprovalCommand } from '../../../src/team/domain/approval-decider';
import type { ToolApprovalRequestedData, ToolCallCompletedData } from '../../../src/team/domain/run-events';
import { foldRun, runStatus } from '../../../src/team/domain/run-state';
import { nextAction } from '../../../src/team/domain/next-action';
import { ScriptedModelProvider } from '../../../src/team/models/scripted.model';
import { PRODUCT_LAUNCH_DEFAULTS } from '../../../src/team/domain/resilience/policies';
import { dataOf, expectReplayMatchesLive, lastUserMessage, plan, probeTools, respond, roleScript, startHarness, submitWork, toolUse, verdict, type Harness, type ProbeEntry } from './resilience-support';

// Tool approvals on the scripted model: a risky call waits (awaiting_approval) until a human
// decides; approved, it runs; rejected, the model is told "rejected by user: <reason>".

let h: Harness | undefined;
afterEach(() => {
  h?.remove();
  h = undefined;
});

/** What the approval command handler does: fold, decide, append at the revision read. */
async function decide(harness: Harness, command: (approvalId: string) => ApprovalCommand): Promise<void> {
  const state = foldRun(await harness.events());
  const [req] = dataOf<ToolApprovalRequestedData>(await harness.events(), 'ToolApprovalRequested').filter((r) => !state.approvals.get(r.toolUseId)?.decided);
  await harness.appendAsOther(decideApproval(command(req.approvalId), state));
}
const approveBy = (who: string) => (approvalId: string): ApprovalCommand => ({ type: 'ApproveToolCall', approvalId, approver: { id: who, kind: 'human' }, reason: 'fine', at: new Date().toISOString() });
const rejectBy = (who: string, reason: string) => (approvalId: string): ApprovalCommand => ({ type: 'RejectToolCall', approvalId, approver: { id: who, kind: 'human' }, reason, at: new Date().toISOString() });

const command = (cmd: string, id = 'tu_cmd') => respond(toolUse('run_command', { command: cmd }, id));

describe('tool approvals in a run', () => {
  it('the API and CLI launch with run_command (risk high) behind approval', () => {
    expect(PRODUCT_LAUNCH_DEFAULTS.toolApproval).toEqual({ threshold: 'high', allowLauncherToApprove: false, timeout: { policy: 'wait' } });
  });

  it('run_command waits for a human; approved, it runs and the run goes on', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [command('echo ok > out.txt'), submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, defaults: PRODUCT_LAUNCH_DEFAULTS });
    let state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_approval');
    expect(nextAction(state, Date.now())).toEqual({ kind: 'waitForApproval', approvalIds: ['tu_cmd'] });
    expect((await h.types()).at(-1)).toBe('ToolApprovalRequested');
    expect(dataOf<ToolApprovalRequestedData>(await h.events(), 'ToolApprovalRequested')[0]).toMatchObject({
      approvalId: `apr_${h.runId}.tu_cmd`,
      name: 'run_command',
      input: { command: 'echo ok > out.txt' },
      risk: 'high',
      threshold: 'high',
    });
    expect(existsSync(join(h.workspace, 'out.txt'))).toBe(false);
    await expectReplayMatchesLive(h, state);

    await decide(h, approveBy('user:bob'));
    state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(readFileSync(join(h.workspace, 'out.txt'), 'utf8')).toBe('ok\n');
    await expectReplayMatchesLive(h, state);
  });

  it('rejected, the model gets an is_error tool_result "rejected by user: <reason>" and the command never runs', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [command('rm -rf data'), submitWork('did not delete')], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, launch: { toolApproval: {} } });
    await h.driver.drive();
    await decide(h, rejectBy('user:bob', 'never delete data'));
    const state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    const result = dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').find((d) => d.toolUseId === 'tu_cmd')!;
    expect(result).toMatchObject({ isError: true, output: 'rejected by user: never delete data' });
    expect((await h.types()).filter((t) => t === 'ToolCallRequested')).toEqual([]);
    const next = lastUserMessage(model.calls.filter((c) => c.role === 'executor')[1]);
    expect(next.content).toEqual([{ type: 'tool_result', tool_use_id: 'tu_cmd', content: 'rejected by user: never delete data', is_error: true }]);
    await expectReplayMatchesLive(h, state);
  });

  it('the whole turn waits: a read-only call next to a risky one runs only after the decision, results in the model order', async () => {
    const log: ProbeEntry[] = [];
    const turn = respond(toolUse('probe_read', { id: 'r', ms: 1 }, 'tu_r'), toolUse('run_command', { command: 'echo hi' }, 'tu_cmd'));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: probeTools(log), launch: { toolApproval: { threshold: 'high' } } });
    await h.driver.drive();
    expect(log).toEqual([]);
    await decide(h, approveBy('user:bob'));
    const state = await h.newDriver().drive();
    expect(log.map((e) => e.id)).toEqual(['r', 'r']);
    const completed = dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').filter((d) => d.role === 'executor');
    expect(completed.slice(0, 2).map((d) => d.toolUseId)).toEqual(['tu_r', 'tu_cmd']);
    await expectReplayMatchesLive(h, state);
  });

  it('threshold none: nothing waits', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [command('echo free > out.txt'), submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, launch: { toolApproval: { threshold: 'none' } } });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(await h.events(), 'ToolApprovalRequested')).toEqual([]);
  });

  it('a timeout policy records its due time in the request; fired when due, the system decides', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [command('echo late > out.txt'), submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, launch: { toolApproval: { timeout: { policy: 'auto_approve', afterMs: 60_000 } } } });
    const before = Date.now();
    await h.driver.drive();
    const [req] = dataOf<ToolApprovalRequestedData>(await h.events(), 'ToolApprovalRequested');
    expect(req.timeout!.policy).toBe('auto_approve');
    expect(Date.parse(req.timeout!.dueAt) - before).toBeGreaterThanOrEqual(60_000);
    const due = Date.parse(req.timeout!.dueAt);
    await decide(h, (approvalId) => ({ type: 'FireApprovalTimeout', approvalId, at: new Date(due).toISOString(), nowMs: due }));
    const state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(readFileSync(join(h.workspace, 'out.txt'), 'utf8')).toBe('late\n');
    await expectReplayMatchesLive(h, state);
  });
});

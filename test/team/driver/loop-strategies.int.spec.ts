import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Checkpoint } from '../../../src/checkpoint/checkpoint';
import type { CheckpointStore } from '../../../src/checkpoint/checkpoint-store.port';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import type { LoopInput } from '../../../src/team/commands/launch';
import { OfflineModelProvider } from '../../../src/team/models/offline.model';
import type { ModelRequest } from '../../../src/team/models/model.port';
import { dataOf, startRun, type Harness } from './driver-support';

/** The offline model, remembering the model and tools of each request. */
function recordingOffline(): { model: OfflineModelProvider; requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  const offline = new OfflineModelProvider();
  const model = Object.assign(Object.create(offline) as OfflineModelProvider, {
    complete: (request: ModelRequest) => {
      requests.push(request);
      return offline.complete(request);
    },
  });
  return { model, requests };
}

const THREE = ['file a.txt contains "A"', 'file b.txt contains "B"', 'file c.txt exists'];

async function runWith(loop: Record<string, LoopInput>, criteria = THREE, goal = 'Write three files'): Promise<Harness & { requests: ModelRequest[] }> {
  const { model, requests } = recordingOffline();
  const team = Object.fromEntries(Object.entries(loop).map(([role, l]) => [role, { loop: l }]));
  const h = await startRun({ model, launch: { goal, acceptanceCriteria: criteria, team } });
  return Object.assign(h, { requests });
}

describe('loop strategies on the offline model', () => {
  it('plan_execute: the executor plans with its planner model, works each step, then submits; the run reaches the gate', async () => {
    const h = await runWith({ executor: { strategy: 'plan_execute', plannerModel: 'planner-1', executorModel: 'worker-1' } });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(events, 'LoopPlanRecorded')).toEqual([expect.objectContaining({ role: 'executor', steps: expect.any(Array) })]);
    expect(dataOf(events, 'LoopPlanRecorded')[0].steps).toHaveLength(3);
    expect(dataOf(events, 'LoopStepStarted').map((d) => d.index)).toEqual([1, 2, 3]);
    expect(dataOf(events, 'LoopStepCompleted')).toHaveLength(3);
    // The plan call used the planner model and offered submit_steps alone; step turns the executor model.
    const executorCalls = dataOf<{ role: string; model: string }>(events, 'ModelCallStarted').filter((d) => d.role === 'executor');
    expect(executorCalls[0].model).toBe('planner-1');
    expect(executorCalls.slice(1).every((c) => c.model === 'worker-1')).toBe(true);
    const executorRequests = h.requests.filter((r) => r.role === 'executor');
    expect(executorRequests[0].tools.map((t) => t.name)).toEqual(['submit_steps']);
    expect(executorRequests[1].tools.map((t) => t.name)).toEqual(expect.arrayContaining(['complete_step', 'fail_step', 'write_file']));
    expect(executorRequests[1].tools.map((t) => t.name)).not.toContain('submit_work');
    // The other roles ran react: no loop events of theirs.
    expect(events.filter((e) => e.type.startsWith('Loop') && (e.data as { role: string }).role !== 'executor')).toEqual([]);
    expect(readFileSync(join(h.workspace, 'b.txt'), 'utf8')).toContain('B');
    expect(state.verdict?.verdict).toBe('APPROVE');
    h.remove();
  });

  it('hybrid: a criterion asking to delegate is handed to a sub-agent inside its step; the result comes back and the step completes', async () => {
    const h = await runWith({ executor: { strategy: 'hybrid' } }, ['delegate to a coder: file hello.txt contains "Hello"', 'file bye.txt contains "Bye"']);
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(readFileSync(join(h.workspace, 'hello.txt'), 'utf8')).toContain('Hello');
    const types = events.map((e) => e.type);
    expect(types.filter((t) => /^SubAgent(Spawned|Started|Completed)$/.test(t))).toEqual(['SubAgentSpawned', 'SubAgentStarted', 'SubAgentCompleted']);
    // The spawn happened inside the first step: after its LoopStepStarted, before its LoopStepCompleted.
    const stepStarted = types.indexOf('LoopStepStarted');
    const stepCompleted = types.indexOf('LoopStepCompleted');
    expect(types.indexOf('SubAgentSpawned')).toBeGreaterThan(stepStarted);
    expect(types.indexOf('SubAgentCompleted')).toBeLessThan(stepCompleted);
    expect(dataOf<{ summary: string }>(events, 'LoopStepCompleted')[0].summary).toContain('hello.txt: done by a coder sub-agent');
    expect(state.verdict?.verdict).toBe('APPROVE');
    h.remove();
  });

  it('plan_execute: a failed step asks for a new plan (LoopReplanned), and the run still reaches the gate', async () => {
    const h = await runWith({ executor: { strategy: 'plan_execute' } }, ['file a.txt contains "A"', 'fail the first step once']);
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(events, 'LoopStepFailed')).toEqual([expect.objectContaining({ index: 1, cause: 'fail_step' })]);
    expect(dataOf(events, 'LoopReplanned')).toEqual([expect.objectContaining({ replan: 1 })]);
    h.remove();
  });

  it('plan_execute: a failed step with no replan left ends the run ERROR', async () => {
    const h = await runWith({ architect: { strategy: 'plan_execute', maxReplans: 0 } }, ['file a.txt exists', 'fail the first step once']);
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('failed');
    expect(terminationReason(state)).toBe('ERROR');
    expect(state.team.context.ended?.message).toMatch(/no replan is left/);
    h.remove();
  });

  it('hybrid: at least 3 steps, a progress summary and a checkpoint after each', async () => {
    const { model } = recordingOffline();
    const saved: Checkpoint[] = [];
    const checkpoints: CheckpointStore = { save: async (cp) => void saved.push(cp), latest: async () => saved.at(-1), close: async () => undefined };
    const h = await startRun({
      model,
      checkpoints,
      launch: { goal: 'Write a file', acceptanceCriteria: ['file a.txt contains "A"'], team: { executor: { loop: { strategy: 'hybrid', maxTurnsPerStep: 4 } } } },
    });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(events, 'LoopPlanRecorded')[0].steps).toHaveLength(3);
    const completed = dataOf<{ progress: string }>(events, 'LoopStepCompleted');
    expect(completed).toHaveLength(3);
    expect(completed[2].progress.split('\n')).toHaveLength(3);
    const reasons = saved.map((c) => c.reason);
    expect(reasons.filter((r) => r === 'step')).toHaveLength(3);
    h.remove();
  });

  it('auto: a complex task gets hybrid, a simple one react; the choice is an event', async () => {
    const h = await runWith({ executor: { strategy: 'auto' } }, [...THREE, 'file d.txt exists']);
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(events, 'LoopStrategyChosen')).toEqual([
      expect.objectContaining({ role: 'executor', phase: 'executing', strategy: 'hybrid', complexity: 'complex', downgraded: false }),
    ]);
    expect(dataOf(events, 'LoopStepCompleted')).toHaveLength(4);
    h.remove();

    const simple = await runWith({ reviewer: { strategy: 'auto' } }, ['file a.txt exists'], 'Write a file');
    const s2 = await simple.driver.drive();
    const e2 = await simple.events();
    expect(runStatus(s2)).toBe('awaiting_review');
    expect(dataOf(e2, 'LoopStrategyChosen')).toEqual([expect.objectContaining({ role: 'reviewer', strategy: 'react', complexity: 'simple' })]);
    expect(e2.filter((e) => e.type === 'LoopPlanRecorded')).toEqual([]);
    simple.remove();
  });

  it('hybrid: after REQUEST_CHANGES the executor plans again in iteration 2, works its steps and submits; the run reaches the gate', async () => {
    const offline = new OfflineModelProvider();
    let reviews = 0;
    const model = Object.assign(Object.create(offline) as OfflineModelProvider, {
      complete: async (request: ModelRequest) => {
        const response = await offline.complete(request);
        // The first verdict asks for changes; the offline model decides the rest.
        const verdict = response.content.find((b) => b.type === 'tool_use' && b.name === 'submit_verdict');
        if (verdict && verdict.type === 'tool_use' && reviews++ === 0) {
          return { ...response, content: [{ ...verdict, input: { verdict: 'REQUEST_CHANGES', findings: ['say more in a.txt'], summary: 'more' } }] };
        }
        return response;
      },
    });
    const h = await startRun({
      model,
      launch: { goal: 'Write a file', acceptanceCriteria: ['file a.txt contains "A"'], maxIterations: 3, team: { executor: { loop: { strategy: 'hybrid' } }, reviewer: { loop: { strategy: 'plan_execute' } } } },
    });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(events.filter((e) => e.type === 'IterationStarted')).toHaveLength(1);
    const plans = dataOf<{ role: string }>(events, 'LoopPlanRecorded');
    expect(plans.map((p) => p.role)).toEqual(['executor', 'reviewer', 'executor', 'reviewer']);
    const executorSteps = dataOf<{ role: string; index: number }>(events, 'LoopStepCompleted').filter((d) => d.role === 'executor').map((d) => d.index);
    expect(executorSteps).toEqual([1, 2, 3, 1, 2, 3]);
    expect(state.verdict?.verdict).toBe('APPROVE');
    h.remove();
  });
});

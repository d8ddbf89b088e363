import { join } from 'node:path';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { startE2eApp, type E2eApp } from '../support/e2e-app';
import { runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';
import { waitForRun } from '../support/app-client';

// Loop strategies through the real app: a hybrid executor launched over HTTP reaches the human
// gate with its plan and steps in the run's events and summary; bad loop settings are a 400 with
// nothing written; `triad run --loop role=strategy` takes the same settings.

jest.setTimeout(60_000);

let e2e: E2eApp;

beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await e2e?.close();
  await stopInProcessCli();
});

const body = (executor: Record<string, unknown>) => ({
  goal: 'Write two files',
  acceptanceCriteria: ['file a.txt contains "A"', 'file b.txt contains "B"'],
  team: { executor },
});

const runUntil = (runId: string, check: (run: RunSummary) => boolean) => waitForRun(e2e, runId, check, 45_000, { detail: () => e2e.stderr });

describe('loop strategies over HTTP', () => {
  it('a hybrid executor plans, works its steps and reaches awaiting_review; the summary shows its strategy and step', async () => {
    const res = await e2e.request<{ runId: string }>('POST', '/v1/runs', { body: body({ loop: { strategy: 'hybrid', maxTurnsPerStep: 4 } }) });
    expect(res.status).toBe(202);
    const run = await runUntil(res.body.runId, (r) => r.status === 'awaiting_review' || r.endedAt !== undefined);
    expect(run.status).toBe('awaiting_review');
    expect(run.loops).toEqual({ executor: { strategy: 'hybrid', running: 'hybrid', steps: 3, replans: 0, currentStep: expect.objectContaining({ index: 3, of: 3, status: 'completed' }) } });
    const events = (await e2e.request<{ events: RecordedEvent[] }>('GET', `/v1/runs/${res.body.runId}/events`)).body.events;
    const launched = events[0].data as { team: { executor: { loop: unknown }; architect: { loop?: unknown } } };
    expect(launched.team.executor.loop).toEqual({ strategy: 'hybrid', maxReplans: 3, maxPlanSteps: 7, maxTurnsPerStep: 4 });
    expect(launched.team.architect.loop).toBeUndefined();
    expect(events.filter((e) => e.type.startsWith('Loop')).map((e) => e.type)).toEqual([
      'LoopPlanRecorded',
      ...['LoopStepStarted', 'LoopStepCompleted'],
      ...['LoopStepStarted', 'LoopStepCompleted'],
      ...['LoopStepStarted', 'LoopStepCompleted'],
    ]);
    await e2e.request('POST', `/v1/runs/${res.body.runId}/cancel`);
  });

  it('a fork taken in the middle of the plan continues with the next step, with the overridden model for every call', async () => {
    // The offline model serves its own name only: the loop names it, and the fork's override must clear it.
    const res = await e2e.request<{ runId: string }>('POST', '/v1/runs', { body: body({ loop: { strategy: 'plan_execute', executorModel: 'triad-offline-1' } }) });
    const parent = res.body.runId;
    await runUntil(parent, (r) => r.status === 'awaiting_review');
    const events = (await e2e.request<{ events: RecordedEvent[] }>('GET', `/v1/runs/${parent}/events`)).body.events;
    // Turn N: the executor's turn that completed its first step.
    const firstDone = events.findIndex((e) => e.type === 'LoopStepCompleted');
    const turn = events.slice(0, firstDone).filter((e) => e.type === 'ModelCallCompleted').length;
    const forked = await e2e.request<{ runId: string }>('POST', `/v1/runs/${parent}/fork`, { body: { turn, overrides: { team: { executor: { model: 'triad-offline-1' } } } } });
    expect(forked.status).toBe(202);
    const run = await runUntil(forked.body.runId, (r) => r.status === 'awaiting_review' || r.endedAt !== undefined);
    expect(run.status).toBe('awaiting_review');
    const own = (await e2e.request<{ events: RecordedEvent[] }>('GET', `/v1/runs/${forked.body.runId}/events`)).body.events.filter((e) => e.streamId === `run-${forked.body.runId}`);
    const loopEvents = own.filter((e) => e.type.startsWith('Loop')).map((e) => `${e.type}:${(e.data as { index?: number }).index ?? ''}`);
    expect(loopEvents).toEqual(['LoopStepCompleted:2']);
    // The fork's summary knows the plan it inherited: its size and the step that was in progress.
    expect(run.loops?.executor).toMatchObject({ strategy: 'plan_execute', running: 'plan_execute', steps: 2, replans: 0, currentStep: { index: 2, of: 2, status: 'completed' } });
    const executorModels = own.filter((e) => e.type === 'ModelCallStarted' && (e.data as { role: string }).role === 'executor').map((e) => (e.data as { model: string }).model);
    expect(executorModels.length).toBeGreaterThan(0);
    expect(new Set(executorModels)).toEqual(new Set(['triad-offline-1']));
    const forkedView = (own.find((e) => e.type === 'RunForked')!.data as { view: { launched: { team: { executor: { model: string; loop: Record<string, unknown> } } } } }).view.launched.team.executor;
    expect(forkedView.model).toBe('triad-offline-1');
    expect(forkedView.loop.executorModel).toBeUndefined();
    for (const id of [parent, forked.body.runId]) await e2e.request('POST', `/v1/runs/${id}/cancel`);
  });

  it('an unknown strategy, numbers out of range, a hybrid plan without room for 3 steps (or its turns), a role that does not exist are a 400, and nothing is written', async () => {
    const before = (await e2e.request<{ runs: RunSummary[] }>('GET', '/v1/runs')).body.runs.length;
    const bad: Record<string, unknown>[] = [
      { loop: { strategy: 'tree_of_thought' } },
      { loop: {} },
      { loop: { strategy: 'hybrid', maxTurnsPerStep: 0 } },
      { loop: { strategy: 'plan_execute', maxReplans: 11 } },
      { loop: { strategy: 'plan_execute', maxPlanSteps: 21 } },
      { loop: { strategy: 'hybrid', maxPlanSteps: 2 } },
      { loop: { strategy: 'plan_execute', plannerModel: '' } },
      { loop: [] },
      { loop: [{ strategy: 'hybrid' }] },
      { loop: 'hybrid' },
      { maxTurns: 3, loop: { strategy: 'hybrid' } },
      { maxTurns: 1, loop: { strategy: 'plan_execute' } },
    ];
    for (const executor of bad) {
      const res = await e2e.request<{ statusCode: number; message: string | string[] }>('POST', '/v1/runs', { body: body(executor) });
      expect({ executor, status: res.status }).toEqual({ executor, status: 400 });
    }
    // A loop setting for a role the team does not have.
    const unknownRole = { ...body({}), team: { coder: { loop: { strategy: 'hybrid' } } } };
    expect((await e2e.request('POST', '/v1/runs', { body: unknownRole })).status).toBe(400);
    const tight = await e2e.request<{ message: string }>('POST', '/v1/runs', { body: body({ maxTurns: 3, loop: { strategy: 'hybrid' } }) });
    expect(JSON.stringify(tight.body.message)).toMatch(/team\.executor\.maxTurns must be at least 4 for the hybrid strategy/);
    const res = await e2e.request<{ message: string[] }>('POST', '/v1/runs', { body: body({ loop: { strategy: 'tree_of_thought' } }) });
    expect(res.body.message).toEqual(['team.executor.loop.strategy must be one of the following values: react, plan_execute, hybrid, auto']);
    expect((await e2e.request<{ runs: RunSummary[] }>('GET', '/v1/runs')).body.runs).toHaveLength(before);
  });
});

describe('triad run --loop', () => {
  const dir = tempDir('triad-cli-loop-');
  afterAll(() => dir.remove());
  const env = (): NodeJS.ProcessEnv => {
    const base: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRIAD_') && !k.startsWith('ANTHROPIC_')) base[k] = v;
    return { ...base, TRIAD_DATA_DIR: join(dir.path, 'data'), TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'ann' };
  };

  it('runs a role with the strategy given, and refuses an unknown one in one line (exit 2)', async () => {
    const ok = await runCliInProcess(['run', 'Write a', '--criteria', 'file a.txt contains "A"', '--loop', 'executor=plan_execute', '--json'], env());
    expect(ok.code).toBe(0);
    const summary = JSON.parse(ok.stdout.trim().split('\n').at(-1)!) as RunSummary;
    expect(summary).toMatchObject({ status: 'awaiting_review', loops: { executor: { strategy: 'plan_execute', steps: 1, currentStep: { index: 1, of: 1, status: 'completed' } } } });

    const bad = await runCliInProcess(['run', 'Write a', '--criteria', 'file a.txt exists', '--loop', 'executor=magic'], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('triad: --loop executor=<strategy> must be one of the following values: react, plan_execute, hybrid, auto\n');
    const malformed = await runCliInProcess(['run', 'Write a', '--criteria', 'file a.txt exists', '--loop', 'hybrid'], env());
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toBe("triad: --loop takes role=strategy (architect, executor or reviewer), got 'hybrid'\n");
  });
});

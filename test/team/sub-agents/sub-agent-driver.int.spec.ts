import { readFileSync } from 'node:fs';
import { restoreCheckpoint, takeCheckpoint } from '../../../src/checkpoint/checkpoint';
import { contextOf, replayRun } from '../../../src/session-replay/replay';
import { join } from 'node:path';
import { foldRun, runStatus, totalTokens } from '../../../src/team/domain/run-state';
import { workspaceAt } from '../../../src/team/workspace/workspace-effects';
import { createHash } from 'node:crypto';
import { OfflineModelProvider } from '../../../src/team/models/offline.model';
import { ScriptedModelProvider, textResponse, toolUseResponse, type ScriptStep } from '../../../src/team/models/scripted.model';
import { applyToSummary, type RunSummaryState } from '../../../src/team/runs/run-summary';
import { dataOf, plan, roleScript, startRun, verdict, type Harness } from '../driver/driver-support';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { ModelError } from '../../../src/team/models/model.port';

describe('sub-agents driven in the run', () => {
  let harness: Harness | undefined;
  afterEach(() => harness?.remove());

  it('given a criterion asking to delegate, when the offline model runs, then the executor spawns a coder sub-agent whose result comes back as the tool result', async () => {
    harness = await startRun({
      model: new OfflineModelProvider(),
      launch: { acceptanceCriteria: ['delegate to a coder: file hello.txt contains "Hello"', 'file notes.txt exists'] },
    });
    const state = await harness.driver.drive();
    const events = await harness.events();
    const types = events.map((e) => e.type);

    expect(runStatus(state)).toBe('awaiting_review');
    expect(readFileSync(join(harness.workspace, 'hello.txt'), 'utf8')).toContain('Hello');
    // Its lifecycle, each step an event of the run's stream.
    const lifecycle = types.filter((t) => /^SubAgent(Spawned|Queued|Started|Completed|Failed|TimedOut|Cancelled)$/.test(t));
    expect(lifecycle).toEqual(['SubAgentSpawned', 'SubAgentStarted', 'SubAgentCompleted']);
    const [spawned] = dataOf<{ agent: string; path: string; tools: string[]; role: string }>(events, 'SubAgentSpawned');
    expect(spawned).toEqual(expect.objectContaining({ path: 'executor/1', role: 'coder', agent: `agent:coder:${harness.runId}/executor/1` }));
    expect(spawned.tools).not.toContain('submit_work');
    // Its turns: read, write, answer — with real tools.
    expect(dataOf<{ name: string }>(events, 'SubAgentToolCompleted').map((d) => d.name)).toEqual(['read_file', 'write_file']);
    expect(dataOf(events, 'SubAgentModelCalled')).toHaveLength(3);
    // What it wrote is part of the log, like its parent's writes: the workspace folds from the events.
    const hello = readFileSync(join(harness.workspace, 'hello.txt'));
    const [, write] = dataOf<{ files?: unknown[] }>(events, 'SubAgentToolCompleted');
    expect(write.files).toEqual([{ path: 'hello.txt', sha256: createHash('sha256').update(hello).digest('hex'), size: hello.length }]);
    expect(workspaceAt(events).files.get('hello.txt')).toEqual(expect.objectContaining({ sha256: createHash('sha256').update(hello).digest('hex') }));
    // The result is the spawn call's result.
    const spawnResult = dataOf<{ name: string; output: string; isError: boolean }>(events, 'ToolCallCompleted').find((d) => d.name === 'spawn_sub_agent')!;
    expect(spawnResult.isError).toBe(false);
    expect(spawnResult.output).toContain('Sub-agent coder: wrote hello.txt');
    expect(dataOf<{ verdict: string }>(events, 'VerdictSubmitted').map((d) => d.verdict)).toEqual(['APPROVE']);

    // Its tokens count against the run's budget; replay of the stream rebuilds it exactly.
    const replayed = foldRun(events);
    expect(replayed.subAgents['executor/1'].status).toBe('completed');
    expect(replayed.subAgents['executor/1'].messages).toEqual(state.subAgents['executor/1'].messages);
    // The replayed context shows its conversation; every event is understood.
    const replay = replayRun(events, harness.runId);
    const context = contextOf(replay.state, replay.completeness);
    expect(context.completeness.missing).toEqual([]);
    expect(context.subAgents?.['executor/1']).toEqual(expect.objectContaining({ role: 'coder', status: 'completed', turns: 3, messages: state.subAgents['executor/1'].messages }));
    // A checkpoint holds them: resuming from it equals the full replay.
    expect(restoreCheckpoint(takeCheckpoint(replayed, 'test', new Date())).subAgents).toEqual(replayed.subAgents);
    expect(totalTokens(replayed)).toBeGreaterThan(Object.values(replayed.usage).reduce((n, u) => n + u.inputTokens + u.outputTokens, 0));

    // The run view lists it.
    let summary: RunSummaryState | undefined;
    for (const e of events) summary = applyToSummary(summary, e);
    expect(summary!.summary.subAgents).toEqual([
      expect.objectContaining({ path: 'executor/1', role: 'coder', status: 'completed', turns: 3, result: expect.stringContaining('wrote hello.txt') }),
    ]);
  });

  it('given a scripted executor, when it asks for tools wider than its own or for a bad role, then the spawn is refused as the tool result and nothing is spawned', async () => {
    harness = await startRun({
      model: new ScriptedModelProvider(
        roleScript({
          architect: [plan()],
          executor: [
            toolUseResponse('spawn_sub_agent', { role: 'coder', task: 'x', tools: ['read_file', 'mcp__evil__tool'] }),
            toolUseResponse('submit_work', { summary: 'gave up' }),
          ],
          reviewer: [verdict('BLOCK', ['nothing done'])],
        }),
      ),
      launch: { team: { executor: { tools: ['read_file', 'write_file', 'spawn_sub_agent'] } } },
    });
    await harness.driver.drive();
    const events = await harness.events();
    expect(dataOf(events, 'SubAgentSpawned')).toHaveLength(0);
    const result = dataOf<{ name: string; output: string; isError: boolean }>(events, 'ToolCallCompleted').find((d) => d.name === 'spawn_sub_agent')!;
    expect(result).toEqual(expect.objectContaining({ isError: true, output: expect.stringContaining('mcp__evil__tool') }));
  });

  it('given a scripted sub-agent that keeps calling tools, then it fails at its turn limit and the parent gets the failure', async () => {
    let sub = 0;
    const team = roleScript({
      architect: [plan()],
      executor: [toolUseResponse('spawn_sub_agent', { role: 'researcher', task: 'look around', tools: ['read_file'], maxTurns: 2 }), toolUseResponse('submit_work', { summary: 'done' })],
      reviewer: [verdict('APPROVE')],
    });
    harness = await startRun({
      model: new ScriptedModelProvider((request, n) => (request.subAgent ? toolUseResponse('read_file', { path: `missing-${sub++}.txt` }) : team(request, n))),
    });
    await harness.driver.drive();
    const events = await harness.events();
    expect(dataOf<{ reason: string }>(events, 'SubAgentFailed')).toEqual([expect.objectContaining({ reason: 'MAX_TURNS' })]);
    const result = dataOf<{ name: string; output: string; isError: boolean }>(events, 'ToolCallCompleted').find((d) => d.name === 'spawn_sub_agent')!;
    expect(result).toEqual(expect.objectContaining({ isError: true, output: expect.stringContaining('failed') }));
  });

  /**
   * A run whose executor spawns one researcher: the researcher's first `bad` answers are `badAnswer`,
   * then 'found it'. The run's events, its live state and the waits between the researcher's calls.
   */
  async function researcherAnswering(bad: number, badAnswer: () => ScriptStep, maxEventBytes?: number) {
    let served = 0;
    const team = roleScript({
      architect: [plan()],
      executor: [toolUseResponse('spawn_sub_agent', { role: 'researcher', task: 'look around', tools: ['read_file'] }), toolUseResponse('submit_work', { summary: 'done' })],
      reviewer: [verdict('APPROVE')],
    });
    const sleeps: number[] = [];
    harness = await startRun({
      model: new ScriptedModelProvider((request, n) => {
        if (!request.subAgent) return team(request, n);
        return served++ < bad ? badAnswer() : textResponse('found it');
      }),
      sleep: async (ms) => void sleeps.push(ms),
      maxEventBytes,
    });
    const state = await harness.driver.drive();
    return { state, events: await harness.events(), sleeps };
  }

  /** Then: asked for again once and recorded, or failing the sub-agent with `failure` and never recorded. */
  function expectAskedAgain({ events, sleeps }: { events: RecordedEvent[]; sleeps: number[] }, failure: string | undefined, waits = [1000]): void {
    if (failure === undefined) {
      expect(dataOf(events, 'SubAgentFailed')).toEqual([]);
      expect(dataOf<{ response: unknown }>(events, 'SubAgentModelCalled')).toEqual([expect.objectContaining({ response: [{ type: 'text', text: 'found it' }] })]);
      expect(sleeps).toEqual(waits);
    } else {
      expect(dataOf<{ message: string }>(events, 'SubAgentFailed')).toEqual([expect.objectContaining({ message: expect.stringContaining(failure) })]);
      expect(dataOf(events, 'SubAgentModelCalled')).toHaveLength(0);
    }
  }

  it('given a sub-agent call rate limited with a retry-after, then it is asked for again after that wait, not sooner', async () => {
    const run = await researcherAnswering(1, () => new ModelError('rate_limited', 'Anthropic API HTTP 429', { status: 429, retryAfterMs: 7_000 }));
    expectAskedAgain(run, undefined, [7_000]);
  });

  it.each([
    ['once, then a good answer', 1, undefined],
    ['every time', 99, 'malformed model response: usage inputTokens is not a count of tokens'],
  ])('given a sub-agent model answer whose usage is not a count %s, then it is asked for again and never recorded', async (_name, bad, failure) => {
    const run = await researcherAnswering(bad, () => textResponse('found it', { usage: { inputTokens: -500, outputTokens: 10 } }));
    for (const d of dataOf<{ usage: Record<string, number> }>(run.events, 'SubAgentModelCalled')) for (const v of Object.values(d.usage)) expect(v).toBeGreaterThanOrEqual(0);
    expectAskedAgain(run, failure);
  });

  it.each([
    ['once, then a good answer', 1, undefined],
    ['every time', 99, "the model failed: the model's answer takes"],
  ])('given a sub-agent model answer too large for one event %s, then it is asked for again, and the run goes on', async (_name, bad, failure) => {
    const run = await researcherAnswering(bad, () => textResponse('x'.repeat(300_000)), 256 * 1024);
    expect(runStatus(run.state)).toBe('awaiting_review');
    expectAskedAgain(run, failure);
    // What was recorded folds to the live state.
    expect(foldRun(run.events)).toEqual(run.state);
  });
});

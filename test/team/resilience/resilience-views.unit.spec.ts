import { CheckpointInvalidError, deserializeRunState, restoreCheckpoint, serializeRunState, takeCheckpoint } from '../../../src/checkpoint/checkpoint';
import { describeEvent } from '../../../src/cli/format';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { contextOf, replayRun } from '../../../src/session-replay/replay';
import { transcript } from '../../../src/session-replay/transcript';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import { OfflineModelProvider } from '../../../src/team/models/offline.model';
import { applyToSummary, type RunSummaryState } from '../../../src/team/runs/run-summary';
import { renderForSummary } from '../../../src/team/domain/resilience/context-window';
import { fold, recorded as recordRun, modelCallCompleted, modelCallStarted, phaseStarted, planSubmitted, RUN_ID, runLaunched, submitTurn, text, toolCallCompleted, toolUse } from '../machines/given-when-then';

// The new events as people, read models and checkpoints see them.

const AT = '2025-01-01T00:00:01.000Z';
const events: TeamRunEvent[] = [
  runLaunched(),
  phaseStarted('planning'),
  ...submitTurn('architect', 1, planSubmitted()),
  phaseStarted('executing'),
  modelCallStarted('executor', 1, { content: [text('task')] }),
  modelCallCompleted('executor', 1, [toolUse('tu_1', 'read_file', { path: 'a' })]),
  toolCallCompleted('executor', 1, 'tu_1', 'read_file', 'A'),
  { type: 'StagnationWarned', data: { role: 'executor', turn: 1, signal: 'repetition', ratio: 0.8, fingerprints: ['read_file:0123456789abcdef'], message: 'You seem to be stuck.', at: AT } },
  modelCallStarted('executor', 2, { toolResultIds: ['tu_1'], content: [text('You seem to be stuck.')] }),
  modelCallCompleted('executor', 2, [toolUse('tu_2', 'read_file', { path: 'b' })]),
  toolCallCompleted('executor', 2, 'tu_2', 'read_file', 'B'),
  {
    type: 'ContextCompacted',
    data: { role: 'executor', turn: 3, fromIndex: 0, toIndex: 1, summary: 'the task', method: 'model', reason: 'over_budget', model: 'm', usage: { inputTokens: 7, outputTokens: 3 }, costUsd: 0, tokensBefore: 900, tokensAfter: 400, budgetTokens: 500, at: AT },
  },
  modelCallStarted('executor', 3, { toolResultIds: ['tu_2'] }),
  modelCallCompleted('executor', 3, [toolUse('tu_cmd', 'run_command', { command: 'make' })]),
  {
    type: 'ToolApprovalRequested',
    data: { approvalId: `apr_${RUN_ID}.tu_cmd`, role: 'executor', turn: 3, toolUseId: 'tu_cmd', name: 'run_command', input: { command: 'make' }, risk: 'high', threshold: 'high', at: AT },
  },
];
const recorded: RecordedEvent[] = recordRun(events, AT);

describe('resilience events for people and read models', () => {
  it('describeEvent and the transcript name every new event', () => {
    const lines = recorded.slice(-5).map(describeEvent).filter(Boolean).join('\n');
    expect(lines).toMatch(/context   executor: messages 0-0 archived \(model, over budget; ~900 → ~400 tokens\)/);
    expect(lines).toMatch(/approval  apr_run_gwt\.tu_cmd — run_command \(high risk\) waits for a human: triad approvals approve apr_run_gwt\.tu_cmd/);
    expect(describeEvent(recorded.find((r) => r.type === 'StagnationWarned')!)).toMatch(/^stagnant  executor #1 \(repetition 80%\): corrective message sent/);
    const { state, completeness } = replayRun(recorded, RUN_ID);
    const text = transcript(recorded, contextOf(state, completeness));
    expect(text).toMatch(/STAGNATION WARNING to executor \(repetition\): You seem to be stuck\./);
    expect(text).toMatch(/CONTEXT executor: messages 0\.\.0 archived \(model, over_budget\): the task/);
    expect(text).toMatch(/APPROVAL requested apr_run_gwt\.tu_cmd: run_command\(\{"command":"make"\}\)/);
    expect(text).not.toMatch(/not understood/);
    expect(completeness.score).toBe(1);
  });

  it('the runs read model shows awaiting_approval with the pending approval, then clears it', () => {
    let s: RunSummaryState | undefined;
    for (const r of recorded) s = applyToSummary(s, r);
    expect(s!.summary.status).toBe('awaiting_approval');
    expect(s!.summary.pendingApprovals).toEqual([
      { approvalId: `apr_${RUN_ID}.tu_cmd`, toolUseId: 'tu_cmd', role: 'executor', turn: 3, tool: 'run_command', input: { command: 'make' }, risk: 'high', requestedAt: AT },
    ]);
    expect(s!.summary.usage.inputTokens).toBe(10 * 4 + 7);
    const decided: RecordedEvent = {
      ...recorded[0],
      id: 'd',
      type: 'ToolApprovalDecided',
      revision: recorded.length,
      position: recorded.length + 1,
      data: { approvalId: `apr_${RUN_ID}.tu_cmd`, role: 'executor', turn: 3, toolUseId: 'tu_cmd', name: 'run_command', outcome: 'approved', reason: 'ok', decider: 'user:bob', deciderKind: 'human', at: AT },
    };
    s = applyToSummary(s, decided);
    expect(s!.summary.status).toBe('executing');
    expect(s!.summary.pendingApprovals).toBeUndefined();
  });

  it('checkpoints carry the resilience state and approvals; one taken before they existed is refused', () => {
    const state = fold(events);
    const restored = restoreCheckpoint(takeCheckpoint(state, 'test', new Date(AT)));
    expect(restored.resilience).toEqual(state.resilience);
    expect([...restored.approvals.entries()]).toEqual([...state.approvals.entries()]);
    expect(restored.conversations).toEqual(state.conversations);
    const old = serializeRunState(state);
    delete old.resilience;
    expect(() => deserializeRunState(old)).toThrow(CheckpointInvalidError);
  });

  it('the offline model writes a deterministic summary when asked to compact', async () => {
    const model = new OfflineModelProvider();
    const archived = fold(events).conversations.executor.messages.slice(0, 4);
    const request = {
      runId: RUN_ID,
      role: 'executor' as const,
      model: 'triad-offline-1',
      system: 'summarise',
      messages: [{ role: 'user' as const, content: renderForSummary(archived) }],
      tools: [],
      maxTokens: 100,
      purpose: 'summary' as const,
    };
    const a = await model.complete(request);
    const b = await model.complete(request);
    expect(a.content).toEqual(b.content);
    expect(a.content).toEqual([{ type: 'text', text: 'Offline model summary: 4 earlier message(s) archived; tool calls: read_file ×2.' }]);
  });
});

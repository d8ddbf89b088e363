import { commandPathFor } from '../../src/events/command-handling';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson } from '../../src/shared/canonical-json';
import type { CheckpointStore } from '../../src/checkpoint/checkpoint-store.port';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { toRunStreamId } from '../../src/team/domain/run-events';
import type { RunState } from '../../src/team/domain/run-state';
import { agentLoopMachine } from '../../src/team/domain/agent-loop.machine';
import { teamRunMachine } from '../../src/team/domain/team-run.machine';
import { launchRun, type LaunchRunInput } from '../../src/team/commands/launch';
import { ModelError, type ModelResponse, type RoleName } from '../../src/team/models/model.port';
import { ScriptedModelProvider, textResponse, toolUseResponse, type ScriptStep } from '../../src/team/models/scripted.model';
import { RunDriver } from '../../src/team/driver/run-driver';
import type { RetryPolicy } from '../../src/team/domain/resilience/policies';
import { createDefaultToolRegistry } from '../../src/team/tools/tool-registry';
import { createWorkspace } from '../../src/team/tools/workspace';
import { tempDir } from '../support/temp-dir';

/**
 * Random scripted team runs for the replay properties: each role answers from its own queue of
 * random turns (tool calls that succeed or fail, several tool uses in one response, invalid input,
 * a tool the role may not use, plain text, transient and permanent model errors, submissions with
 * random verdicts), under random limits. When a role's queue runs dry it submits.
 */

export type Turn =
  | { kind: 'write'; path: string; content: string }
  | { kind: 'read'; path: string }
  | { kind: 'list' }
  | { kind: 'edit'; path: string; old: string; replacement: string }
  | { kind: 'pair'; path: string; content: string }
  | { kind: 'badInput' }
  | { kind: 'forbidden' }
  | { kind: 'text'; text: string }
  | { kind: 'transient' }
  | { kind: 'permanent' }
  | { kind: 'submit' }
  | { kind: 'badVerdict' };

export interface RunScript {
  turns: Record<RoleName, Turn[]>;
  verdicts: Array<'APPROVE' | 'REQUEST_CHANGES' | 'BLOCK'>;
  maxIterations: number;
  maxTurns: Record<RoleName, number>;
  totalTokens: number;
  humanGate: boolean;
}

const PATHS = ['a.txt', 'b.txt', 'dir/c.txt'];
const path = fc.constantFrom(...PATHS);
const text = fc.string({ minLength: 1, maxLength: 40 });

const turn: fc.Arbitrary<Turn> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('write' as const), path, content: text }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), path }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'list' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('edit' as const), path, old: fc.constantFrom('a', 'e', 'x', 'Hello'), replacement: text }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pair' as const), path, content: text }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'badInput' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'forbidden' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('text' as const), text }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'transient' as const }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'submit' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'badVerdict' as const }) },
);

/** Rarely, one role's queue gets a permanent model error (the run ends ERROR there). */
const withPermanentFailure = (turns: fc.Arbitrary<Turn[]>): fc.Arbitrary<Turn[]> =>
  fc.tuple(turns, fc.oneof({ weight: 20, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() })).map(([list, at]) =>
    at === null ? list : [...list.slice(0, at % (list.length + 1)), { kind: 'permanent' as const }, ...list.slice(at % (list.length + 1))],
  );

export const runScriptArb: fc.Arbitrary<RunScript> = fc.record({
  turns: fc.record({
    architect: withPermanentFailure(fc.array(turn, { maxLength: 5 })),
    executor: withPermanentFailure(fc.array(turn, { maxLength: 14 })),
    reviewer: withPermanentFailure(fc.array(turn, { maxLength: 8 })),
  }),
  verdicts: fc.array(fc.constantFrom('APPROVE' as const, 'REQUEST_CHANGES' as const, 'REQUEST_CHANGES' as const, 'BLOCK' as const), { maxLength: 4 }),
  maxIterations: fc.integer({ min: 1, max: 3 }),
  maxTurns: fc.record({ architect: fc.integer({ min: 2, max: 8 }), executor: fc.integer({ min: 3, max: 12 }), reviewer: fc.integer({ min: 2, max: 8 }) }),
  // 15 tokens per scripted call: small budgets end runs BUDGET_EXHAUSTED.
  totalTokens: fc.oneof(fc.integer({ min: 40, max: 400 }), fc.constant(500_000)),
  humanGate: fc.boolean(),
});

const SUBMIT: Record<RoleName, string> = { architect: 'submit_plan', executor: 'submit_work', reviewer: 'submit_verdict' };

/** The model of a random run: per-role queues of responses, then submissions. */
export function scriptedModel(script: RunScript): ScriptedModelProvider {
  const served: Record<RoleName, number> = { architect: 0, executor: 0, reviewer: 0 };
  let verdicts = 0;
  const submit = (role: RoleName): ModelResponse => {
    switch (role) {
      case 'architect':
        return toolUseResponse('submit_plan', { plan: 'the plan', steps: ['write files'] });
      case 'executor':
        return toolUseResponse('submit_work', { summary: 'did the work', files: PATHS });
      case 'reviewer': {
        const v = script.verdicts[verdicts++] ?? 'APPROVE';
        return toolUseResponse('submit_verdict', { verdict: v, findings: v === 'APPROVE' ? [] : [`finding ${verdicts}`], summary: `verdict ${v}` });
      }
    }
  };
  return new ScriptedModelProvider((request): ScriptStep => {
    const role = request.role;
    const t = script.turns[role][served[role]++];
    if (!t) return submit(role);
    switch (t.kind) {
      case 'write':
        return toolUseResponse('write_file', { path: t.path, content: t.content }, { text: `writing ${t.path}` });
      case 'read':
        return toolUseResponse('read_file', { path: t.path });
      case 'list':
        return toolUseResponse('list_files', { path: '.' });
      case 'edit':
        return toolUseResponse('edit_file', { path: t.path, old: t.old, new: t.replacement });
      case 'pair': {
        const first = toolUseResponse('write_file', { path: t.path, content: t.content });
        const second = toolUseResponse('read_file', { path: t.path });
        return { ...first, content: [{ type: 'text', text: 'two tools at once' }, ...first.content, ...second.content] };
      }
      case 'badInput':
        return toolUseResponse('write_file', { path: 'a.txt' });
      case 'forbidden':
        // A write tool for a read-only role; a tool that does not exist for the executor.
        return role === 'executor' ? toolUseResponse('no_such_tool', { anything: true }) : toolUseResponse('write_file', { path: 'x.txt', content: 'x' });
      case 'text':
        return textResponse(t.text);
      case 'transient':
        return new ModelError('rate_limited', 'scripted rate limit', { status: 429 });
      case 'permanent':
        return new ModelError('invalid_request', 'scripted permanent failure', { status: 400 });
      case 'submit':
        return submit(role);
      case 'badVerdict':
        return toolUseResponse(SUBMIT[role], role === 'reviewer' ? { verdict: 'MAYBE', summary: 'unsure' } : { nonsense: 1 });
    }
  });
}

export const NO_WAIT_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 };

export function launchInputOf(script: RunScript): LaunchRunInput {
  return {
    goal: 'Write the files',
    acceptanceCriteria: ['file a.txt exists'],
    maxIterations: script.maxIterations,
    team: {
      architect: { maxTurns: script.maxTurns.architect },
      executor: { maxTurns: script.maxTurns.executor },
      reviewer: { maxTurns: script.maxTurns.reviewer },
    },
    budget: { totalTokens: script.totalTokens },
    reviewPolicy: { humanGate: script.humanGate },
  };
}

/** What the driver held right after each of its appends: the last revision of the batch and the state, serialised. */
export interface LiveSnapshot {
  revision: number;
  types: string[];
  state: string;
}

export interface DrivenRun {
  runId: string;
  store: InMemoryEventStore;
  events: RecordedEvent[];
  final: RunState;
  live: LiveSnapshot[];
  remove(): void;
}

let counter = 0;

/** Launches and drives one random run to its end (or the human gate) on an in-memory store. */
export async function driveRandomRun(script: RunScript, options: { checkpoints?: CheckpointStore; checkpointEveryTurns?: number } = {}): Promise<DrivenRun> {
  const dir = tempDir('triad-replay-');
  const store = new InMemoryEventStore();
  const runId = `run_prop_${process.pid}_${++counter}`;
  await createWorkspace(dir.path, runId);
  await launchRun(commandPathFor(store), launchInputOf(script), { runId, launchedBy: 'user:ann', now: new Date(), provider: 'scripted', defaultModel: 'scripted' });
  const live: LiveSnapshot[] = [];
  const driver: RunDriver = new RunDriver(runId, {
    store,
    model: scriptedModel(script),
    tools: createDefaultToolRegistry(),
    clock: { now: () => Date.now() },
    ids: { newId: () => randomUUID() },
    workspaceRoot: dir.path,
    retry: NO_WAIT_RETRY,
    sleep: async () => undefined,
    checkpoints: options.checkpoints,
    checkpointEveryTurns: options.checkpointEveryTurns,
    // Serialised at once: the driver keeps mutating its state after the callback returns.
    observer: {
      onEvents: (_id, events) => live.push({ revision: events[events.length - 1].revision, types: events.map((e) => e.type), state: stateJson(driver.snapshot) }),
    },
  });
  const final = await driver.drive();
  const events = await store.readStream(toRunStreamId(runId));
  return { runId, store, events, final, live, remove: () => dir.remove() };
}

/**
 * Every field of a folded state as plain JSON — not only what the checkpoint serialises, so a field
 * the checkpoint forgets shows up as a difference: machine snapshots in their persisted form, maps
 * as entry lists, undefined dropped.
 */
export function comparable(state: RunState): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(state)) {
    if (key === 'team') out[key] = teamRunMachine.getPersistedSnapshot(state.team);
    else if (key === 'loop') out[key] = state.loop ? agentLoopMachine.getPersistedSnapshot(state.loop) : undefined;
    else out[key] = value instanceof Map ? [...value.entries()] : value;
  }
  return JSON.parse(JSON.stringify(out)) as Record<string, unknown>;
}

/** Canonical JSON of `comparable(state)`: equal iff the two states are the same fold. */
export function stateJson(state: RunState): string {
  return canonicalJson(comparable(state));
}

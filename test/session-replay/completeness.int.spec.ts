import fc from 'fast-check';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { toRunStreamId } from '../../src/team/domain/run-events';
import { contextOf, replayRun } from '../../src/session-replay/replay';
import { driveRandomRun, runScriptArb, stateJson, type DrivenRun } from './replay-support';

// Completeness of a replay: 1.0 when every event was recorded and understood; anything the fold
// could not use is skipped, lowers the score and is named.

let run: DrivenRun;

beforeAll(async () => {
  // A run that goes through every phase and waits at the human gate.
  const script = fc.sample(runScriptArb, { seed: 7, numRuns: 1 })[0];
  run = await driveRandomRun({
    ...script,
    turns: { architect: [{ kind: 'list' }], executor: [{ kind: 'write', path: 'a.txt', content: 'A' }, { kind: 'read', path: 'a.txt' }], reviewer: [{ kind: 'read', path: 'a.txt' }] },
    verdicts: ['APPROVE'],
    maxIterations: 2,
    totalTokens: 500_000,
    maxTurns: { architect: 5, executor: 5, reviewer: 5 },
    humanGate: true,
  });
});
afterAll(() => run.remove());

const withEvent = (events: RecordedEvent[], index: number, change: (e: RecordedEvent) => RecordedEvent): RecordedEvent[] =>
  events.map((e, i) => (i === index ? change(structuredClone(e)) : e));

describe('replay completeness', () => {
  it('is 1.0 with nothing missing for a normal run, and the context is the live one', () => {
    const { state, completeness } = replayRun(run.events, run.runId);
    expect(completeness).toEqual({ score: 1, events: run.events.length, understood: run.events.length, missing: [] });
    expect(stateJson(state)).toBe(stateJson(run.final));
    const context = contextOf(state, completeness);
    expect(context.status).toBe('awaiting_review');
    expect(context.roles.executor.messages.length).toBeGreaterThan(0);
  });

  it.each([0, 2])('an event of schema version %i (no upcaster) is skipped: score < 1 and missing names it', (version) => {
    const index = run.events.findIndex((e) => e.type === 'ToolCallCompleted');
    const events = withEvent(run.events, index, (e) => ({ ...e, metadata: { ...e.metadata, schemaVersion: version } }));
    const { completeness } = replayRun(events, run.runId);
    expect(completeness.score).toBeLessThan(1);
    expect(completeness.understood).toBeLessThan(completeness.events);
    expect(completeness.missing).toEqual(expect.arrayContaining([`ToolCallCompleted of schema version ${version} (no upcaster to version 1)`]));
  });

  it('an event of an unknown type is skipped: score < 1 and missing names its type', async () => {
    // Written through the store, as a newer triad would have written it.
    await run.store.append(toRunStreamId(run.runId), [{ type: 'ReviewerMoodRecorded', data: { mood: 'sunny' } }]);
    const events = await run.store.readStream(toRunStreamId(run.runId));
    const { state, completeness } = replayRun(events, run.runId);
    expect(completeness.score).toBeLessThan(1);
    expect(completeness.score).toBeCloseTo((events.length - 1) / events.length, 4);
    expect(completeness.missing).toEqual(['event of unknown type ReviewerMoodRecorded']);
    // What was understood still folds to the same conversations.
    expect(state.conversations).toEqual(run.final.conversations);
  });

  it('a history that does not start with RunLaunched names the missing launch', () => {
    const { completeness } = replayRun(run.events.slice(1), run.runId);
    expect(completeness.score).toBeLessThan(1);
    expect(completeness.missing.join('\n')).toMatch(/RunLaunched event that starts the run/);
  });

  it('an unknown run has score 0', () => {
    expect(replayRun([], 'run_nope').completeness).toEqual({ score: 0, events: 0, understood: 0, missing: ['every event: the run has none'] });
  });
});

import { initialTransition } from 'xstate';
import { agentLoopMachine } from '../../../src/team/domain/agent-loop.machine';
import { persistSnapshot, pureTransition, restoreSnapshot } from '../../../src/team/domain/pure-transition';
import { teamRunMachine } from '../../../src/team/domain/team-run.machine';
import { modelCallCompleted, modelCallStarted, phaseStarted, planSubmitted, runEnded, runLaunched, toolUse } from './given-when-then';

// Given / when / then over the one step every fold takes, and over the one way a snapshot is stored
// and brought back: a snapshot restored from its stored form must step exactly as the original.

const teamStep = pureTransition(teamRunMachine);
const loopStep = pureTransition(agentLoopMachine);
type TeamEvent = Parameters<typeof teamStep>[1];
type LoopEvent = Parameters<typeof loopStep>[1];

const teamAfter = (...events: unknown[]) => events.reduce((s: ReturnType<typeof teamStep>, e) => teamStep(s, e as TeamEvent), initialTransition(teamRunMachine)[0]);
const loopAt = () => initialTransition(agentLoopMachine, { role: 'executor', maxTurns: 2 })[0];

describe('pureTransition: one step of a machine', () => {
  it('given a queued run, when the planning phase starts, then the team machine is planning, and the snapshot given is left as it was', () => {
    const queued = teamAfter(runLaunched());
    const planning = teamStep(queued, phaseStarted('planning') as TeamEvent);
    expect(planning.value).toBe('planning');
    expect(planning.hasTag('agentActive')).toBe(true);
    expect(queued.value).toBe('queued');
  });

  it('given a queued run, when a phase other than planning starts, then the guard holds the machine where it is', () => {
    const queued = teamAfter(runLaunched());
    expect(teamStep(queued, phaseStarted('executing') as TeamEvent).value).toBe('queued');
  });

  it('given any snapshot, when an event no state of the machine handles comes, then the very same snapshot is returned', () => {
    const queued = teamAfter(runLaunched());
    expect(teamStep(queued, modelCallStarted('executor', 1) as TeamEvent)).toBe(queued);
  });

  it('given a loop on its last turn, when the response has no tool calls, then the loop has answered; and with tools, it runs them', () => {
    const awaiting = loopStep(loopAt(), modelCallStarted('executor', 1) as LoopEvent);
    expect(awaiting.value).toBe('awaitingResponse');
    expect(loopStep(awaiting, modelCallCompleted('executor', 1, [{ type: 'text', text: 'done' }]) as LoopEvent).value).toBe('answered');
    const running = loopStep(awaiting, modelCallCompleted('executor', 1, [toolUse('t1', 'read_file')]) as LoopEvent);
    expect(running.value).toBe('runningTools');
    expect(running.context.pendingToolUseIds).toEqual(['t1']);
  });

  it('given a run that ends, when it ends, then the team machine is done, whatever state it was in', () => {
    const ended = teamStep(teamAfter(runLaunched(), phaseStarted('planning')), runEnded('REJECTED') as TeamEvent);
    expect(ended.value).toBe('ended');
    expect(ended.status).toBe('done');
  });
});

describe('persistSnapshot / restoreSnapshot: the one snapshot path', () => {
  it('given a stored snapshot, when it is restored, then it has the value, context, tags and status of the original', () => {
    const planning = teamAfter(runLaunched(), phaseStarted('planning'));
    const restored = restoreSnapshot(teamRunMachine, JSON.parse(JSON.stringify(persistSnapshot(teamRunMachine, planning))) as never);
    expect(restored.value).toBe(planning.value);
    expect(restored.context).toEqual(planning.context);
    expect([...restored.tags].sort()).toEqual([...planning.tags].sort());
    expect(restored.status).toBe('active');
  });

  it('given a restored snapshot, when the same events come, then it steps exactly as the original', () => {
    const planning = teamAfter(runLaunched(), phaseStarted('planning'));
    const restored = restoreSnapshot(teamRunMachine, JSON.parse(JSON.stringify(persistSnapshot(teamRunMachine, planning))) as never);
    const next = [planSubmitted(), phaseStarted('executing')] as TeamEvent[];
    const fromOriginal = next.reduce(teamStep, planning);
    const fromRestored = next.reduce(teamStep, restored);
    expect(persistSnapshot(teamRunMachine, fromRestored)).toEqual(persistSnapshot(teamRunMachine, fromOriginal));
    expect(fromRestored.value).toBe('executing');
  });

  it('given a snapshot with a changed context, when it is restored from its value and that context, then only the context differs', () => {
    const planning = teamAfter(runLaunched(), phaseStarted('planning'));
    const forked = restoreSnapshot(teamRunMachine, { value: planning.value, context: { ...planning.context, runId: 'run_fork' } });
    expect(forked.context).toEqual({ ...planning.context, runId: 'run_fork' });
    expect(forked.value).toBe('planning');
    expect(teamStep(forked, planSubmitted() as TeamEvent).value).toBe('planned');
  });

  it('given a finished loop, when it is stored and restored, then it is still done', () => {
    const awaiting = loopStep(loopAt(), modelCallStarted('executor', 1) as LoopEvent);
    const answered = loopStep(awaiting, modelCallCompleted('executor', 1, [{ type: 'text', text: 'done' }]) as LoopEvent);
    const restored = restoreSnapshot(agentLoopMachine, persistSnapshot(agentLoopMachine, answered) as never);
    expect(restored.value).toBe('answered');
    expect(restored.status).toBe(answered.status);
  });
});

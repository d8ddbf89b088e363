import { renderTaskMessage } from '../../../src/team/domain/prompts';
import { STATUS_OF_REASON, type TerminationReason } from '../../../src/team/domain/run-events';
import {
  gateWaived,
  given,
  iterationStarted,
  phaseStarted,
  planned,
  reviewing,
  reviewOpened,
  humanDecided,
  runEnded,
  runLaunched,
  submitTurn,
  text,
  verdictSubmitted,
  verdictTurn,
  workSubmitted,
  worked,
} from './given-when-then';

// The team run's phases, iterations and endings, read through the fold and the next action.

describe('team run: from launch to review', () => {
  it('launch → queued, and the next move is to start planning', () => {
    given([]).when(runLaunched()).then({ status: 'queued', team: 'queued', reason: null, next: { kind: 'startPhase', phase: 'planning', role: 'architect' } });
  });

  it('queued → planning: the architect is called with the task', () => {
    const { next } = given([runLaunched()])
      .when(phaseStarted('planning'))
      .then({ status: 'planning', team: 'planning', loop: 'ready' });
    expect(next).toEqual({
      kind: 'callModel',
      role: 'architect',
      turn: 1,
      retry: false,
      toolResultIds: [],
      content: [
        text(renderTaskMessage('architect', { goal: 'Write hello.txt', acceptanceCriteria: ['file hello.txt contains "Hello"'], iteration: 1 })),
      ],
    });
  });

  it('planning → planned on PlanSubmitted: the executor phase starts next', () => {
    given([runLaunched(), phaseStarted('planning')])
      .when(...submitTurn('architect', 1, { type: 'PlanSubmitted', data: { toolUseId: 'tu_plan', plan: '1. write hello.txt', steps: [], at: '2025-01-01T00:00:00.000Z' } }))
      .then({ status: 'planning', team: 'planned', next: { kind: 'startPhase', phase: 'executing', role: 'executor' } });
  });

  it('planned → executing: the executor gets the task with the plan', () => {
    const { next } = given(planned()).when(phaseStarted('executing')).then({ status: 'executing', team: 'executing', loop: 'ready' });
    expect(next).toMatchObject({ kind: 'callModel', role: 'executor', turn: 1, retry: false, toolResultIds: [] });
    const task = (next as { content: Array<{ text: string }> }).content[0].text;
    expect(task).toContain('Plan:\n1. write hello.txt');
    expect(task).not.toContain('Findings to address');
  });

  it('executing → worked on WorkSubmitted: the reviewer phase starts next', () => {
    given([...planned(), phaseStarted('executing')])
      .when(...submitTurn('executor', 1, workSubmitted()))
      .then({ status: 'executing', team: 'worked', next: { kind: 'startPhase', phase: 'reviewing', role: 'reviewer' } });
  });

  it('worked → reviewing: the reviewer gets the task with the plan and the work summary', () => {
    const { next } = given(worked()).when(phaseStarted('reviewing')).then({ status: 'reviewing', team: 'reviewing', loop: 'ready' });
    expect(next).toMatchObject({ kind: 'callModel', role: 'reviewer', turn: 1 });
    const task = (next as { content: Array<{ text: string }> }).content[0].text;
    expect(task).toContain('Work submitted:\nwrote hello.txt');
    expect(task).toContain('Plan:\n1. write hello.txt');
  });

  it('events that do not belong to a state leave the team where it is', () => {
    given(worked()).when(reviewOpened(), gateWaived(), iterationStarted(2, ['x'])).then({ team: 'worked', status: 'executing' });
  });
});

describe('team run: verdicts', () => {
  it('APPROVE with the human gate → approved → ReviewOpened → awaiting_review', () => {
    given(reviewing()).when(...verdictTurn('APPROVE')).then({ team: 'approved', status: 'reviewing', next: { kind: 'openReview' } });
    const { state } = given(reviewing())
      .when(...verdictTurn('APPROVE'), reviewOpened())
      .then({ team: 'awaitingReview', status: 'awaiting_review', reason: null, next: { kind: 'waitForReview' } });
    expect(state.review?.reviewId).toBe('rev_run_gwt_1');
    expect(state.team.context.reviewId).toBe('rev_run_gwt_1');
    expect(state.verdict?.verdict).toBe('APPROVE');
  });

  it('APPROVE without the gate → GateWaived → ends COMPLETED', () => {
    given(reviewing({ humanGate: false })).when(...verdictTurn('APPROVE')).then({ team: 'approvedGateWaived', next: { kind: 'waiveGate' } });
    given(reviewing({ humanGate: false }))
      .when(...verdictTurn('APPROVE'), gateWaived())
      .then({ team: 'gateWaived', status: 'reviewing', next: { kind: 'end', reason: 'COMPLETED' } });
    given(reviewing({ humanGate: false }))
      .when(...verdictTurn('APPROVE'), gateWaived(), runEnded('COMPLETED'))
      .then({ team: 'ended', status: 'completed', reason: 'COMPLETED', next: { kind: 'none' } });
  });

  it('REQUEST_CHANGES with iterations left → IterationStarted → executing again, with the findings in the task', () => {
    const findings = ['hello.txt must end with a newline'];
    given(reviewing({ maxIterations: 3 }))
      .when(...verdictTurn('REQUEST_CHANGES', { findings }))
      .then({ team: 'changesRequested', status: 'reviewing', next: { kind: 'startIteration', iteration: 2, findings } });

    const { state } = given(reviewing({ maxIterations: 3 }))
      .when(...verdictTurn('REQUEST_CHANGES', { findings }), iterationStarted(2, findings))
      .then({ team: 'reworking', status: 'executing', next: { kind: 'startPhase', phase: 'executing', role: 'executor' } });
    expect(state.team.context.iteration).toBe(2);
    expect(state.team.context.openFindings).toEqual(findings);

    // The executor's next message answers its last submit_work and carries the findings.
    const { next } = given(reviewing({ maxIterations: 3 }))
      .when(...verdictTurn('REQUEST_CHANGES', { findings }), iterationStarted(2, findings), phaseStarted('executing', { iteration: 2 }))
      .then({ team: 'executing', status: 'executing', loop: 'ready' });
    expect(next).toEqual({
      kind: 'callModel',
      role: 'executor',
      turn: 1,
      retry: false,
      toolResultIds: ['tu_work'],
      content: [
        text(
          renderTaskMessage('executor', {
            goal: 'Write hello.txt',
            acceptanceCriteria: ['file hello.txt contains "Hello"'],
            iteration: 2,
            plan: '1. write hello.txt',
            findings,
          }),
        ),
      ],
    });
    const task = (next as { content: Array<{ text: string }> }).content[0].text;
    expect(task).toContain('Iteration: 2');
    expect(task).toContain('Findings to address:\n- hello.txt must end with a newline');
  });

  it('REQUEST_CHANGES at the last iteration → ends MAX_ITERATIONS', () => {
    given(reviewing({ maxIterations: 1 }))
      .when(...verdictTurn('REQUEST_CHANGES', { findings: ['no'] }))
      .then({ team: 'iterationsExhausted', status: 'reviewing', next: { kind: 'end', reason: 'MAX_ITERATIONS' } });

    // Two iterations, changes requested both times.
    const second = [
      ...reviewing({ maxIterations: 2 }),
      ...verdictTurn('REQUEST_CHANGES', { findings: ['first'] }),
      iterationStarted(2, ['first']),
      phaseStarted('executing', { iteration: 2 }),
      ...submitTurn('executor', 1, workSubmitted('tu_work_2', 2), { toolResultIds: ['tu_work'] }),
      phaseStarted('reviewing', { iteration: 2 }),
    ];
    given(second)
      .when(...submitTurn('reviewer', 1, verdictSubmitted('REQUEST_CHANGES', { toolUseId: 'tu_verdict_2', iteration: 2, findings: ['second'] }), { toolResultIds: ['tu_verdict_1'] }))
      .then({ team: 'iterationsExhausted', next: { kind: 'end', reason: 'MAX_ITERATIONS', message: 'changes still requested after 2 iteration(s)' } });
    given(second)
      .when(
        ...submitTurn('reviewer', 1, verdictSubmitted('REQUEST_CHANGES', { toolUseId: 'tu_verdict_2', iteration: 2, findings: ['second'] }), { toolResultIds: ['tu_verdict_1'] }),
        runEnded('MAX_ITERATIONS'),
      )
      .then({ status: 'failed', reason: 'MAX_ITERATIONS', next: { kind: 'none' } });
  });

  it('BLOCK → ends BLOCKED with the reviewer summary', () => {
    given(reviewing())
      .when(...submitTurn('reviewer', 1, verdictSubmitted('BLOCK', { toolUseId: 'tu_v', summary: 'the goal needs network access' })))
      .then({ team: 'blockedByReviewer', next: { kind: 'end', reason: 'BLOCKED', message: 'the goal needs network access' } });
    given(reviewing())
      .when(...verdictTurn('BLOCK'), runEnded('BLOCKED'))
      .then({ status: 'blocked', reason: 'BLOCKED', next: { kind: 'none' } });
  });

  it('a human rejection at the gate starts the next iteration with the feedback', () => {
    const { state } = given([...reviewing(), ...verdictTurn('APPROVE'), reviewOpened(), humanDecided('rejected')])
      .when({ type: 'IterationStarted', data: { iteration: 2, reason: 'human_rejected', findings: [], feedback: 'greet in French', at: '2025-01-01T00:00:00.000Z' } })
      .then({ team: 'reworking', status: 'executing', next: { kind: 'startPhase', phase: 'executing' } });
    expect(state.team.context.humanFeedback).toBe('greet in French');
  });
});

describe('team run: statuses', () => {
  it.each(Object.entries(STATUS_OF_REASON) as Array<[TerminationReason, string]>)('RunEnded %s → status %s, nothing more to do', (reason, status) => {
    // Only a human decision at the gate ends a run COMPLETED or REJECTED (attestation/decision-gate.ts).
    const history =
      reason === 'COMPLETED' || reason === 'REJECTED'
        ? [...reviewing(), ...verdictTurn('APPROVE'), reviewOpened(), humanDecided(reason === 'COMPLETED' ? 'approved' : 'rejected')]
        : worked();
    given(history).when(runEnded(reason)).then({ team: 'ended', status: status as never, reason, loop: null, next: { kind: 'none' } });
  });

  it.each([['COMPLETED'], ['REJECTED']] as Array<[TerminationReason]>)('RunEnded %s with no human decision before it → not acted on: the run works on', (reason) => {
    const { state } = given(worked()).when(runEnded(reason)).then({ team: 'worked', status: 'executing' });
    expect(state.gate.refused).toEqual([expect.objectContaining({ type: 'RunEnded', problem: 'no_decision' })]);
  });

  it('runStatus follows every phase of a run', () => {
    const seen: string[] = [];
    const steps = [
      runLaunched({ humanGate: true }),
      phaseStarted('planning'),
      ...submitTurn('architect', 1, { type: 'PlanSubmitted', data: { toolUseId: 'tu_plan', plan: 'p', steps: [], at: '2025-01-01T00:00:00.000Z' } }),
      phaseStarted('executing'),
      ...submitTurn('executor', 1, workSubmitted()),
      phaseStarted('reviewing'),
      ...verdictTurn('APPROVE'),
      reviewOpened(),
    ];
    for (let i = 1; i <= steps.length; i++) given(steps.slice(0, i)).then(({ status }) => seen.push(status));
    expect([...new Set(seen)]).toEqual(['queued', 'planning', 'executing', 'reviewing', 'awaiting_review']);
  });
});

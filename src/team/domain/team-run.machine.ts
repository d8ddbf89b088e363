import { assign, setup } from 'xstate';
import type {
  IterationStartedData,
  PhaseStartedData,
  RunEndedData,
  RunLaunchedData,
  RunStatus,
  RunCoreEvent,
  TerminationReason,
  VerdictSubmittedData,
} from './run-events';
import { sameFindings } from './resilience/stagnation';

/**
 * The team run: phases, iterations and how a run ends. Driven only by domain events, so folding a
 * run's events reproduces its state; what the driver does next is read off the state
 * (`next-action.ts`). Each state carries its public status as a tag.
 */

export interface TeamRunContext {
  runId: string;
  iteration: number;
  maxIterations: number;
  humanGate: boolean;
  lastVerdict?: VerdictSubmittedData;
  /** Findings (reviewer's or the human's reason) the next iteration must address. */
  openFindings: string[];
  humanFeedback?: string;
  reviewId?: string;
  ended?: RunEndedData;
  /** The run's stagnation policy ends it when a REQUEST_CHANGES repeats the previous round's findings. */
  stopOnRepeatedFindings?: boolean;
}

export type TeamRunMachineEvent = RunCoreEvent;

const phaseIs =
  (phase: PhaseStartedData['phase']) =>
  ({ event }: { event: TeamRunMachineEvent }) =>
    event.type === 'PhaseStarted' && event.data.phase === phase;

export const teamRunMachine = setup({
  types: {
    context: {} as TeamRunContext,
    events: {} as TeamRunMachineEvent,
  },
  guards: {
    isPlanning: phaseIs('planning'),
    isExecuting: phaseIs('executing'),
    isReviewing: phaseIs('reviewing'),
    approvedWithGate: ({ context, event }) =>
      event.type === 'VerdictSubmitted' && event.data.verdict === 'APPROVE' && context.humanGate,
    approvedWithoutGate: ({ context, event }) =>
      event.type === 'VerdictSubmitted' && event.data.verdict === 'APPROVE' && !context.humanGate,
    changesWithIterationLeft: ({ context, event }) =>
      event.type === 'VerdictSubmitted' && event.data.verdict === 'REQUEST_CHANGES' && context.iteration < context.maxIterations,
    changesWithoutIterationLeft: ({ context, event }) =>
      event.type === 'VerdictSubmitted' && event.data.verdict === 'REQUEST_CHANGES' && context.iteration >= context.maxIterations,
    blocked: ({ event }) => event.type === 'VerdictSubmitted' && event.data.verdict === 'BLOCK',
    // Asking for the same changes again means the iterations are not converging: stop instead of
    // burning the ones left. The previous verdict is still in the context when the guard runs.
    findingsRepeated: ({ context, event }) =>
      event.type === 'VerdictSubmitted' &&
      event.data.verdict === 'REQUEST_CHANGES' &&
      context.stopOnRepeatedFindings === true &&
      context.lastVerdict?.verdict === 'REQUEST_CHANGES' &&
      sameFindings(context.lastVerdict.findings, event.data.findings),
  },
  actions: {
    launch: assign(({ event }) => {
      const d = (event as { data: RunLaunchedData }).data;
      return {
        runId: d.runId,
        iteration: 1,
        maxIterations: d.maxIterations,
        humanGate: d.reviewPolicy.humanGate,
        openFindings: [],
        stopOnRepeatedFindings: d.stagnation?.enabled === true && d.stagnation.repeatedFindings,
      };
    }),
    recordVerdict: assign(({ event }) => {
      const d = (event as { data: VerdictSubmittedData }).data;
      return { lastVerdict: d, openFindings: d.verdict === 'REQUEST_CHANGES' ? d.findings : [] };
    }),
    startIteration: assign(({ event }) => {
      const d = (event as { data: IterationStartedData }).data;
      return { iteration: d.iteration, openFindings: d.findings, humanFeedback: d.feedback };
    }),
    openReview: assign(({ event }) => ({ reviewId: (event as { data: { reviewId: string } }).data.reviewId })),
    end: assign(({ event }) => ({ ended: (event as { data: RunEndedData }).data })),
  },
}).createMachine({
  id: 'teamRun',
  context: { runId: '', iteration: 0, maxIterations: 0, humanGate: true, openFindings: [] },
  initial: 'idle',
  states: {
    idle: {
      on: { RunLaunched: { target: 'queued', actions: 'launch' } },
    },
    queued: {
      tags: ['queued'],
      on: { PhaseStarted: { guard: 'isPlanning', target: 'planning' } },
    },
    planning: {
      tags: ['planning', 'agentActive'],
      on: { PlanSubmitted: 'planned' },
    },
    planned: {
      tags: ['planning'],
      on: { PhaseStarted: { guard: 'isExecuting', target: 'executing' } },
    },
    executing: {
      tags: ['executing', 'agentActive'],
      on: { WorkSubmitted: 'worked' },
    },
    worked: {
      tags: ['executing'],
      on: { PhaseStarted: { guard: 'isReviewing', target: 'reviewing' } },
    },
    reviewing: {
      tags: ['reviewing', 'agentActive'],
      on: {
        VerdictSubmitted: [
          { guard: 'findingsRepeated', target: 'findingsRepeated', actions: 'recordVerdict' },
          { guard: 'approvedWithGate', target: 'approved', actions: 'recordVerdict' },
          { guard: 'approvedWithoutGate', target: 'approvedGateWaived', actions: 'recordVerdict' },
          { guard: 'changesWithIterationLeft', target: 'changesRequested', actions: 'recordVerdict' },
          { guard: 'changesWithoutIterationLeft', target: 'iterationsExhausted', actions: 'recordVerdict' },
          { guard: 'blocked', target: 'blockedByReviewer', actions: 'recordVerdict' },
        ],
      },
    },
    approved: {
      tags: ['reviewing'],
      on: { ReviewOpened: { target: 'awaitingReview', actions: 'openReview' } },
    },
    approvedGateWaived: {
      tags: ['reviewing'],
      // The waiver is recorded as a decision by the system (outcome `waived`).
      on: { ReviewDecided: 'gateWaived' },
    },
    gateWaived: { tags: ['reviewing'] },
    changesRequested: {
      tags: ['reviewing'],
      on: { IterationStarted: { target: 'reworking', actions: 'startIteration' } },
    },
    reworking: {
      tags: ['executing'],
      on: { PhaseStarted: { guard: 'isExecuting', target: 'executing' } },
    },
    iterationsExhausted: { tags: ['reviewing'] },
    findingsRepeated: { tags: ['reviewing'] },
    blockedByReviewer: { tags: ['reviewing'] },
    awaitingReview: {
      tags: ['awaiting_review'],
      on: { IterationStarted: { target: 'reworking', actions: 'startIteration' } },
    },
    ended: { type: 'final' },
  },
  on: {
    RunEnded: { target: '.ended', actions: 'end' },
  },
});

export type TeamRunStateValue = keyof (typeof teamRunMachine)['states'] | string;

/** The public status of a team-run snapshot. */
export function statusOf(value: string, context: TeamRunContext, tags: Set<string>): RunStatus {
  if (value === 'ended') return context.ended!.status;
  for (const s of ['queued', 'planning', 'executing', 'reviewing', 'awaiting_review'] as const) if (tags.has(s)) return s;
  return 'queued';
}

export function terminationReasonOf(context: TeamRunContext): TerminationReason | undefined {
  return context.ended?.reason;
}

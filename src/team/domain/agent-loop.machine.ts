import { assign, setup } from 'xstate';
import type { AssistantBlock, RoleName } from '../models/model.port';
import type { ModelCallCompletedData, RunCoreEvent } from './run-events';
import { SUBMIT_TOOL_OF_ROLE } from './roles';

/**
 * One role's agent loop within a phase: call the model → run its tool calls → feed the results
 * back, until the role submits, answers without tools, or reaches its turn limit.
 */

export interface AgentLoopInput {
  role: RoleName;
  maxTurns: number;
}

export interface AgentLoopContext {
  role: RoleName;
  maxTurns: number;
  /** Model calls started in this phase. */
  turn: number;
  /** Tool uses of the last response, in the model's order, not yet completed. */
  pendingToolUseIds: string[];
  /** Of those, the ones whose start is recorded (ToolCallRequested). */
  startedToolUseIds: string[];
  /** Text of the last response when it called no tool. */
  answer?: string;
  /** Tool uses waiting for a human's approval (ToolApprovalRequested, not yet decided). */
  approvalIds?: string[];
}

export type AgentLoopEvent = RunCoreEvent;

const toolUses = (content: AssistantBlock[]) => content.filter((b) => b.type === 'tool_use');

export const agentLoopMachine = setup({
  types: {
    context: {} as AgentLoopContext,
    events: {} as AgentLoopEvent,
    input: {} as AgentLoopInput,
  },
  guards: {
    turnsExhausted: ({ context }) => context.turn >= context.maxTurns,
    // A prose answer is the architect's or executor's submission and needs no further call; only
    // the reviewer must be called again (with a reminder), which its turn limit may forbid.
    reminderBeyondTurns: ({ context }) => context.role === 'reviewer' && context.turn >= context.maxTurns,
    respondedWithTools: ({ event }) =>
      event.type === 'ModelCallCompleted' && toolUses(event.data.content).length > 0,
    allToolsDone: ({ context }) => context.pendingToolUseIds.length === 0,
    noApprovalWaiting: ({ context }) => (context.approvalIds ?? []).length === 0,
  },
  actions: {
    startTurn: assign(({ event }) => ({ turn: (event as { data: { turn: number } }).data.turn, answer: undefined })),
    takeToolUses: assign(({ event }) => ({
      pendingToolUseIds: toolUses((event as { data: ModelCallCompletedData }).data.content).map((b) => (b as { id: string }).id),
      startedToolUseIds: [],
    })),
    takeAnswer: assign(({ event }) => ({
      answer: (event as { data: ModelCallCompletedData }).data.content
        .filter((b) => b.type === 'text')
        .map((b) => (b as { text: string }).text)
        .join('\n'),
    })),
    markStarted: assign(({ context, event }) => ({
      startedToolUseIds: [...context.startedToolUseIds, (event as { data: { toolUseId: string } }).data.toolUseId],
    })),
    awaitApproval: assign(({ context, event }) => ({
      approvalIds: [...(context.approvalIds ?? []), (event as { data: { toolUseId: string } }).data.toolUseId],
    })),
    approvalDecided: assign(({ context, event }) => ({
      approvalIds: (context.approvalIds ?? []).filter((t) => t !== (event as { data: { toolUseId: string } }).data.toolUseId),
    })),
    markCompleted: assign(({ context, event }) => {
      const id = (event as { data: { toolUseId: string } }).data.toolUseId;
      return {
        pendingToolUseIds: context.pendingToolUseIds.filter((t) => t !== id),
        startedToolUseIds: context.startedToolUseIds.filter((t) => t !== id),
      };
    }),
  },
}).createMachine({
  id: 'agentLoop',
  // xstate's pure transition() builds a throwaway actor without input for every event: tolerate it.
  context: ({ input }) => ({ role: input?.role, maxTurns: input?.maxTurns ?? 0, turn: 0, pendingToolUseIds: [], startedToolUseIds: [], approvalIds: [] }),
  initial: 'ready',
  states: {
    ready: {
      always: { guard: 'turnsExhausted', target: 'maxTurnsReached' },
      on: { ModelCallStarted: { target: 'awaitingResponse', actions: 'startTurn' } },
    },
    awaitingResponse: {
      on: {
        ModelCallCompleted: [
          { guard: 'respondedWithTools', target: 'runningTools', actions: 'takeToolUses' },
          { target: 'answered', actions: 'takeAnswer' },
        ],
      },
    },
    runningTools: {
      always: { guard: 'allToolsDone', target: 'ready' },
      on: {
        ToolCallRequested: { actions: 'markStarted' },
        ToolCallCompleted: { actions: 'markCompleted' },
        ToolApprovalRequested: { target: 'awaitingApproval', actions: 'awaitApproval' },
      },
    },
    // A tool call of this response waits for a human (the run's status is awaiting_approval); the
    // batch runs once every requested approval is decided.
    awaitingApproval: {
      tags: ['awaiting_approval'],
      always: { guard: 'noApprovalWaiting', target: 'runningTools' },
      on: {
        ToolApprovalRequested: { actions: 'awaitApproval' },
        ToolApprovalDecided: { actions: 'approvalDecided' },
        ToolCallRequested: { actions: 'markStarted' },
        ToolCallCompleted: { actions: 'markCompleted' },
      },
    },
    answered: {
      always: { guard: 'reminderBeyondTurns', target: 'maxTurnsReached' },
      on: { ModelCallStarted: { target: 'awaitingResponse', actions: 'startTurn' } },
    },
    maxTurnsReached: { type: 'final' },
    submitted: { type: 'final' },
  },
  on: {
    PlanSubmitted: '.submitted',
    WorkSubmitted: '.submitted',
    VerdictSubmitted: '.submitted',
  },
});

export { SUBMIT_TOOL_OF_ROLE };

// One file over 400 lines on purpose: it is the fold of a run — the state, `evolve` over every event
// type (ending in a `never` check) and the views derived from it — and a fold is read whole.
import { initialTransition, type SnapshotFrom } from 'xstate';
import { pureTransition, restoreSnapshot } from './pure-transition';
import type { AssistantBlock, ChatMessage, ContentBlock, RoleName, ToolResultBlock, ToolUseBlock, Usage } from '../models/model.port';
import { agentLoopMachine } from './agent-loop.machine';
import type {
  ChosenStrategy,
  ModelCallStartedData,
  PhaseStartedData,
  PlanSubmittedData,
  ReviewDecidedData,
  RunForkedData,
  RunRepinnedData,
  ReviewOpenedData,
  RoleConfig,
  RunLaunchedData,
  RunCoreEvent,
  RunStatus,
  TeamRunEvent,
  TerminationReason,
  ToolApprovalDecidedData,
  ToolApprovalRequestedData,
  ToolCallCompletedData,
  ToolCallRequestedData,
  VerdictSubmittedData,
  WorkSubmittedData,
} from './run-events';
import { statusOf, teamRunMachine } from './team-run.machine';
import { breakerAfter, CLOSED_BREAKER, type BreakerState } from './resilience/circuit-breaker';
import { applyCompaction } from './resilience/context-window';
import { DEFAULT_STAGNATION_POLICY } from './resilience/policies';
import { recordTurn, type StagnationWindow } from './resilience/stagnation';
import { evolveStepLoop, newStepLoop, phaseStrategy, type StepLoopState } from './loop-strategy';
import { abandonSubAgents, evolveSubAgents, subAgentTokens, type SubAgents } from './sub-agents';
import { guardEvent, newGateGuard, type GateGuard } from '../../attestation/decision-gate';
import { toRunStreamId } from './run-events';
import { repinned } from './model-pin';
import { ROLES } from './roles';

const teamStep = pureTransition(teamRunMachine);
const loopStep = pureTransition(agentLoopMachine);

export type TeamSnapshot = SnapshotFrom<typeof teamRunMachine>;
export type LoopSnapshot = SnapshotFrom<typeof agentLoopMachine>;

/**
 * The machines' initial snapshots, built once: a step never changes the snapshot it is given (it
 * returns a new one), so every fold can start from the same object, and xstate's initial
 * transition (an actor and its interpreter, tens of microseconds) is not paid per launch, load or phase.
 */
let teamAtStart: TeamSnapshot | undefined;
export function initialTeamSnapshot(): TeamSnapshot {
  return (teamAtStart ??= initialTransition(teamRunMachine)[0]);
}

/** By role and turn cap: a handful of distinct inputs in practice, bounded all the same. */
const loopsAtStart = new Map<string, LoopSnapshot>();
function initialLoopSnapshot(role: RoleName, maxTurns: number): LoopSnapshot {
  const key = `${role}/${maxTurns}`;
  let loop = loopsAtStart.get(key);
  if (!loop) {
    if (loopsAtStart.size >= 64) loopsAtStart.clear();
    loop = initialTransition(agentLoopMachine, { role, maxTurns })[0];
    loopsAtStart.set(key, loop);
  }
  return loop;
}

export interface RoleUsage {
  /** Input tokens billed at the full rate (cache reads and writes are counted apart). */
  inputTokens: number;
  outputTokens: number;
  /** Present once a call reported prompt-cache usage (Anthropic). */
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  costUsd: number;
  turns: number;
}

/** Adds a call's usage to its role's (cache counters only when the call reported them). */
function addUsage(u: RoleUsage, usage: Usage, costUsd: number): void {
  u.inputTokens += usage.inputTokens;
  u.outputTokens += usage.outputTokens;
  if (usage.cacheReadTokens !== undefined) u.cacheReadTokens = (u.cacheReadTokens ?? 0) + usage.cacheReadTokens;
  if (usage.cacheWriteTokens !== undefined) u.cacheWriteTokens = (u.cacheWriteTokens ?? 0) + usage.cacheWriteTokens;
  u.costUsd = round6(u.costUsd + costUsd);
}

/** What the resilience rules decide on, folded from the events (plain JSON: it is checkpointed as is). */
export interface ResilienceState {
  /** Consecutive model failures with one error signature (reset by a completed call). */
  breaker: BreakerState;
  /** Tool calls of the current phase since it started or since the last warning. */
  stagnation: StagnationWindow & {
    /** StagnationWarned events in the current phase. */
    warnings: number;
    /** A corrective message not yet sent: it goes with the role's next model call. */
    pendingWarning?: { role: RoleName; message: string };
  };
  /** The open call failed with context_too_long: compact before retrying it. */
  compactBeforeRetry?: { role: RoleName; callId: string };
  compactions: number;
}

export interface ApprovalRecord {
  requested: ToolApprovalRequestedData;
  decided?: ToolApprovalDecidedData;
}

export interface RoleConversation {
  /** The conversation exactly as it is sent to the model. */
  messages: ChatMessage[];
  /** callId of the model call whose request is the last user message (retries reuse it). */
  openCallId?: string;
}

/**
 * Everything the driver (and replay) knows about a run, rebuilt by folding its events.
 *
 * `evolve` mutates the state it is given: a fold owns its state, and copying conversations on every
 * event would make replay quadratic in the length of a run. Callers that need an immutable view
 * take a copy (see session replay).
 */
export interface RunState {
  runId: string;
  /** Revision of the last event folded (-1 before the first). */
  revision: number;
  /** Global position of the last event folded. */
  position: number;
  launched?: RunLaunchedData;
  team: TeamSnapshot;
  /** The agent loop of the current phase, if one is active. */
  loop?: LoopSnapshot;
  phase?: PhaseStartedData;
  conversations: Record<RoleName, RoleConversation>;
  usage: Record<RoleName, RoleUsage>;
  /** Tool uses of each role's last response, by id. */
  lastToolUses: Map<string, ToolUseBlock>;
  requestedTools: Map<string, ToolCallRequestedData>;
  completedTools: Map<string, ToolCallCompletedData>;
  plan?: PlanSubmittedData;
  work?: WorkSubmittedData;
  verdict?: VerdictSubmittedData;
  review?: ReviewOpenedData;
  /** Decisions on the current review (an escalation does not close it). */
  decisions: ReviewDecidedData[];
  startedAt?: string;
  endedAt?: string;
  /** Failed attempts of the model call in flight (reset when it completes). */
  failedAttempts: number;
  /** Suspended at shutdown; nothing happens until RunResumed. */
  suspended: boolean;
  /** The process that last claimed the right to drive the run. */
  driver?: string;
  /** Set on a forked run: where its history comes from. */
  forkedFrom?: RunForkedData['parent'];
  resilience: ResilienceState;
  /** Tool approvals requested in this run, by tool_use id. */
  approvals: Map<string, ApprovalRecord>;
  /** The run's sub-agents, by path (domain/sub-agents.ts). */
  subAgents: SubAgents;
  /** Decisions refused for want of a valid attestation, and the events they would have caused (attestation/decision-gate.ts). */
  gate: GateGuard;
  /** The current phase's plan and steps, when it runs plan_execute or hybrid (domain/loop-strategy.ts). */
  stepLoop?: StepLoopState;
  /** `auto`'s choice for the current phase (LoopStrategyChosen). */
  chosenStrategy?: ChosenStrategy;
}

export function initialResilience(): ResilienceState {
  return { breaker: { ...CLOSED_BREAKER }, stagnation: { calls: [], turns: [], warnings: 0 }, compactions: 0 };
}

const emptyUsage = (): RoleUsage => ({ inputTokens: 0, outputTokens: 0, costUsd: 0, turns: 0 });

export function initialRunState(runId = ''): RunState {
  return {
    runId,
    revision: -1,
    position: 0,
    team: initialTeamSnapshot(),
    conversations: { architect: { messages: [] }, executor: { messages: [] }, reviewer: { messages: [] } },
    usage: { architect: emptyUsage(), executor: emptyUsage(), reviewer: emptyUsage() },
    lastToolUses: new Map(),
    requestedTools: new Map(),
    completedTools: new Map(),
    failedAttempts: 0,
    decisions: [],
    suspended: false,
    resilience: initialResilience(),
    approvals: new Map(),
    subAgents: {},
    gate: newGateGuard(),
  };
}

/**
 * Folds one event into the state (mutating it) and returns it. `outOfWindow`: a ModelCallCompleted
 * whose tool calls will have left the stagnation window before anyone reads it (see `foldRun`);
 * its fingerprints are not computed.
 */
export function evolve(state: RunState, event: TeamRunEvent, meta: { revision: number; position: number }, outOfWindow = false): RunState {
  state.revision = meta.revision;
  state.position = meta.position;
  // A decision without a valid attestation, and what only a decision may cause, are not acted on.
  if (guardEvent(state.gate, String(state.team.value), event, { streamId: toRunStreamId(state.runId), revision: meta.revision, position: meta.position })) return state;
  // The team machine sees every event; unknown ones leave it as it is.
  // Sub-agents' events are not the machines' (their types are unknown to them: they pass through).
  const core = event as RunCoreEvent;
  state.team = teamStep(state.team, core);
  if (state.loop) state.loop = loopStep(state.loop, core);

  switch (event.type) {
    case 'RunLaunched':
      state.runId = event.data.runId;
      state.launched = event.data;
      state.startedAt = event.data.launchedAt;
      break;
    case 'PhaseStarted':
      state.phase = event.data;
      state.loop = initialLoopSnapshot(event.data.role, event.data.maxTurns);
      // Stagnation is judged per phase: a new phase (or iteration) starts a new window.
      state.resilience.stagnation = { calls: [], turns: [], warnings: 0 };
      state.chosenStrategy = undefined;
      state.stepLoop = stepLoopOf(state, event.data.role, undefined);
      break;
    case 'LoopStrategyChosen':
      state.chosenStrategy = event.data.strategy;
      state.stepLoop = stepLoopOf(state, event.data.role, event.data.strategy);
      break;
    case 'LoopStepStarted':
      // A hybrid step is judged on its own: its window starts with it. A plan_execute phase keeps one
      // window across its steps, as a react phase does across its turns.
      if (state.stepLoop?.strategy === 'hybrid') {
        state.resilience.stagnation = { calls: [], turns: [], warnings: 0, pendingWarning: state.resilience.stagnation.pendingWarning };
      }
      if (state.stepLoop) evolveStepLoop(state.stepLoop, event, state.loop?.context.turn ?? 0);
      break;
    case 'LoopPlanRecorded':
    case 'LoopReplanned':
    case 'LoopStepCompleted':
    case 'LoopStepFailed':
      if (state.stepLoop) evolveStepLoop(state.stepLoop, event, state.loop?.context.turn ?? 0);
      break;
    case 'ModelCallStarted': {
      const conv = state.conversations[event.data.role];
      if (conv.openCallId === event.data.callId) break; // a re-recorded start of the same call
      conv.messages.push(newUserMessage(state, event.data));
      // Absorbed into the conversation: dropping the results keeps memory flat over long runs.
      for (const id of event.data.toolResultIds) state.completedTools.delete(id);
      conv.openCallId = event.data.callId;
      state.failedAttempts = 0;
      // The corrective message went out with this call's content.
      if (state.resilience.stagnation.pendingWarning?.role === event.data.role) state.resilience.stagnation.pendingWarning = undefined;
      break;
    }
    case 'ModelCallCompleted': {
      const d = event.data;
      const conv = state.conversations[d.role];
      conv.messages.push({ role: 'assistant', content: d.content });
      conv.openCallId = undefined;
      const u = state.usage[d.role];
      addUsage(u, d.usage, d.costUsd);
      u.turns += 1;
      state.lastToolUses = new Map(
        d.content.filter((b): b is ToolUseBlock => b.type === 'tool_use').map((b) => [b.id, b]),
      );
      state.requestedTools = new Map();
      state.failedAttempts = 0;
      const r = state.resilience;
      r.breaker = { ...CLOSED_BREAKER };
      r.compactBeforeRetry = undefined;
      if (!outOfWindow) {
        const calls = d.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
        r.stagnation = { ...r.stagnation, ...recordTurn(r.stagnation, calls, stagnationWindowSize(state)) };
      }
      break;
    }
    case 'ModelCallFailed': {
      const d = event.data;
      state.failedAttempts = d.attempt;
      state.resilience.breaker = breakerAfter(state.resilience.breaker, d);
      state.resilience.compactBeforeRetry = d.compactBeforeRetry ? { role: d.role, callId: d.callId } : undefined;
      break;
    }
    case 'StagnationWarned': {
      const st = state.resilience.stagnation;
      // The agent gets a fresh window: only what it does after the warning counts from now on.
      state.resilience.stagnation = { calls: [], turns: [], warnings: st.warnings + 1, pendingWarning: { role: event.data.role, message: event.data.message } };
      break;
    }
    case 'ContextCompacted': {
      const d = event.data;
      const conv = state.conversations[d.role];
      conv.messages = applyCompaction(conv.messages, d.fromIndex, d.toIndex, d.summary);
      state.resilience.compactBeforeRetry = undefined;
      state.resilience.compactions += 1;
      if (d.usage) addUsage(state.usage[d.role], d.usage, d.costUsd ?? 0);
      break;
    }
    case 'ToolApprovalRequested':
      state.approvals.set(event.data.toolUseId, { requested: event.data });
      break;
    case 'ToolApprovalDecided': {
      const record = state.approvals.get(event.data.toolUseId);
      if (record) record.decided = event.data;
      break;
    }
    case 'ToolCallRequested':
      state.requestedTools.set(event.data.toolUseId, event.data);
      break;
    case 'ToolCallCompleted':
      state.completedTools.set(event.data.toolUseId, event.data);
      break;
    case 'PlanSubmitted':
      state.plan = event.data;
      break;
    case 'WorkSubmitted':
      state.work = event.data;
      break;
    case 'VerdictSubmitted':
      state.verdict = event.data;
      break;
    case 'ReviewOpened':
      state.review = event.data;
      state.decisions = [];
      break;
    case 'ReviewDecided':
      state.decisions.push(event.data);
      break;
    case 'RunEnded':
      state.endedAt = event.data.at;
      state.loop = undefined;
      abandonSubAgents(state.subAgents, event.data.at);
      break;
    case 'RunSuspended':
      state.suspended = true;
      state.driver = undefined;
      break;
    case 'RunResumed':
      state.suspended = false;
      break;
    case 'RunRepinned':
      applyRepin(state, event.data);
      break;
    case 'DriverClaimed':
      state.driver = event.data.owner;
      break;
    case 'RunForked':
      applyFork(state, event.data);
      break;
    case 'IterationStarted':
    case 'BudgetExceeded':
    case 'WorkspaceUnrecoverable':
      break;
    case 'SubAgentSpawned':
    case 'SubAgentAwaitingApproval':
    case 'SubAgentQueued':
    case 'SubAgentStarted':
    case 'SubAgentModelCalled':
    case 'SubAgentToolStarted':
    case 'SubAgentToolCompleted':
    case 'SubAgentCompleted':
    case 'SubAgentFailed':
    case 'SubAgentCancelled':
    case 'SubAgentTimedOut':
      evolveSubAgents(state.subAgents, event);
      break;
    default:
      assertNever(event);
  }
  return state;
}

/** A new phase's step loop: none for react (or an auto choice not yet made). */
function stepLoopOf(state: RunState, role: RoleName, chosen: ChosenStrategy | undefined): StepLoopState | undefined {
  const strategy = state.launched ? phaseStrategy(state.launched, role, chosen) : undefined;
  return strategy === 'plan_execute' || strategy === 'hybrid' ? newStepLoop(role, strategy) : undefined;
}

/** The user message a model call adds to its role's conversation. */
export function newUserMessage(state: RunState, data: ModelCallStartedData): ChatMessage {
  const content: ContentBlock[] = [];
  for (const id of data.toolResultIds) {
    const done = state.completedTools.get(id);
    if (!done) throw new Error(`ModelCallStarted references tool result ${id}, which is not recorded`);
    content.push(toolResultBlock(done));
  }
  content.push(...data.content);
  return { role: 'user', content };
}

/**
 * A forked run continues from its parent's state at the fork point, under its own id, with the
 * overridden models and prompts.
 */
function applyFork(state: RunState, fork: RunForkedData): void {
  if (!state.launched) throw new Error('RunForked must follow the parent history');
  const team = structuredClone(state.launched.team);
  const models: Partial<Record<RoleName, string>> = {};
  for (const [role, o] of Object.entries(fork.overrides.team ?? {}) as [RoleName, { model?: string; systemPrompt?: string }][]) {
    if (o.model) {
      setRoleModel(team, role, o.model);
      models[role] = o.model;
    }
    if (o.systemPrompt) team[role].systemPrompt = o.systemPrompt;
  }
  state.runId = fork.runId;
  // A pinned parent's fork is pinned to the same provider and endpoint, with the fork's models.
  const pin = state.launched.pin ? { pin: repinned(state.launched.pin, { models }) } : {};
  state.launched = { ...state.launched, runId: fork.runId, team, launchedBy: fork.forkedBy, launchedAt: fork.at, forkedFrom: fork.parent, ...pin };
  state.startedAt = fork.at;
  state.forkedFrom = fork.parent;
  state.driver = undefined;
  state.suspended = false;
  state.team = restoreSnapshot(teamRunMachine, { value: state.team.value, context: { ...state.team.context, runId: fork.runId } });
  const prompt = state.phase ? fork.overrides.team?.[state.phase.role]?.systemPrompt : undefined;
  if (state.phase && prompt) state.phase = { ...state.phase, system: prompt };
}

/** A role's model, for every call of the role: its loop's planner and executor models give way to it. */
function setRoleModel(team: Record<RoleName, RoleConfig>, role: RoleName, model: string): void {
  team[role].model = model;
  const loop = team[role].loop;
  if (loop) team[role].loop = { strategy: loop.strategy, maxReplans: loop.maxReplans, maxPlanSteps: loop.maxPlanSteps, maxTurnsPerStep: loop.maxTurnsPerStep };
}

/** An operator's re-pin: the new pin, and each role whose model it changes calls that model from now on. */
function applyRepin(state: RunState, repin: RunRepinnedData): void {
  if (!state.launched) return;
  const team = structuredClone(state.launched.team);
  for (const role of ROLES) if (repin.to[role].model !== team[role].model) setRoleModel(team, role, repin.to[role].model);
  state.launched = { ...state.launched, team, pin: repin.to };
}

export function toolResultBlock(done: ToolCallCompletedData): ToolResultBlock {
  return done.isError
    ? { type: 'tool_result', tool_use_id: done.toolUseId, content: done.output, is_error: true }
    : { type: 'tool_result', tool_use_id: done.toolUseId, content: done.output };
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

function assertNever(x: never): never {
  throw new Error(`unhandled event ${JSON.stringify(x)}`);
}

export function runStatus(state: RunState): RunStatus {
  if (state.suspended && String(state.team.value) !== 'ended') return 'suspended';
  if (String(state.team.value) !== 'ended' && state.loop && String(state.loop.value) === 'awaitingApproval') return 'awaiting_approval';
  return statusOf(String(state.team.value), state.team.context, new Set(state.team.tags as Iterable<string>));
}

export function terminationReason(state: RunState): TerminationReason | undefined {
  return state.team.context.ended?.reason;
}

/**
 * Tokens a role's calls made the model process, for the token budgets: input at the full rate,
 * output, and prompt-cache reads and writes. Caching makes input cheaper, not smaller: a budget
 * caps what the model reads and writes, and cost (`costUsd`) is where caching shows.
 */
export function roleTokens(u: RoleUsage): number {
  return u.inputTokens + u.outputTokens + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0);
}

/** The run's tokens, its sub-agents' included: they count against the run's budget. */
export function totalTokens(state: RunState): number {
  let total = subAgentTokens(state.subAgents);
  for (const u of Object.values(state.usage)) total += roleTokens(u);
  return total;
}

export function lastAssistantToolUses(messages: ChatMessage[]): ToolUseBlock[] {
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'assistant' || typeof last.content === 'string') return [];
  return (last.content as AssistantBlock[]).filter((b): b is ToolUseBlock => b.type === 'tool_use');
}

/** Folds a whole list of recorded events. */
export function foldRun(
  events: Iterable<{ type: string; data: unknown; revision: number; position: number }>,
  state: RunState = initialRunState(),
): RunState {
  const list = Array.isArray(events) ? (events as RecordedLike[]) : [...events];
  const skip = turnsOutOfWindow(list, state);
  for (let i = 0; i < list.length; i++) evolve(state, list[i] as unknown as TeamRunEvent, list[i], skip?.[i] === true);
  return state;
}

type RecordedLike = { type: string; data: unknown; revision: number; position: number };

function stagnationWindowSize(state: RunState): number {
  return state.launched?.stagnation?.windowSize ?? DEFAULT_STAGNATION_POLICY.windowSize;
}

/**
 * The tool-bearing turns of a list whose fingerprints cannot be in the stagnation window once the
 * whole list is folded: nothing reads the window in the middle of a fold, and the window keeps the
 * last `windowSize` calls and turns of a phase, so a turn followed in the list by `windowSize`
 * tool-bearing turns (each with at least one call), or by a PhaseStarted or StagnationWarned (which
 * empty the window), is gone by the end. Skipping them leaves exactly the same state and saves a
 * canonical JSON and a sha256 per tool call on all but the last few turns of a replay.
 */
function turnsOutOfWindow(list: RecordedLike[], state: RunState): boolean[] | undefined {
  let launched = state.launched;
  if (!launched && list.length > 0 && list[0].type === 'RunLaunched') launched = list[0].data as RunLaunchedData;
  if (!launched) return undefined;
  const keep = Math.max(1, launched.stagnation?.windowSize ?? DEFAULT_STAGNATION_POLICY.windowSize);
  let skip: boolean[] | undefined;
  let later = 0;
  let emptied = false;
  for (let i = list.length - 1; i >= 0; i--) {
    const e = list[i];
    if (e.type === 'PhaseStarted' || e.type === 'StagnationWarned') emptied = true;
    else if (e.type === 'ModelCallCompleted' && (e.data as { content: AssistantBlock[] }).content.some((b) => b.type === 'tool_use')) {
      if (emptied || later >= keep) (skip ??= new Array<boolean>(list.length).fill(false))[i] = true;
      later++;
    }
  }
  return skip;
}

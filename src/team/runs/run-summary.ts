import { pureTransition, restoreSnapshot } from '../domain/pure-transition';
import type { RecordedEvent } from '../../events/event-store/event-store.port';
import type { RoleName } from '../models/model.port';
import { LOOP_EVENT_TYPES, RUN_STREAM_PREFIX, type RunCoreEvent, type RunStatus, type TeamRunEvent, type TerminationReason } from '../domain/run-events';
import { statusOf, teamRunMachine } from '../domain/team-run.machine';
import { initialTeamSnapshot, type TeamSnapshot } from '../domain/run-state';
import { SUB_AGENT_TERMINAL, subAgentLifecycle, type SubAgentStatus } from '../domain/sub-agents';
import { applyLoopEvent, forkedLoops, loopsOf, type Loops } from './loop-summary';
import { guardEvent, newGateGuard, type GateGuard, type GateRefusal } from '../../attestation/decision-gate';
import { pinOf, type RunPin } from '../domain/model-pin';

/**
 * The read model of one run, folded from its events by a store subscription: what GET /v1/runs
 * serves. Light on purpose: no conversations, only the team machine and counters.
 */
const teamStep = pureTransition(teamRunMachine);

export interface RunSummary {
  runId: string;
  goal: string;
  acceptanceCriteria: string[];
  status: RunStatus;
  phase?: string;
  iteration: number;
  maxIterations: number;
  terminationReason?: TerminationReason;
  message?: string;
  launchedBy: string;
  provider: string;
  /** Per role, the provider, model and endpoint its calls go to (domain/model-pin.ts); no endpoint: launched before pins, any endpoint of `provider`. */
  pin: RunPin;
  /**
   * Set by GET /v1/runs/:id (and `runs show`) when the run needs a driver, no process holds its
   * lease, and the answering process's model is not its pin: what it waits for, e.g.
   * `a process with provider anthropic at https://api.anthropic.com:443`.
   */
  waitingFor?: string;
  /** The OS sandbox of its commands, as launched (absent: launched before the sandbox existed). `off`: unsandboxed. */
  sandbox?: { mode: 'bubblewrap' | 'off'; network: Partial<Record<RoleName, string[]>> };
  startedAt: string;
  endedAt?: string;
  usage: RunUsage;
  forkedFrom?: { runId: string; revision: number; turn: number };
  /** The project this run is a task of. */
  project?: { projectId: string; taskKey: string; attempt: number };
  pendingReview?: {
    reviewId: string;
    iteration: number;
    openedAt: string;
    executor: string;
    artifactHash: string;
    timeout?: { policy: string; dueAt: string };
    /** The timeout escalated it; it still waits for a human. */
    escalated?: boolean;
  };
  lastVerdict?: { verdict: string; findings: string[]; summary: string; iteration: number };
  /** Tool calls waiting for a human (status `awaiting_approval`). */
  pendingApprovals?: PendingApproval[];
  /** The run's sub-agents, in the order they were spawned (absent until one is). */
  subAgents?: SubAgentSummary[];
  /** Roles whose loop strategy is not react (domain/loop-strategy.ts): the strategy and where the role is in its plan. */
  loops?: Loops;
  /**
   * Events in the run's stream not acted on: decisions without a valid attestation, and what only
   * a decision may cause (absent when there are none). The run waits as if they were not there.
   */
  refused?: GateRefusal[];
  /** The run stream's revision of the last event that changed this summary (not every event does: SUMMARY_EVENT_TYPES). */
  revision: number;
  /** That event's position in the store. */
  position: number;
}

/**
 * Tokens as the provider counts them: `inputTokens` are the prompt's uncached tokens; a cached
 * prompt's tokens are `cacheReadTokens` (read from the cache) and `cacheWriteTokens` (written to
 * it). The cost prices all four (domain/pricing.ts).
 */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export interface RunUsage extends TokenUsage {
  costUsd: number;
  turns: number;
  byRole: Record<RoleName, TokenUsage & { turns: number }>;
}

/** One call's usage (cache counts absent: none) added to a running total. */
function addTokens(total: TokenUsage, u: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number }): void {
  total.inputTokens += u.inputTokens;
  total.outputTokens += u.outputTokens;
  total.cacheReadTokens += u.cacheReadTokens ?? 0;
  total.cacheWriteTokens += u.cacheWriteTokens ?? 0;
}

const noTokens = (): TokenUsage => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

const addCost = (costUsd: number, more: number): number => Math.round((costUsd + more) * 1e6) / 1e6;

export interface PendingApproval {
  approvalId: string;
  toolUseId: string;
  role: RoleName;
  turn: number;
  tool: string;
  input: Record<string, unknown>;
  risk: string;
  requestedAt: string;
  timeout?: { policy: string; dueAt: string };
}

export interface SubAgentSummary {
  path: string;
  agent: string;
  parent: string;
  role: string;
  task: string;
  depth: number;
  status: SubAgentStatus;
  priority: number;
  tools: string[];
  limits: { maxTurns: number; maxTokens: number; timeoutMs: number };
  turns: number;
  usage: TokenUsage & { costUsd: number };
  spawnedAt: string;
  startedAt?: string;
  endedAt?: string;
  /** Its answer (completed), cut to 2,000 characters; the whole is in its events. */
  result?: string;
  error?: { reason: string; message: string };
}

const RESULT_PREVIEW_CHARS = 2_000;

/** The text cut to the preview's length, never inside a surrogate pair. */
function preview(text: string): string {
  if (text.length <= RESULT_PREVIEW_CHARS) return text;
  const end = /[\uD800-\uDBFF]/.test(text[RESULT_PREVIEW_CHARS - 1]) ? RESULT_PREVIEW_CHARS - 1 : RESULT_PREVIEW_CHARS;
  return `${text.slice(0, end)}…`;
}

export interface RunSummaryState {
  summary: RunSummary;
  team: TeamSnapshot;
  suspended: boolean;
  /** Absent in states made before decisions were attested. */
  gate?: GateGuard;
}

/** The loop strategies a launch sets (react roles are left out). */
/**
 * The events that change a run's summary: the team machine's, and those the summary counts or
 * lists. The runs read model subscribes to these alone (every process follows every run, and a
 * run's other events, the model calls' starts and the tool calls, are most of its stream); the
 * rest leave a summary as it is, its `revision` and `position` included.
 */
export const SUMMARY_EVENT_TYPES: readonly TeamRunEvent['type'][] = [
  'RunLaunched',
  'RunForked',
  'PhaseStarted',
  'PlanSubmitted',
  'WorkSubmitted',
  'VerdictSubmitted',
  'ReviewOpened',
  'ReviewDecided',
  'IterationStarted',
  'RunEnded',
  'RunSuspended',
  'RunResumed',
  'RunRepinned',
  'ModelCallCompleted',
  'ContextCompacted',
  'ToolApprovalRequested',
  'ToolApprovalDecided',
  'SubAgentSpawned',
  'SubAgentAwaitingApproval',
  'SubAgentQueued',
  'SubAgentStarted',
  'SubAgentModelCalled',
  'SubAgentCompleted',
  'SubAgentFailed',
  'SubAgentCancelled',
  'SubAgentTimedOut',
  ...LOOP_EVENT_TYPES,
];
const SUMMARY_TYPES: ReadonlySet<string> = new Set(SUMMARY_EVENT_TYPES);

export function applyToSummary(state: RunSummaryState | undefined, recorded: RecordedEvent): RunSummaryState | undefined {
  const event = { type: recorded.type, data: recorded.data } as TeamRunEvent;
  // Whether the read model was given it or not, the summary is the same.
  if (!SUMMARY_TYPES.has(event.type)) return state;
  if (!state) {
    if (event.type !== 'RunLaunched' && event.type !== 'RunForked') return undefined;
    const d = event.type === 'RunLaunched' ? event.data : event.data.view.launched;
    const zero = () => ({ ...noTokens(), turns: 0 });
    const forkedTeam = event.type === 'RunForked' ? (event.data.view.team as { value: never; context: never }) : undefined;
    state = {
      team: forkedTeam ? restoreSnapshot(teamRunMachine, forkedTeam) : initialTeamSnapshot(),
      suspended: false,
      summary: {
        runId: d.runId,
        goal: d.goal,
        acceptanceCriteria: d.acceptanceCriteria,
        status: 'queued',
        iteration: 1,
        maxIterations: d.maxIterations,
        launchedBy: d.launchedBy,
        provider: d.provider,
        pin: structuredClone(pinOf(d)),
        ...(d.sandbox ? { sandbox: { mode: d.sandbox.mode, network: structuredClone(d.sandbox.network) } } : {}),
        startedAt: d.launchedAt,
        ...(d.project ? { project: { ...d.project } } : {}),
        ...(event.type === 'RunForked' ? forkedLoops(event.data.view) : loopsOf(d.team)),
        usage: { ...noTokens(), costUsd: 0, turns: 0, byRole: { architect: zero(), executor: zero(), reviewer: zero() } },
        revision: -1,
        position: 0,
      },
    };
  }
  const s = state.summary;
  const gate = (state.gate ??= newGateGuard());
  if (guardEvent(gate, String(state.team.value), event, recorded)) {
    s.refused = [...gate.refused];
    return state;
  }
  if (event.type !== 'RunForked') state.team = teamStep(state.team, event as RunCoreEvent);
  if (event.type === 'RunSuspended') state.suspended = true;
  if (event.type === 'RunResumed') state.suspended = false;
  const ctx = state.team.context;
  const value = String(state.team.value);
  s.status = state.suspended && value !== 'ended' ? 'suspended' : statusOf(value, ctx, new Set(state.team.tags as Iterable<string>));
  s.iteration = ctx.iteration || 1;
  s.revision = recorded.revision;
  s.position = recorded.position;
  applyLoopEvent(s, event);
  switch (event.type) {
    case 'PhaseStarted':
      s.phase = event.data.phase;
      break;
    case 'RunForked':
      s.forkedFrom = event.data.parent;
      break;
    case 'RunRepinned':
      s.pin = structuredClone(event.data.to);
      break;
    case 'ModelCallCompleted': {
      addTokens(s.usage, event.data.usage);
      s.usage.costUsd = addCost(s.usage.costUsd, event.data.costUsd);
      s.usage.turns += 1;
      const r = s.usage.byRole[event.data.role];
      addTokens(r, event.data.usage);
      r.turns += 1;
      break;
    }
    case 'VerdictSubmitted':
      s.lastVerdict = { verdict: event.data.verdict, findings: event.data.findings, summary: event.data.summary, iteration: event.data.iteration };
      break;
    case 'ReviewOpened':
      s.pendingReview = {
        reviewId: event.data.reviewId,
        iteration: event.data.iteration,
        openedAt: event.data.at,
        executor: event.data.executor,
        artifactHash: event.data.artifactHash,
        ...(event.data.timeout ? { timeout: event.data.timeout } : {}),
      };
      break;
    case 'ReviewDecided':
      if (event.data.outcome === 'escalated' && s.pendingReview?.reviewId === event.data.reviewId) s.pendingReview.escalated = true;
      break;
    case 'IterationStarted':
      s.pendingReview = undefined;
      break;
    case 'RunEnded':
      s.terminationReason = event.data.reason;
      s.message = event.data.message;
      s.endedAt = event.data.at;
      s.pendingReview = undefined;
      s.pendingApprovals = undefined;
      s.phase = undefined;
      // Sub-agents still unfinished never will be.
      for (const a of s.subAgents ?? []) {
        if (SUB_AGENT_TERMINAL.has(a.status)) continue;
        a.status = 'cancelled';
        a.error = { reason: 'CANCELLED', message: 'the run ended first' };
        a.endedAt = event.data.at;
      }
      break;
    case 'ContextCompacted': {
      // The summarising call's tokens count in the run's usage (not as a turn).
      const u = event.data.usage;
      if (!u) break;
      addTokens(s.usage, u);
      s.usage.costUsd = addCost(s.usage.costUsd, event.data.costUsd ?? 0);
      addTokens(s.usage.byRole[event.data.role], u);
      break;
    }
    case 'ToolApprovalRequested': {
      const d = event.data;
      s.pendingApprovals = [
        ...(s.pendingApprovals ?? []),
        {
          approvalId: d.approvalId,
          toolUseId: d.toolUseId,
          role: d.role,
          turn: d.turn,
          tool: d.name,
          input: d.input,
          risk: d.risk,
          requestedAt: d.at,
          ...(d.timeout ? { timeout: d.timeout } : {}),
        },
      ];
      break;
    }
    case 'ToolApprovalDecided': {
      const left = (s.pendingApprovals ?? []).filter((a) => a.approvalId !== event.data.approvalId);
      s.pendingApprovals = left.length > 0 ? left : undefined;
      break;
    }
    case 'SubAgentSpawned': {
      const d = event.data;
      s.subAgents = [
        ...(s.subAgents ?? []),
        {
          path: d.path,
          agent: d.agent,
          parent: d.parent,
          role: d.role,
          task: d.task,
          depth: d.depth,
          status: 'pending',
          priority: d.priority,
          tools: d.tools,
          limits: d.limits,
          turns: 0,
          usage: { ...noTokens(), costUsd: 0 },
          spawnedAt: d.at,
        },
      ];
      break;
    }
    case 'SubAgentAwaitingApproval':
    case 'SubAgentQueued':
    case 'SubAgentStarted':
    case 'SubAgentModelCalled':
    case 'SubAgentCompleted':
    case 'SubAgentFailed':
    case 'SubAgentCancelled':
    case 'SubAgentTimedOut': {
      const a = s.subAgents?.find((x) => x.path === event.data.path);
      if (!a) break;
      applyToSubAgent(a, event, s);
      break;
    }
    default:
      break;
  }
  // A tool call waiting for a human holds the run (awaiting_approval).
  if (s.pendingApprovals && value !== 'ended' && !state.suspended) s.status = 'awaiting_approval';
  return state;
}

function applyToSubAgent(a: SubAgentSummary, event: TeamRunEvent, s: RunSummary): void {
  switch (event.type) {
    case 'SubAgentModelCalled': {
      a.turns = event.data.turn;
      addTokens(a.usage, event.data.usage);
      a.usage.costUsd = addCost(a.usage.costUsd, event.data.costUsd);
      // Its tokens and cost are the run's too (not its turns: those are the team's).
      addTokens(s.usage, event.data.usage);
      s.usage.costUsd = addCost(s.usage.costUsd, event.data.costUsd);
      break;
    }
    case 'SubAgentAwaitingApproval':
    case 'SubAgentQueued':
    case 'SubAgentStarted':
    case 'SubAgentCompleted':
    case 'SubAgentFailed':
    case 'SubAgentCancelled':
    case 'SubAgentTimedOut': {
      const { result, ...moved } = subAgentLifecycle(event);
      Object.assign(a, moved, result === undefined ? {} : { result: preview(result) });
      break;
    }
    default:
      break;
  }
}

export function runIdOfStream(streamId: string): string | undefined {
  return streamId.startsWith(RUN_STREAM_PREFIX) ? streamId.slice(RUN_STREAM_PREFIX.length) : undefined;
}

import { EVENT_SCHEMA_VERSION } from '../events/command-handling';
import type { RecordedEvent } from '../events/event-store/event-store.port';
import type { ChatMessage, RoleName } from '../team/models/model.port';
import { agentLoopMachine } from '../team/domain/agent-loop.machine';
import { TEAM_RUN_EVENT_TYPES, type TeamRunEvent, type TerminationReason } from '../team/domain/run-events';
import { evolve, initialRunState, runStatus, terminationReason, type RoleUsage, type RunState } from '../team/domain/run-state';
import { teamRunMachine } from '../team/domain/team-run.machine';
import { persistSnapshot } from '../team/domain/pure-transition';
import { ROLES } from '../team/domain/roles';

/** Schema version of each event type this build writes (the command path's); older ones need an upcaster to be understood. */
export const CURRENT_SCHEMA_VERSION = EVENT_SCHEMA_VERSION;

export interface Completeness {
  /** 1.0 when every event needed was recorded and understood. */
  score: number;
  events: number;
  understood: number;
  /** What is missing or not understood, in words. */
  missing: string[];
}

/** A run's agent context at a revision, rebuilt from its events alone. */
export interface RunContext {
  runId: string;
  /** The run's own stream revision the context is at. */
  revision: number;
  status: string;
  terminationReason?: TerminationReason;
  phase?: string;
  iteration: number;
  roles: Record<RoleName, { messages: ChatMessage[]; turns: number; usage: RoleUsage }>;
  usage: { inputTokens: number; outputTokens: number; costUsd: number; turns: number };
  machine: { team: unknown; loop: unknown | null };
  forkedFrom?: { runId: string; revision: number; turn: number };
  /** The run's sub-agents, by path, each with its conversation (absent when it has none). */
  subAgents?: Record<string, { agent: string; role: string; status: string; turns: number; usage: { inputTokens: number; outputTokens: number; costUsd: number }; messages: ChatMessage[] }>;
  completeness: Completeness;
}

const KNOWN = new Set<string>(TEAM_RUN_EVENT_TYPES);

/**
 * Folds a run's history (see loadRunHistory) up to `revision` of its own stream, checking each event
 * for what the fold needs. Events it cannot use are skipped and named in the completeness report,
 * never guessed at.
 */
export function replayRun(history: RecordedEvent[], runId: string, revision?: number): { state: RunState; completeness: Completeness } {
  const state = initialRunState(runId);
  const missing = new Map<string, number>();
  const note = (what: string) => missing.set(what, (missing.get(what) ?? 0) + 1);
  let seen = 0;
  let understood = 0;
  // Things missing that no stored event stands for (they lower the score like a skipped event).
  let structural = 0;
  const ownStream = `run-${runId}`;
  for (const e of history) {
    if (revision !== undefined && e.streamId === ownStream && e.revision > revision) break;
    seen++;
    if (!KNOWN.has(e.type)) {
      note(`event of unknown type ${e.type}`);
      continue;
    }
    if (e.metadata.schemaVersion !== CURRENT_SCHEMA_VERSION) {
      note(`${e.type} of schema version ${e.metadata.schemaVersion} (no upcaster to version ${CURRENT_SCHEMA_VERSION})`);
      continue;
    }
    if (seen === 1 && e.type !== 'RunLaunched') {
      note('the RunLaunched event that starts the run');
      structural++;
    }
    try {
      evolve(state, { type: e.type, data: e.data } as TeamRunEvent, e);
      understood++;
    } catch (err) {
      note(`${e.type} at revision ${e.revision} could not be applied: ${(err as Error).message}`);
    }
  }
  if (seen === 0) note('every event: the run has none');
  const total = seen + structural;
  return {
    state,
    completeness: {
      score: total === 0 ? 0 : Math.round((understood / total) * 10_000) / 10_000,
      events: seen,
      understood,
      missing: [...missing.entries()].map(([what, n]) => (n > 1 ? `${n} × ${what}` : what)),
    },
  };
}

/** A detached, JSON-safe view of a folded run. */
export function contextOf(state: RunState, completeness: Completeness): RunContext {
  const roles = {} as RunContext['roles'];
  for (const role of ROLES) {
    roles[role] = { messages: structuredClone(state.conversations[role].messages), turns: state.usage[role].turns, usage: { ...state.usage[role] } };
  }
  const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0, turns: 0 };
  for (const role of ROLES) {
    usage.inputTokens += state.usage[role].inputTokens;
    usage.outputTokens += state.usage[role].outputTokens;
    usage.costUsd = Math.round((usage.costUsd + state.usage[role].costUsd) * 1e6) / 1e6;
    usage.turns += state.usage[role].turns;
  }
  return {
    runId: state.runId,
    revision: state.revision,
    status: runStatus(state),
    terminationReason: terminationReason(state),
    phase: state.phase?.phase,
    iteration: state.team.context.iteration,
    roles,
    usage,
    machine: {
      team: persistSnapshot(teamRunMachine, state.team),
      loop: state.loop ? persistSnapshot(agentLoopMachine, state.loop) : null,
    },
    ...(state.forkedFrom ? { forkedFrom: state.forkedFrom } : {}),
    ...(Object.keys(state.subAgents).length > 0 ? { subAgents: subAgentContexts(state) } : {}),
    completeness,
  };
}

function subAgentContexts(state: RunState): NonNullable<RunContext['subAgents']> {
  const out: NonNullable<RunContext['subAgents']> = {};
  for (const [path, r] of Object.entries(state.subAgents)) {
    out[path] = { agent: r.spawned.agent, role: r.spawned.role, status: r.status, turns: r.turns, usage: { ...r.usage }, messages: structuredClone(r.messages) };
  }
  return out;
}

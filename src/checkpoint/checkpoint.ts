import { sha256Hex } from '../shared/canonical-json';
import { agentLoopMachine } from '../team/domain/agent-loop.machine';
import type { RunState } from '../team/domain/run-state';
import type { ChatMessage } from '../team/models/model.port';
import { teamRunMachine } from '../team/domain/team-run.machine';
import { decisionTrust } from '../attestation/decision-trust';
import { toRunStreamId } from '../team/domain/run-events';
import { persistSnapshot, restoreSnapshot } from '../team/domain/pure-transition';

/**
 * A checkpoint: a run's folded state at a stream revision — the rebuilt context (conversations,
 * usage), the persisted machine snapshots and everything else the fold holds — with a schema
 * version and a content hash. Resuming = checkpoint + the events after `revision`, and must equal a
 * full replay; anything doubtful (hash mismatch, other version, unreadable) is refused so the caller
 * falls back to a full replay.
 */
export const CHECKPOINT_SCHEMA_VERSION = 1;

export interface Checkpoint {
  runId: string;
  revision: number;
  position: number;
  schemaVersion: number;
  /** `sha256:<hex>` of the JSON text of `state` (as JSON.stringify writes it; see takeCheckpoint). */
  contentHash: string;
  createdAt: string;
  /** Why it was taken: `phase`, `step` (a hybrid step ended), `turns`, `shutdown`, `manual`. */
  reason: string;
  state: SerializedRunState;
}

export type SerializedRunState = Record<string, unknown>;

export class CheckpointInvalidError extends Error {
  override readonly name = 'CheckpointInvalidError';
}

export function serializeRunState(state: RunState): SerializedRunState {
  return JSON.parse(serializeRunStateText(state)) as SerializedRunState;
}

/** The state as JSON text; its sha256 is the checkpoint's content hash. */
function serializeRunStateText(state: RunState): string {
  return (
    JSON.stringify({
      runId: state.runId,
      revision: state.revision,
      position: state.position,
      launched: state.launched,
      team: persistSnapshot(teamRunMachine, state.team),
      loop: state.loop ? persistSnapshot(agentLoopMachine, state.loop) : null,
      phase: state.phase ?? null,
      usage: state.usage,
      lastToolUses: [...state.lastToolUses.values()],
      requestedTools: [...state.requestedTools.values()],
      completedTools: [...state.completedTools.values()],
      plan: state.plan ?? null,
      work: state.work ?? null,
      verdict: state.verdict ?? null,
      review: state.review ?? null,
      decisions: state.decisions,
      startedAt: state.startedAt ?? null,
      endedAt: state.endedAt ?? null,
      failedAttempts: state.failedAttempts,
      suspended: state.suspended,
      driver: state.driver ?? null,
      forkedFrom: state.forkedFrom ?? null,
      resilience: state.resilience,
      approvals: [...state.approvals.values()],
      subAgents: state.subAgents,
      gate: state.gate,
      stepLoop: state.stepLoop ?? null,
      chosenStrategy: state.chosenStrategy ?? null,
    }).slice(0, -1) +
    // The conversations last, their messages' text reused from earlier checkpoints.
    `,"conversations":${conversationsJson(state.conversations)}}`
  );
}

/**
 * The JSON text of a message list, as JSON.stringify writes it, reusing the text of the messages a
 * previous checkpoint of the same list already wrote. A conversation only grows by push (the fold
 * never changes a message; a compaction replaces the whole list), so the text of its first `count`
 * messages stays valid while the list is the same array. This turns a checkpoint's cost from the
 * whole conversation into the messages since the last one (the hash and the write remain linear).
 */
const messagesText = new WeakMap<readonly ChatMessage[], { count: number; text: string }>();

function messagesJson(messages: readonly ChatMessage[]): string {
  const cached = messagesText.get(messages);
  let text = cached && cached.count <= messages.length ? cached.text : '';
  let count = cached && cached.count <= messages.length ? cached.count : 0;
  for (; count < messages.length; count++) text += (count === 0 ? '' : ',') + JSON.stringify(messages[count]);
  messagesText.set(messages, { count, text });
  return `[${text}]`;
}

/** Exactly `JSON.stringify(conversations)`, with each message list through `messagesJson`. */
function conversationsJson(conversations: RunState['conversations']): string {
  const parts: string[] = [];
  for (const [role, conv] of Object.entries(conversations)) {
    const fields: string[] = [];
    for (const [key, value] of Object.entries(conv)) {
      if (key === 'messages') fields.push(`"messages":${messagesJson(value as ChatMessage[])}`);
      else if (value !== undefined) fields.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
    }
    parts.push(`${JSON.stringify(role)}:{${fields.join(',')}}`);
  }
  return `{${parts.join(',')}}`;
}

export function deserializeRunState(s: SerializedRunState): RunState {
  const opt = <T>(v: unknown): T | undefined => (v === null || v === undefined ? undefined : (v as T));
  const team = s.team as { value: never; context: never };
  const loop = s.loop as { value: never; context: never } | null;
  // Taken before the resilience rules existed: its window and breaker are unknown, replay instead.
  if (!s.resilience || !Array.isArray(s.approvals)) throw new CheckpointInvalidError('checkpoint predates the resilience state');
  return {
    runId: s.runId as string,
    revision: s.revision as number,
    position: s.position as number,
    launched: opt(s.launched),
    team: restoreSnapshot(teamRunMachine, team),
    loop: loop ? restoreSnapshot(agentLoopMachine, loop) : undefined,
    phase: opt(s.phase),
    conversations: s.conversations as RunState['conversations'],
    usage: s.usage as RunState['usage'],
    lastToolUses: new Map((s.lastToolUses as { id: string }[]).map((b) => [b.id, b as never])),
    requestedTools: new Map((s.requestedTools as { toolUseId: string }[]).map((t) => [t.toolUseId, t as never])),
    completedTools: new Map((s.completedTools as { toolUseId: string }[]).map((t) => [t.toolUseId, t as never])),
    plan: opt(s.plan),
    work: opt(s.work),
    verdict: opt(s.verdict),
    review: opt(s.review),
    decisions: s.decisions as RunState['decisions'],
    startedAt: opt(s.startedAt),
    endedAt: opt(s.endedAt),
    failedAttempts: s.failedAttempts as number,
    suspended: s.suspended as boolean,
    driver: opt(s.driver),
    forkedFrom: opt(s.forkedFrom),
    resilience: s.resilience as RunState['resilience'],
    approvals: new Map((s.approvals as { requested: { toolUseId: string } }[]).map((a) => [a.requested.toolUseId, a as never])),
    // Absent in checkpoints taken before sub-agents existed (their runs had none).
    subAgents: (s.subAgents ?? {}) as RunState['subAgents'],
    // Absent from checkpoints made before decisions were attested.
    gate: (s.gate ?? { refused: [] }) as RunState['gate'],
    // Absent in checkpoints taken before loop strategies existed (their phases ran react).
    stepLoop: opt(s.stepLoop),
    chosenStrategy: opt(s.chosenStrategy),
  };
}

/**
 * The content hash covers the state's JSON text. JSON.parse keeps key order and JSON.stringify
 * reproduces the same text from what it parsed, so the hash is checked after a storage round trip
 * with one stringify — not a canonical re-serialisation, which dominated the cost of big checkpoints.
 */
export function takeCheckpoint(state: RunState, reason: string, now: Date): Checkpoint {
  const text = serializeRunStateText(state);
  const header = {
    runId: state.runId,
    revision: state.revision,
    position: state.position,
    schemaVersion: CHECKPOINT_SCHEMA_VERSION,
    contentHash: `sha256:${sha256Hex(text)}`,
    createdAt: now.toISOString(),
    reason,
  };
  // `state` is parsed from the text only if someone reads it: the SQL stores write the text as it is.
  let parsed: SerializedRunState | undefined;
  const checkpoint = Object.defineProperty(header, 'state', {
    enumerable: true,
    get: () => (parsed ??= JSON.parse(text) as SerializedRunState),
  }) as Checkpoint;
  // Kept off the enumerable fields: stores write this text instead of serialising the state again.
  Object.defineProperty(checkpoint, STATE_TEXT, { value: text, enumerable: false });
  return checkpoint;
}

const STATE_TEXT = Symbol('stateText');

/** The checkpoint as stored JSON, reusing the state text it was hashed from when it has one. */
export function checkpointJson(cp: Checkpoint): string {
  const text = (cp as Checkpoint & { [STATE_TEXT]?: string })[STATE_TEXT];
  if (text === undefined) return JSON.stringify(cp);
  const header = { runId: cp.runId, revision: cp.revision, position: cp.position, schemaVersion: cp.schemaVersion, contentHash: cp.contentHash, createdAt: cp.createdAt, reason: cp.reason };
  return `${JSON.stringify(header).slice(0, -1)},"state":${text}}`;
}

/** Verifies and restores a checkpoint; throws CheckpointInvalidError when it cannot be trusted. */
export function restoreCheckpoint(cp: Checkpoint): RunState {
  if (cp.schemaVersion !== CHECKPOINT_SCHEMA_VERSION) {
    throw new CheckpointInvalidError(`checkpoint schema version ${cp.schemaVersion} is not ${CHECKPOINT_SCHEMA_VERSION}`);
  }
  let hash: string;
  try {
    hash = `sha256:${sha256Hex(JSON.stringify(cp.state))}`;
  } catch (err) {
    throw new CheckpointInvalidError(`checkpoint state is unreadable: ${(err as Error).message}`);
  }
  if (hash !== cp.contentHash) throw new CheckpointInvalidError('checkpoint content hash does not match: it was altered or is corrupt');
  const state = deserializeRunState(cp.state);
  if (state.revision !== cp.revision || state.runId !== cp.runId) throw new CheckpointInvalidError('checkpoint header does not match its state');
  unattestedDecisionIn(state);
  return state;
}

/**
 * A checkpoint is a store row like any other: one whose decisions (the review's, the tool calls')
 * do not carry a valid attestation for this run's stream is refused, so the run is replayed from
 * its events, where the gate guard judges each one. Unsigned decisions from before signing began
 * are refused here too (their place is not in the checkpoint): those runs are replayed, no worse.
 */
function unattestedDecisionIn(state: RunState): void {
  const streamId = toRunStreamId(state.runId);
  const check = (type: string, data: { attestation?: { rev?: number } } | undefined) => {
    if (!data) return;
    const problem = decisionTrust().refusal(type, data, { streamId, revision: data.attestation?.rev ?? -1, position: 0 });
    if (problem) throw new CheckpointInvalidError(`checkpoint holds a ${type} that is ${problem.replace('_', ' ')}`);
  };
  for (const d of state.decisions) check('ReviewDecided', d);
  for (const a of state.approvals.values()) check('ToolApprovalDecided', a.decided);
}

import type { Identity } from '../auth/identity';
import type { CommandPath } from '../events/command-handling';
import { ConflictError } from '../shared/errors';
import type { Clock } from '../shared/ports';
import { newRunId } from '../shared/system';
import { RunNotFoundError } from '../team/domain/run-decider';
import { ROLES } from '../team/domain/roles';
import type { ForkOverrides, RunForkedData, TeamRunEvent } from '../team/domain/run-events';
import { evolve } from '../team/domain/run-state';
import { teamRunMachine } from '../team/domain/team-run.machine';
import { persistSnapshot } from '../team/domain/pure-transition';
import type { RunSupervisor } from '../team/dispatch/run-supervisor';
import { loadRunHistory } from '../team/runs/run-history';
import { runStream } from '../team/runs/run-stream';
import { unrebuildable, workspaceAt } from '../team/workspace/workspace-effects';
import { restoreWorkspace, unrecoverableMessage } from '../team/workspace/workspace-log';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { forkPoint, InvalidForkError } from './fork';
import { replayRun } from './replay';

const PARENT = "the parent's workspace at the fork point";

export interface ForkResult {
  runId: string;
  forkedFrom: { runId: string; revision: number; turn: number };
  /** What of the parent's workspace at the fork point could not be reproduced. */
  workspaceNote: string;
}

/** What a fork needs: the command path, the time, and where runs' workspaces are made. */
export interface ForkDeps {
  path: CommandPath;
  clock: Clock;
  workspaces: Pick<RunSupervisor, 'workspaceRoot' | 'prepareWorkspace'>;
}

/**
 * Fork at turn N: a new run whose history up to N is the parent's events (linked, not re-executed),
 * then its own. Its workspace is rebuilt from the file effects recorded up to N (workspace-log.ts).
 */
export async function forkRun(deps: ForkDeps, runId: string, turn: number, overrides: ForkOverrides, by: Identity): Promise<ForkResult> {
  const { path, clock, workspaces } = deps;
  const history = await loadRunHistory(path.store, runId);
  if (history.length === 0) throw new RunNotFoundError(runId);
  const point = forkPoint(history, turn);
  const inherited = history.slice(0, point.index + 1);
  const { state, completeness } = replayRun(inherited, runId);
  if (completeness.score < 1) throw new ConflictError(`the run cannot be forked: its history is incomplete (${completeness.missing.join('; ')})`);
  if (String(state.team.value) === 'ended') throw new ConflictError('the run had already ended at that turn');

  const forkId = newRunId();
  const at = new Date(clock.now()).toISOString();
  const data: RunForkedData = {
    runId: forkId,
    parent: { runId: point.runId, revision: point.revision, turn },
    overrides,
    forkedBy: by.id,
    at,
    view: { launched: state.launched!, team: null },
  };
  // The view is what the fork's own fold arrives at: apply the fork to a copy of the state.
  evolve(state, { type: 'RunForked', data }, { revision: 0, position: 0 });
  data.view = {
    launched: state.launched!,
    team: persistSnapshot(teamRunMachine, state.team),
    ...(state.stepLoop ? { stepLoop: structuredClone(state.stepLoop) } : {}),
    ...(state.chosenStrategy ? { chosenStrategy: state.chosenStrategy } : {}),
  };
  // The workspace first: RunForked wakes a driver, which must find the files in place.
  const workspaceNote = await rebuildWorkspace(deps, forkId, inherited);
  try {
    // A new stream whose state before RunForked is the parent's at the fork point.
    const stream = { ...runStream(path.store, forkId), initial: () => replayRun(inherited, runId).state };
    await path.handle(stream, (): TeamRunEvent[] => [{ type: 'RunForked', data }], { runId: forkId, correlationId: runId, actor: by.id }, { assumeNew: true, maxAttempts: 1 });
  } catch (err) {
    // The fork's own error is the one to report; a leftover directory of a fork that never existed holds nothing anyone reads.
    await rm(join(workspaces.workspaceRoot, forkId), { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
  return { runId: forkId, forkedFrom: data.parent, workspaceNote };
}

/**
 * The parent's workspace at the fork point, rebuilt from the inherited events (the recorded file
 * effects and their blobs). A fork whose workspace cannot be rebuilt exactly is refused (409),
 * unless the parent was recorded before file effects were: then what can be is rebuilt, and the
 * note says what could not.
 */
async function rebuildWorkspace({ path, workspaces }: ForkDeps, forkId: string, inherited: { type: string; data: unknown }[]): Promise<string> {
  const manifest = workspaceAt(inherited);
  const legacy = Object.keys(manifest.notReproduced).length > 0;
  if (legacy) {
    // Recorded before file effects were: the files that are known, and a note on the rest.
    for (const [file, entry] of manifest.files) if ('unrecorded' in entry) manifest.files.delete(file);
    const notes = Object.entries(manifest.notReproduced).map(([name, n]) => `${n} ${name} call(s) not reproduced: their effects are not recorded`);
    manifest.notReproduced = {};
    const workspace = await workspaces.prepareWorkspace(forkId);
    const result = await restoreWorkspace(path.store, workspace, manifest);
    if (!result.ok) {
      // The refusal is the one to report; a directory left over belongs to a fork never recorded (its id is new), which nothing reads.
      await rm(workspace, { recursive: true, force: true }).catch(() => undefined);
      throw new ConflictError(`cannot fork: ${unrecoverableMessage(result.unrecoverable, PARENT)}`);
    }
    return [`rebuilt ${manifest.files.size} file(s) from the events`, ...notes].join('; ');
  }
  const blocked = unrebuildable(manifest);
  if (blocked.length > 0) throw new ConflictError(`cannot fork: ${unrecoverableMessage(blocked, PARENT)}`);
  const workspace = await workspaces.prepareWorkspace(forkId);
  const result = await restoreWorkspace(path.store, workspace, manifest);
  if (!result.ok) {
    // The refusal is the one to report; a directory left over belongs to a fork never recorded (its id is new), which nothing reads.
    await rm(workspace, { recursive: true, force: true }).catch(() => undefined);
    throw new ConflictError(`cannot fork: ${unrecoverableMessage(result.unrecoverable, PARENT)}`);
  }
  return `rebuilt ${manifest.files.size} file(s) from the events`;
}

export function validateOverrides(raw: unknown): ForkOverrides {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new InvalidForkError('overrides must be an object');
  const { team, ...rest } = raw as { team?: unknown };
  if (Object.keys(rest).length > 0) throw new InvalidForkError(`unknown override(s): ${Object.keys(rest).join(', ')}`);
  if (team === undefined) return {};
  if (typeof team !== 'object' || team === null || Array.isArray(team)) throw new InvalidForkError('overrides.team must be an object');
  const out: NonNullable<ForkOverrides['team']> = {};
  for (const [role, value] of Object.entries(team)) {
    if (!(ROLES as readonly string[]).includes(role)) throw new InvalidForkError(`overrides.team.${role}: unknown role`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidForkError(`overrides.team.${role} must be an object`);
    const { model, systemPrompt, ...extra } = value as { model?: unknown; systemPrompt?: unknown };
    if (Object.keys(extra).length > 0) throw new InvalidForkError(`overrides.team.${role}: unknown field(s) ${Object.keys(extra).join(', ')}`);
    if (model !== undefined && (typeof model !== 'string' || !model.trim() || model.length > 200)) {
      throw new InvalidForkError(`overrides.team.${role}.model must be a non-empty string`);
    }
    if (systemPrompt !== undefined && (typeof systemPrompt !== 'string' || !systemPrompt.trim() || systemPrompt.length > 20_000)) {
      throw new InvalidForkError(`overrides.team.${role}.systemPrompt must be a non-empty string of at most 20000 characters`);
    }
    out[role as keyof typeof out] = { ...(model ? { model: model as string } : {}), ...(systemPrompt ? { systemPrompt: systemPrompt as string } : {}) };
  }
  return { team: out };
}

import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { ConflictError } from '../../shared/errors';
import { RunNotFoundError } from '../../team/domain/run-decider';
import { runStream } from '../../team/run-stream';
import { rm } from 'node:fs/promises';
import { CLOCK, newRunId } from '../../shared/system';
import { ROLES } from '../../team/domain/roles';
import type { ForkOverrides, RunForkedData, TeamRunEvent } from '../../team/domain/run-events';
import { evolve } from '../../team/domain/run-state';
import { teamRunMachine } from '../../team/domain/team-run.machine';
import type { Clock } from '../../shared/ports';
import { loadRunHistory } from '../../team/run-history';
import { RunSupervisor } from '../../team/run-supervisor';
import { TOOL_REGISTRY } from '../../team/tokens';
import type { ToolRegistry } from '../../team/tools/tool-registry';
import { forkPoint, InvalidForkError } from '../fork';
import { join } from 'node:path';
import { replayRun } from '../replay';

export class ForkRunCommand {
  constructor(
    readonly runId: string,
    readonly turn: number,
    readonly overrides: ForkOverrides,
    readonly by: Identity,
  ) {}
}

export interface ForkResult {
  runId: string;
  forkedFrom: { runId: string; revision: number; turn: number };
  /** What of the parent's workspace at the fork point could not be reproduced. */
  workspaceNote: string;
}

/** Tools whose effect on the workspace is fully described by their recorded input. */
const REPLAYABLE_TOOLS = new Set(['write_file', 'edit_file']);

/**
 * Fork at turn N: a new run whose history up to N is the parent's events (linked, not re-executed),
 * then its own. Its workspace is rebuilt by re-applying the file writes recorded up to N.
 */
@CommandHandler(ForkRunCommand)
export class ForkRunHandler implements ICommandHandler<ForkRunCommand, ForkResult> {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(TOOL_REGISTRY) private readonly tools: ToolRegistry,
    private readonly supervisor: RunSupervisor,
  ) {}

  async execute({ runId, turn, overrides, by }: ForkRunCommand): Promise<ForkResult> {
    const history = await loadRunHistory(this.path.store, runId);
    if (history.length === 0) throw new RunNotFoundError(runId);
    const point = forkPoint(history, turn);
    const inherited = history.slice(0, point.index + 1);
    const { state, completeness } = replayRun(inherited, runId);
    if (completeness.score < 1) throw new ConflictError(`the run cannot be forked: its history is incomplete (${completeness.missing.join('; ')})`);
    if (String(state.team.value) === 'ended') throw new ConflictError('the run had already ended at that turn');

    const forkId = newRunId();
    const at = new Date(this.clock.now()).toISOString();
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
    data.view = { launched: state.launched!, team: teamRunMachine.getPersistedSnapshot(state.team) };
    // The workspace first: RunForked wakes a driver, which must find the files in place.
    const workspaceNote = await this.rebuildWorkspace(forkId, inherited);
    try {
      // A new stream whose state before RunForked is the parent's at the fork point.
      const stream = { ...runStream(this.path.store, forkId), initial: () => replayRun(inherited, runId).state };
      await this.path.handle(stream, (): TeamRunEvent[] => [{ type: 'RunForked', data }], { runId: forkId, correlationId: runId, actor: by.id }, { assumeNew: true, maxAttempts: 1 });
    } catch (err) {
      await rm(join(this.supervisor.workspaceRoot, forkId), { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
    return { runId: forkId, forkedFrom: data.parent, workspaceNote };
  }

  private async rebuildWorkspace(forkId: string, inherited: { type: string; data: unknown }[]): Promise<string> {
    const workspace = await this.supervisor.prepareWorkspace(forkId);
    const requested = new Map<string, { name: string; input: Record<string, unknown>; role: string }>();
    let applied = 0;
    const skipped = new Map<string, number>();
    for (const e of inherited) {
      if (e.type === 'ToolCallRequested') {
        const d = e.data as { toolUseId: string; name: string; input: Record<string, unknown>; role: string };
        requested.set(d.toolUseId, d);
      } else if (e.type === 'ToolCallCompleted') {
        const d = e.data as { toolUseId: string; name: string; isError: boolean };
        const call = requested.get(d.toolUseId);
        if (!call || d.isError) continue;
        const tool = this.tools.get(call.name);
        if (!REPLAYABLE_TOOLS.has(call.name) || !tool) {
          if (tool && !tool.readOnly) skipped.set(call.name, (skipped.get(call.name) ?? 0) + 1);
          continue;
        }
        const outcome = await tool.execute(call.input, { runId: forkId, role: 'executor', workspace, signal: new AbortController().signal });
        if (!outcome.isError) applied++;
      }
    }
    const notes = [`re-applied ${applied} recorded file write(s)`];
    for (const [name, n] of skipped) notes.push(`${n} ${name} call(s) not reproduced: their effects are not recorded`);
    return notes.join('; ');
  }
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

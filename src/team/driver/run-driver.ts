// One file over 400 lines on purpose: it is the driver's loop and the state it keeps beyond the fold
// (deferred results, checkpoint spacing, the claim and fence), documented once below; the model
// turn, tool dispatch and compaction are modules of their own in this folder.
import { promises as fs } from 'node:fs';
import type { NewEvent } from '../../events/event-store/event-store.port';
import { inToolSpan, RunTrace } from '../../observability/tracing';
import { EventTooLargeError, isStoreUnavailable, WrongExpectedRevisionError } from '../../events/errors';
import { untilStoreAnswers, waitOut } from '../../events/outlast-store';
import { CommandPath, type CommandContext, type DomainEvent } from '../../events/command-handling';
import { takeCheckpoint } from '../../checkpoint/checkpoint';
import { modelOfCall, nextAction, toolsOfCall, type ContextMeasure, type NextAction } from '../domain/next-action';
import type { ChatMessage, RoleName, TokenCountRequest } from '../models/model.port';
import { TokenCounter } from '../models/token-count';
import { contextLimitOf, DEFAULT_MARGIN_TOKENS } from '../domain/resilience/context-window';
import { agentIdentity, toRunStreamId, type TeamRunEvent } from '../domain/run-events';
import { evolve, foldRun, initialRunState, newUserMessage, runStatus, type RunState } from '../domain/run-state';
import type { ModelCallStartedData } from '../domain/run-events';
import { isDecidedStep, needsArtifactHash, type DecidedStep } from '../domain/run-steps';
import { runDecider } from '../domain/run-decider';
import { loadRunState } from '../runs/run-stream';
import { workspaceDigest } from '../tools/workspace-digest';
import { loadRunHistory } from '../runs/run-history';
import { emptyManifest, unrebuildable, workspaceAt } from '../workspace/workspace-effects';
import { isEmptyDirectory, restoreWorkspace, unrecoverableMessage } from '../workspace/workspace-log';
import { compactContext } from './compaction';
import { takeModelTurn } from './model-turn';
import { deadlineOf, isoNow, type RunDriverDeps, type StepContext } from './step-context';
import { dispatchTools, submitToolCall } from './tool-dispatch';
import { pinOf } from '../domain/model-pin';
import { roleRoute } from '../models/model-roster';

// A checkpoint holds the whole folded state, so its cost grows with the conversation: every 100
// turns keeps that under a tenth of a millisecond per turn while a resume folds at most 100 turns.
export const DEFAULT_CHECKPOINT_EVERY_TURNS = 100;

/**
 * Drives one run: folds its events, asks the domain for the next action (`nextAction`), performs
 * it and appends what happened at the run's expected revision. The steps that need no effect are
 * decided by `decideStep` (domain/run-steps.ts); model turns, tool calls and compactions are
 * performed by their modules in this folder, given a `StepContext`.
 *
 * What the driver keeps beyond the fold — none of it is needed to resume: a driver started on the
 * same events (after a crash, on another process) continues exactly where the last one stopped.
 * - `deferred`: events folded but not yet committed (results of repeatable tools, committed with
 *   the next append). The fold is ahead of the store by that many revisions; when that append
 *   fails, or the driver must catch up with the store first, they are dropped and the fold is
 *   rebuilt from the store (the calls are repeatable and run again) — except when the store
 *   refused one of the append's own events as too large (nothing written): they are kept for the
 *   append that records that failure.
 * - `checkpointTurns`: model turns folded into the last checkpoint this driver took (0 until it
 *   takes one), which spaces its checkpoints (see `afterAppend`).
 * - `claimed`: this driver's claim is recorded. Before it, another owner named by the fold is the
 *   previous driver, not a fence.
 * - `fenced`: another driver's claim was seen; this one stopped without another write.
 * - `abort`: the driver's stop (cancel, shutdown, fencing); `inFlight`: the model call or tools
 *   running now, which a stop aborts too.
 */
export class RunDriver {
  private state: RunState = initialRunState();
  private readonly stream: string;
  private readonly path: CommandPath;
  private readonly abort = new AbortController();
  private inFlight?: AbortController;
  private deferred: NewEvent[] = [];
  private checkpointTurns = 0;
  private claimed = false;
  /** Why the driver stopped driving, when something else than the run's own course stopped it. */
  fenced = false;
  private readonly steps: StepContext;
  /** This driver's spans of the run's phases (no-ops unless tracing is on). */
  private readonly runTrace: RunTrace;
  /** The provider's token counts for the context budget (when it has a counter), per prompt prefix. */
  private readonly counter?: TokenCounter;
  private readonly measure: ContextMeasure;

  constructor(
    readonly runId: string,
    private readonly deps: RunDriverDeps,
  ) {
    this.stream = toRunStreamId(runId);
    this.runTrace = new RunTrace(runId);
    this.path = deps.path ?? new CommandPath(deps.store, deps.owner ?? 'local', deps.ids, deps.clock);
    const logger = deps.logger;
    if (deps.model.countTokens) this.counter = deps.tokenCounter ?? new TokenCounter(deps.model, logger && { warn: (m) => logger.warn(`run ${runId}: ${m}`) });
    this.measure = (role, messages) => (this.counter ? this.counter.lookup(this.countRequest(role, messages)) : undefined);
    // The steps read the state the driver holds now (appends and catch-ups replace it).
    const current = () => this.state;
    const workspace = `${deps.workspaceRoot}/${runId}`;
    let realWorkspace: Promise<string | undefined> | undefined;
    this.knowRealWorkspace = (real) => {
      realWorkspace = Promise.resolve(real);
    };
    this.steps = {
      runId,
      deps,
      workspace,
      // A workspace not there yet has no real path: undefined, and asked again next time (the tools resolve it themselves).
      realWorkspace: () =>
        (realWorkspace ??= fs.realpath(workspace).catch(() => {
          realWorkspace = undefined;
          return undefined;
        })),
      get state() {
        return current();
      },
      runSignal: this.abort.signal,
      append: (events) => this.append(events),
      defer: (events) => this.defer(events),
      track: (controller) => {
        this.inFlight = controller;
      },
    };
  }

  /** The workspace's real path, when whoever made the directory resolved it already (one call less). */
  readonly knowRealWorkspace: (real: string) => void;

  get snapshot(): RunState {
    return this.state;
  }

  /** Stops driving: aborts the model call or tool in flight. Used by cancel and shutdown. */
  stop(reason = 'stopped'): void {
    this.abort.abort(new Error(reason));
    this.inFlight?.abort(new Error(reason));
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  status() {
    return runStatus(this.state);
  }

  /** Drives the run until it ends, waits for a human, or the driver is stopped. */
  async drive(): Promise<RunState> {
    try {
      return await this.driveUntilIdle();
    } finally {
      this.runTrace.end();
    }
  }

  private async driveUntilIdle(): Promise<RunState> {
    await this.deps.fairShare?.turn();
    const loaded = await this.untilStoreAnswers(() => loadRunState(this.deps.store, this.runId, this.deps.checkpoints, this.deps.logger));
    if (!loaded) return this.state;
    this.state = loaded;
    if (!this.state.launched) throw new Error(`run ${this.runId} does not exist`);
    // Stopped while waiting for its turn (cancel, shutdown, lost lease): no claim.
    if (this.abort.signal.aborted) return this.state;
    // Nothing to do (the run waits for a human, or has ended: another process may have got here
    // first, on a read model behind the store): no claim, so the run does not change hands.
    if (isIdle(nextAction(this.state, this.deps.clock.now()))) return this.state;
    // This process did not drive the run last (a takeover, a resume, a fork's first drive): its
    // workspace directory may be missing or stale here.
    const arriving = !this.deps.owner || this.state.driver !== this.deps.owner;
    if (!(await this.untilStoreAnswers(async () => (await this.claim(), true)))) return this.state;
    if (arriving && !(await this.untilStoreAnswers(async () => (await this.rebuildWorkspace(), true)))) return this.state;
    let outage = 0;
    while (!this.abort.signal.aborted) {
      const action = await this.decide();
      // Stopped while the tokens were counted: nothing more is done.
      if (this.abort.signal.aborted) break;
      try {
        if (isIdle(action)) {
          await this.flushDeferred();
          break;
        }
        await this.perform(action);
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError) {
          // Someone else wrote to the run (a cancel, a decision): fold what they wrote and decide again.
          if (!(await this.untilStoreAnswers(async () => (await this.catchUp(), true)))) break;
          continue;
        }
        if (this.abort.signal.aborted) break;
        if (isStoreUnavailable(err)) {
          // A read failed (appends wait the store out themselves): pause, then fold whatever the
          // store holds now and decide again from it.
          this.warnOutage();
          await waitOut(++outage, this.abort.signal);
          if (!(await this.untilStoreAnswers(async () => (await this.catchUp(), true)))) break;
          continue;
        }
        throw err;
      }
      outage = 0;
    }
    return this.state;
  }

  /**
   * The next action. Before a new model call whose conversation has a known context limit and is
   * estimated near it, the provider counts its tokens (remembered per prefix; the estimate stands
   * in when it cannot), and the decision is taken again with the count: it may be a compaction instead.
   */
  private async decide(): Promise<NextAction> {
    const action = nextAction(this.state, this.deps.clock.now(), this.measure);
    if (action.kind !== 'callModel' || action.retry || !this.counter) return action;
    const launched = this.state.launched!;
    const limit = contextLimitOf(modelOfCall(this.state, action.role), launched.contextWindow);
    if (limit === undefined) return action;
    const upcoming = newUserMessage(this.state, { toolResultIds: action.toolResultIds, content: action.content } as unknown as ModelCallStartedData);
    const request = this.countRequest(action.role, [...this.state.conversations[action.role].messages, upcoming]);
    // Counted only near the limit the count is held to (token-count.ts says the rule).
    if (!this.counter.worthAsking(request, limit - (launched.contextWindow?.marginTokens ?? DEFAULT_MARGIN_TOKENS))) return action;
    // The count waits no longer than the run may (the provider's own limit is shorter still).
    const untilDeadline = AbortSignal.timeout(Math.max(0, deadlineOf(this.state) - this.deps.clock.now()));
    const counted = await this.counter.count({ ...request, signal: AbortSignal.any([this.abort.signal, untilDeadline]) });
    return counted === undefined ? action : nextAction(this.state, this.deps.clock.now(), this.measure);
  }

  /** What the role's next request would send, for a token count. */
  private countRequest(role: RoleName, messages: readonly ChatMessage[]): TokenCountRequest {
    const launched = this.state.launched!;
    const phase = this.state.phase!;
    return {
      ...roleRoute(this.deps.model, pinOf(launched)[role].provider).request,
      model: modelOfCall(this.state, role),
      system: phase.system,
      tools: toolsOfCall(this.state, role, this.deps.tools.specsFor(role, phase.tools)),
      messages: messages as ChatMessage[],
      ...(launched.team[role].thinking ? { thinking: launched.team[role].thinking } : {}),
    };
  }

  /** One step: decided in the domain and appended, or performed by its module. */
  private async perform(action: Exclude<NextAction, { kind: 'none' | 'waitForReview' | 'waitForApproval' }>): Promise<void> {
    const at = isoNow(this.deps.clock);
    if (isDecidedStep(action)) {
      const inputs = await this.inputsOf(action, at);
      await this.append(runDecider.decide({ type: 'TakeStep', step: action, inputs }, this.state));
      return;
    }
    switch (action.kind) {
      case 'callModel':
        return this.runTrace.inPhase(this.state.phase, () => takeModelTurn(this.steps, action));
      case 'runTool':
        return this.runTrace.inPhase(this.state.phase, () => dispatchTools(this.steps, action));
      case 'compactContext':
        return this.runTrace.inPhase(this.state.phase, () => compactContext(this.steps, action));
      case 'submit': {
        const call = { runId: this.runId, role: action.role, turn: this.state.usage[action.role].turns, name: action.call.name, callId: action.call.id, input: action.call.input };
        return this.runTrace.inPhase(this.state.phase, () =>
          inToolSpan(call, async () => {
            await submitToolCall(this.steps, action, at);
            return {};
          }).then(() => undefined),
        );
      }
      default: {
        const never: never = action;
        throw new Error(`no step performs ${(never as NextAction).kind}`);
      }
    }
  }

  /** What a decided step's events are built from: the time, ids and, for the review gate, the workspace's digest. */
  private async inputsOf(step: DecidedStep, at: string) {
    const inputs = { runId: this.runId, at, nowMs: Date.parse(at), newId: () => this.deps.ids.newId() };
    if (!needsArtifactHash(step)) return inputs;
    const artifactHash = await workspaceDigest(this.steps.workspace, this.state.work?.summary ?? '');
    // A review's due date counts from when it is opened, after the digest.
    return { ...inputs, artifactHash, nowMs: this.deps.clock.now() };
  }

  /**
   * Runs `work` until the store answers it: a store fault pauses the run (backoff with jitter,
   * bounded), never ends it. Undefined when the driver is stopped meanwhile.
   */
  private async untilStoreAnswers<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await untilStoreAnswers(work, {
        signal: this.abort.signal,
        onFault: (_, attempt) => {
          if (attempt === 1) this.warnOutage();
        },
      });
    } catch (err) {
      if (this.abort.signal.aborted) return undefined;
      throw err;
    }
  }

  private warnOutage(): void {
    this.deps.logger?.warn(`run ${this.runId}: the event store is not reachable; the run waits for it`);
  }

  /**
   * Makes the run's workspace directory what its events say it is (see workspace-log.ts), before
   * anything runs in it. When that cannot be done the run says so (WorkspaceUnrecoverable) and ends
   * failed: it never carries on in an empty directory. A run whose events do not describe its
   * workspace exactly (a file over the cap, calls recorded before file effects were) keeps the
   * directory that is here, if any.
   */
  private async rebuildWorkspace(): Promise<void> {
    if (this.deps.workspaceLog?.enabled === false || this.fenced) return;
    // Before any model call has answered no tool has run (a tool call is part of an answer), so the
    // events describe an empty workspace: known without reading them again (a fresh run's first drive).
    const manifest = totalTurns(this.state) === 0 ? emptyManifest() : workspaceAt(await loadRunHistory(this.deps.store, this.runId));
    const dir = this.steps.workspace;
    // What the events cannot describe exactly is not guessed at: a directory that is here already
    // (a shared volume, a restart) is kept as it is; only an empty one means the run cannot go on.
    if (unrebuildable(manifest).length > 0 && !(await isEmptyDirectory(dir))) {
      this.deps.logger?.warn(`run ${this.runId}: the workspace is not fully recorded in the events; the directory here is used as it is`);
      return;
    }
    const result = await restoreWorkspace(this.deps.store, dir, manifest);
    if (result.ok) {
      if (result.written + result.removed > 0) {
        this.deps.logger?.warn(`run ${this.runId}: workspace rebuilt from its events (${result.written} file(s) written, ${result.removed} removed)`);
      }
      return;
    }
    const at = isoNow(this.deps.clock);
    const message = unrecoverableMessage(result.unrecoverable);
    this.deps.logger?.warn(`run ${this.runId}: ${message}`);
    await this.append([
      { type: 'WorkspaceUnrecoverable', data: { paths: result.unrecoverable.slice(0, 100), owner: this.deps.owner ?? 'local', at } },
      { type: 'RunEnded', data: { status: 'failed', reason: 'ERROR', message, at } },
    ]);
  }

  /** Records that this driver drives the run now, fencing out any previous driver. */
  private async claim(): Promise<void> {
    const owner = this.deps.owner;
    if (!owner) return;
    for (;;) {
      if (this.state.driver === owner) {
        this.claimed = true;
        return;
      }
      if (String(this.state.team.value) === 'ended' || this.state.suspended) return;
      try {
        await this.append(runDecider.decide({ type: 'ClaimDriver', runId: this.state.runId, owner, at: isoNow(this.deps.clock) }, this.state));
        this.claimed = true;
        return;
      } catch (err) {
        // The previous driver wrote meanwhile (its lease expired while it ran): fold it and claim
        // again; its writes end at our claim.
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
        await this.catchUp();
      }
    }
  }

  /**
   * SIGTERM: abort what is in flight, record RunSuspended (status `suspended`), checkpoint. The
   * run resumes on the next start. Returns false when the run had already ended, or waits for a
   * human: a driver stopping at a review or a tool approval when the signal came leaves the run at
   * its gate, where a reviewer may decide it, not suspended.
   */
  async suspend(done: Promise<unknown>): Promise<boolean> {
    this.stop('shutdown');
    // The drive's failure is the supervisor's to report (it reports it where it drives); here only its end matters.
    await done.catch(() => undefined);
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.catchUp();
      if (String(this.state.team.value) === 'ended' || this.state.suspended || this.fenced) return false;
      if (isIdle(nextAction(this.state, this.deps.clock.now()))) return false;
      try {
        await this.append(runDecider.decide({ type: 'SuspendRun', runId: this.state.runId, owner: this.deps.owner ?? 'local', at: isoNow(this.deps.clock) }, this.state));
        await this.saveCheckpoint('shutdown');
        return true;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
      }
    }
    return false;
  }

  // -------------------------------------------------------------------------------------------
  // Writing: appends at the run's revision, deferred results, catching up, checkpoints

  /**
   * Folds events now and commits them with the next append (see the tool dispatch). Until then the
   * fold is ahead of the store by `deferred.length` revisions.
   */
  private defer(events: TeamRunEvent[]): void {
    this.deferred.push(...this.path.toNewEvents(events, this.context()));
    for (const e of events) evolve(this.state, e, { revision: this.state.revision + 1, position: this.state.position });
  }

  /** Who writes: the agent of the current phase, else the system. */
  private context(): CommandContext {
    const role = this.state.phase?.role;
    return { runId: this.runId, correlationId: this.runId, actor: role ? agentIdentity(role, this.runId) : 'system' };
  }

  /** Commits deferred events, if any (before the driver stops or waits). */
  private async flushDeferred(): Promise<void> {
    if (this.deferred.length > 0) await this.append([]);
  }

  /** Appends at the run's current revision and folds what was written. */
  private async append(events: TeamRunEvent[]): Promise<void> {
    if (events.length === 0 && this.deferred.length === 0) return;
    const deferred = this.deferred.splice(0);
    const newEvents = [...deferred, ...this.path.toNewEvents(events, this.context())];
    let result;
    try {
      // Through the command path, waiting out store faults (see CommandPath.append).
      result = await this.path.append(this.stream, newEvents, this.state.revision - deferred.length, {
        signal: this.abort.signal,
        onOutage: () => this.warnOutage(),
      });
    } catch (err) {
      if (err instanceof EventTooLargeError && !deferred.some((d) => d.type === err.eventType)) {
        // Refused before anything was written, for one of this append's own events (a model answer
        // too large to record): the deferred results are still good and go with the next append,
        // which records that failure (the fold stays as it is).
        this.deferred = deferred;
      } else if (deferred.length > 0) {
        // The fold ran ahead of the store with results that were never committed: rebuild it from
        // the store (the uncommitted calls are repeatable and will run again).
        this.state = await loadRunState(this.deps.store, this.runId, this.deps.checkpoints, this.deps.logger);
      }
      throw err;
    }
    const all: TeamRunEvent[] = [...deferred.map((d) => ({ type: d.type, data: d.data }) as TeamRunEvent), ...events];
    // Recorded as plain domain events: typed by the run's union, the intersection with each of its
    // members is costly for the type checker, and `all` is that union already.
    const recorded = this.path.recorded<DomainEvent>(this.stream, all, newEvents, result);
    this.state.position = result.position - events.length;
    // Deferred events are folded already; only this append's own events are new to the fold.
    for (let i = deferred.length; i < recorded.length; i++) evolve(this.state, recorded[i] as unknown as TeamRunEvent, recorded[i]);
    if (this.deps.observer?.onEvents) this.deps.observer.onEvents(this.runId, recorded);
    // Folded and published: let the other runs the same sync acknowledged take their turn.
    await this.deps.fairShare?.turn();
    await this.afterAppend(all);
  }

  /** Checkpoints at phase boundaries, after each step of a hybrid phase, and every N turns. */
  private async afterAppend(appended: TeamRunEvent[]): Promise<void> {
    if (!this.deps.checkpoints) return;
    const every = this.deps.checkpointEveryTurns ?? DEFAULT_CHECKPOINT_EVERY_TURNS;
    const phaseBoundary = appended.some((e) => e.type === 'PhaseStarted' || e.type === 'IterationStarted' || e.type === 'ReviewOpened');
    const hybridStep = this.state.stepLoop?.strategy === 'hybrid' && appended.some((e) => e.type === 'LoopStepCompleted' || e.type === 'LoopStepFailed');
    if (hybridStep && !phaseBoundary) {
      await this.saveCheckpoint('step');
      return;
    }
    // Every N turns — and never more often than a quarter of the turns checkpointed last time: a
    // checkpoint holds the whole state, so spacing them with its size keeps their total cost
    // linear in the run's length, while a resume folds at most a quarter more than it loads.
    const turns = totalTurns(this.state);
    const turnBoundary = turns - this.checkpointTurns >= Math.max(every, Math.floor(this.checkpointTurns / 4));
    if (phaseBoundary || turnBoundary) await this.saveCheckpoint(phaseBoundary ? 'phase' : 'turns');
  }

  private async saveCheckpoint(reason: string): Promise<void> {
    if (!this.deps.checkpoints) return;
    this.checkpointTurns = totalTurns(this.state);
    try {
      await this.deps.checkpoints.save(takeCheckpoint(this.state, reason, new Date(this.deps.clock.now())));
    } catch (err) {
      // A checkpoint is an optimisation: the events are the truth, so a failed save only warns.
      this.deps.logger?.warn(`run ${this.runId}: checkpoint not saved: ${(err as Error).message}`);
    }
  }

  private async catchUp(): Promise<void> {
    if (this.deferred.length > 0) {
      // The fold is ahead of the store with uncommitted results: drop them and fold from the store.
      this.deferred = [];
      this.state = await loadRunState(this.deps.store, this.runId, this.deps.checkpoints, this.deps.logger);
    } else {
      const events = await this.deps.store.readStream(this.stream, { fromRevision: this.state.revision + 1 });
      foldRun(events, this.state);
    }
    // Before our claim is recorded the previous driver is still named: that is not a fence.
    if (this.deps.owner && this.claimed && this.state.driver && this.state.driver !== this.deps.owner) {
      // Another process claimed the run (our lease expired): stop at once, without another write.
      this.fenced = true;
      this.stop('fenced');
    }
  }
}

function totalTurns(state: RunState): number {
  return state.usage.architect.turns + state.usage.executor.turns + state.usage.reviewer.turns;
}

/** Nothing for the driver to do: the run waits for a human, or has ended. */
function isIdle(action: NextAction): action is Extract<NextAction, { kind: 'none' | 'waitForReview' | 'waitForApproval' }> {
  return action.kind === 'none' || action.kind === 'waitForReview' || action.kind === 'waitForApproval';
}

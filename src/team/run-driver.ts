import type { EventStore, NewEvent, RecordedEvent } from '../events/event-store.port';
import { isStoreUnavailable, WrongExpectedRevisionError } from '../events/errors';
import { pause, storeBackoffMs } from '../events/store-retry';
import { CommandPath, type CommandContext } from '../events/command-handling';
import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse, type RoleName, type ToolUseBlock } from './models/model.port';
import { costOf } from './models/pricing';
import { ROLE_PROMPTS } from './prompts';
import { nextAction, type NextAction } from './domain/next-action';
import { agentIdentity, STATUS_OF_REASON, toRunStreamId, type TeamRunEvent } from './domain/run-events';
import { evolve, foldRun, initialRunState, newUserMessage, runStatus, type RunState } from './domain/run-state';
import { ROLE_OF_PHASE } from './domain/roles';
import { charterVersion } from './domain/charter';
import { reviewIdOf } from './domain/review-id';
import { validateSubmission, type ToolRegistry } from './tools/tool-registry';
import { workspaceDigest } from './tools/workspace-digest';
import { takeCheckpoint } from '../checkpoint/checkpoint';
import { loadRunState } from './run-stream';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.port';
import { approvalIdOf } from './approvals/approval-id';
import { breakerAfter, breakerMessage, isTripped } from './resilience/circuit-breaker';
import { renderForSummary, SUMMARY_MAX_OUTPUT_TOKENS, SUMMARY_RESERVE_TOKENS, SUMMARY_SYSTEM_PROMPT, truncatedSummary } from './resilience/context-window';
import { DEFAULT_RETRY_POLICY, maxAttemptsOf, requiresApproval, retryDelayMs, type RetryPolicy } from './resilience/policies';
import { executionSegments, runSegments, type DispatchMode } from './resilience/tool-dispatch';
import type { ToolDefinition, ToolOutcome } from './tools/tool.port';
import type { ModelCallFailedData, ToolApprovalDecidedData } from './domain/run-events';
import type { FairShare } from './fair-share';
import { encodeMachineText } from '../shared/text';
import type { Clock, Ids } from '../shared/ports';


export { DEFAULT_RETRY_POLICY };
export type { RetryPolicy };

/** What the driver publishes as it goes: recorded events and live text that is not stored. */
export interface RunObserver {
  onEvents?(runId: string, events: RecordedEvent[]): void;
  onTextDelta?(runId: string, role: RoleName, turn: number, text: string): void;
}

export interface RunDriverDeps {
  /**
   * This driver's identity for fencing. When set, the driver records DriverClaimed before it acts,
   * and stops as soon as it sees another owner's claim.
   */
  owner?: string;
  /** Checkpoints: resume from the latest valid one, and take new ones at phase boundaries and every N turns. */
  checkpoints?: CheckpointStore;
  checkpointEveryTurns?: number;
  logger?: { warn(message: string): void };
  store: EventStore;
  /** The one path events are written by (built on `store` when not given). */
  path?: CommandPath;
  model: ModelProvider;
  tools: ToolRegistry;
  clock: Clock;
  ids: Ids;
  /** Directory holding one workspace per run. */
  workspaceRoot: string;
  /** Retries when the run's RunLaunched records no policy of its own. */
  retry?: RetryPolicy;
  /** `three-pass` (default): read-only tool calls of a turn run concurrently; `serial`: one after another. */
  toolDispatch?: DispatchMode;
  observer?: RunObserver;
  /** Max output tokens per model call. */
  maxOutputTokens?: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Commit repeatable tools' results with the next model call (default) or at once (false). */
  deferRepeatableToolResults?: boolean;
  /** Time-slicing shared with the other drivers of this process (the supervisor's: `processFairShare`). */
  fairShare?: FairShare;
}

// A checkpoint holds the whole folded state, so its cost grows with the conversation: every 100
// turns keeps that under a tenth of a millisecond per turn while a resume folds at most 100 turns.
export const DEFAULT_CHECKPOINT_EVERY_TURNS = 100;

function totalTurns(state: RunState): number {
  return state.usage.architect.turns + state.usage.executor.turns + state.usage.reviewer.turns;
}

/** A tool call in one turn's dispatch: what preflight decided, then what happened. */
interface PlannedCall {
  call: ToolUseBlock;
  /** Set when the call runs. */
  tool?: ToolDefinition;
  /** ToolCallRequested still to be recorded. */
  record: boolean;
  /** Set by preflight (refused, rejected, unknown outcome) or by running the tool. */
  outcome?: ToolOutcome;
  outcomeUnknown?: boolean;
  durationMs?: number;
}

export function rejectionMessage(decision: ToolApprovalDecidedData): string {
  return decision.deciderKind === 'human'
    ? `rejected by user: ${decision.reason}`
    : `rejected: no human approved this call in time (timeout policy ${decision.policy ?? 'auto_deny'}): ${decision.reason}`;
}

export const UNKNOWN_OUTCOME_MESSAGE =
  'The outcome of this tool call is unknown: the run was interrupted while it ran, and the tool is not safe to repeat. Inspect the workspace before trying again.';

/**
 * Drives one run: folds its events, asks the domain for the next action, performs it and appends
 * what happened with the run's expected revision. The driver holds no state of its own beyond the
 * fold, so a driver started on the same events (after a crash, on another process) continues
 * exactly where the last one stopped.
 */
export class RunDriver {
  private state: RunState = initialRunState();
  private readonly stream: string;
  private readonly abort = new AbortController();
  private callAbort?: AbortController;
  private readonly retry: RetryPolicy;

  constructor(
    readonly runId: string,
    private readonly deps: RunDriverDeps,
  ) {
    this.stream = toRunStreamId(runId);
    this.retry = deps.retry ?? DEFAULT_RETRY_POLICY;
    this.path = deps.path ?? new CommandPath(deps.store, deps.owner ?? 'local', deps.ids, deps.clock);
  }

  private readonly path: CommandPath;

  get snapshot(): RunState {
    return this.state;
  }

  /** Stops driving: aborts the model call or tool in flight. Used by cancel and shutdown. */
  stop(reason = 'stopped'): void {
    this.abort.abort(new Error(reason));
    this.callAbort?.abort(new Error(reason));
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Why the driver stopped driving, when something else than the run's own course stopped it. */
  fenced = false;

  /** Set once this driver holds the run's claim: only from then on does another owner's claim fence it. */
  private claimed = false;
  /** Events folded but not yet committed (results of repeatable tools; see `defer`). */
  private deferred: NewEvent[] = [];

  /** Drives the run until it ends, waits for a human, or the driver is stopped. */
  async drive(): Promise<RunState> {
    await this.deps.fairShare?.turn();
    const loaded = await this.untilStoreAnswers(() => loadRunState(this.deps.store, this.runId, this.deps.checkpoints, this.deps.logger));
    if (!loaded) return this.state;
    this.state = loaded;
    if (!this.state.launched) throw new Error(`run ${this.runId} does not exist`);
    // Stopped while waiting for its turn (cancel, shutdown, lost lease): no claim.
    if (this.abort.signal.aborted) return this.state;
    // Nothing to do (the run waits for a human, or has ended: another process may have got here
    // first, on a read model behind the store): no claim, so the run does not change hands.
    const first = nextAction(this.state, this.deps.clock.now()).kind;
    if (first === 'none' || first === 'waitForReview' || first === 'waitForApproval') return this.state;
    if (!(await this.untilStoreAnswers(async () => (await this.claim(), true)))) return this.state;
    let outage = 0;
    while (!this.abort.signal.aborted) {
      const action = nextAction(this.state, this.deps.clock.now());
      try {
        if (action.kind === 'none' || action.kind === 'waitForReview' || action.kind === 'waitForApproval') {
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
          this.deps.logger?.warn(`run ${this.runId}: the event store is not reachable; the run waits for it`);
          await pause(storeBackoffMs(++outage), this.abort.signal);
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
   * Runs `work` until the store answers it: a store fault pauses the run (backoff with jitter,
   * bounded), never ends it. Undefined when the driver is stopped meanwhile.
   */
  private async untilStoreAnswers<T>(work: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (!isStoreUnavailable(err) || this.abort.signal.aborted) {
          if (this.abort.signal.aborted) return undefined;
          throw err;
        }
        if (attempt === 1) this.deps.logger?.warn(`run ${this.runId}: the event store is not reachable; the run waits for it`);
        await pause(storeBackoffMs(attempt), this.abort.signal);
        if (this.abort.signal.aborted) return undefined;
      }
    }
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
        await this.append([{ type: 'DriverClaimed', data: { owner, at: new Date(this.deps.clock.now()).toISOString() } }]);
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
   * run resumes on the next start. Returns false when the run had already ended.
   */
  async suspend(done: Promise<unknown>): Promise<boolean> {
    this.stop('shutdown');
    await done.catch(() => undefined);
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.catchUp();
      if (String(this.state.team.value) === 'ended' || this.state.suspended || this.fenced) return false;
      try {
        await this.append([{ type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner: this.deps.owner ?? 'local', at: new Date(this.deps.clock.now()).toISOString() } }]);
        await this.saveCheckpoint('shutdown');
        return true;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
      }
    }
    return false;
  }

  /** Model turns folded into the last checkpoint this driver took (or loaded from). */
  private checkpointTurns = 0;

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

  private async perform(action: NextAction): Promise<void> {
    const s = this.state;
    const at = new Date(this.deps.clock.now()).toISOString();
    switch (action.kind) {
      case 'startPhase': {
        const role = action.role;
        const cfg = s.launched!.team[role];
        await this.append([
          {
            type: 'PhaseStarted',
            data: {
              phase: action.phase,
              role,
              iteration: s.team.context.iteration,
              agent: agentIdentity(role, this.runId),
              system: cfg.systemPrompt ?? ROLE_PROMPTS[role],
              tools: cfg.tools,
              maxTurns: cfg.maxTurns,
              at,
            },
          },
        ]);
        return;
      }
      case 'startIteration':
        await this.append([
          { type: 'IterationStarted', data: { iteration: action.iteration, reason: 'changes_requested', findings: action.findings, at } },
        ]);
        return;
      case 'callModel':
        return this.callModel(action);
      case 'runTool':
        return this.dispatchTools(action);
      case 'warnStagnation': {
        const d = action.detection;
        await this.append([
          {
            type: 'StagnationWarned',
            data: {
              role: action.role,
              turn: action.turn,
              signal: d.signal,
              ...(d.signal === 'repetition' ? { ratio: d.ratio } : { cycleLength: d.cycleLength }),
              fingerprints: d.signal === 'repetition' ? d.repeated.map((r) => r.fingerprint) : [...new Set(d.cycle.flatMap((t) => t.split(' + ')))],
              message: action.message,
              at,
            },
          },
        ]);
        return;
      }
      case 'compactContext':
        return this.compactContext(action);
      case 'submit':
        return this.submit(action.role, action.call);
      case 'submitAnswer':
        await this.append([this.submissionEvent(action.role, '', action.role === 'architect' ? { plan: action.text } : { summary: action.text }, at)]);
        return;
      case 'openReview': {
        const launched = s.launched!;
        const artifactHash = await workspaceDigest(this.workspace(), s.work?.summary ?? '');
        const timeout = launched.reviewPolicy.timeout;
        await this.append([
          {
            type: 'ReviewOpened',
            data: {
              reviewId: reviewIdOf(this.runId, s.team.context.iteration),
              iteration: s.team.context.iteration,
              executor: agentIdentity('executor', this.runId),
              artifactHash,
              charterVersion: charterVersion(launched.team.executor.systemPrompt ?? ROLE_PROMPTS.executor, launched.team.executor),
              ...(timeout.policy !== 'wait'
                ? { timeout: { policy: timeout.policy, dueAt: new Date(this.deps.clock.now() + (timeout.afterMs ?? 0)).toISOString() } }
                : {}),
              at,
            },
          },
        ]);
        return;
      }
      case 'waiveGate': {
        const launched = s.launched!;
        const iteration = s.team.context.iteration;
        await this.append([
          {
            type: 'ReviewDecided',
            data: {
              decisionId: this.deps.ids.newId(),
              reviewId: reviewIdOf(this.runId, iteration),
              iteration,
              outcome: 'waived',
              reason: 'the team config waives the human review gate; the reviewer agent approved',
              executor: agentIdentity('executor', this.runId),
              decider: 'system',
              deciderKind: 'system',
              acceptanceCriteria: launched.acceptanceCriteria,
              artifactHash: await workspaceDigest(this.workspace(), s.work?.summary ?? ''),
              charterVersion: charterVersion(launched.team.executor.systemPrompt ?? ROLE_PROMPTS.executor, launched.team.executor),
              at,
            },
          },
        ]);
        return;
      }
      case 'end': {
        const events: TeamRunEvent[] = [];
        if (action.budget) {
          events.push({ type: 'BudgetExceeded', data: { scope: action.budget.scope, usedTokens: action.budget.used, limitTokens: action.budget.limit, at } });
        }
        events.push({ type: 'RunEnded', data: { status: STATUS_OF_REASON[action.reason], reason: action.reason, message: action.message, at } });
        await this.append(events);
        return;
      }
      case 'none':
      case 'waitForReview':
      case 'waitForApproval':
        return;
    }
  }

  private async callModel(action: Extract<NextAction, { kind: 'callModel' }>): Promise<void> {
    const role = action.role;
    const launched = this.state.launched!;
    const model = launched.team[role].model;
    // A new call's start is recorded together with its outcome: if the process dies during the
    // call nothing is recorded and the same decision is taken again on resume.
    const pending: TeamRunEvent[] = [];
    let callId = this.state.conversations[role].openCallId;
    if (!action.retry) {
      callId = this.deps.ids.newId();
      pending.push({
        type: 'ModelCallStarted',
        data: {
          role,
          turn: action.turn,
          callId,
          model,
          toolResultIds: action.toolResultIds,
          content: action.content,
          at: new Date(this.deps.clock.now()).toISOString(),
        },
      });
    }
    const history = this.state.conversations[role].messages;
    const messages =
      pending.length > 0 && pending[0].type === 'ModelCallStarted' ? [...history, newUserMessage(this.state, pending[0].data)] : history;
    let attempt = this.state.failedAttempts;
    for (;;) {
      attempt += 1;
      const started = this.deps.clock.now();
      this.callAbort = new AbortController();
      const stopOnRunAbort = () => this.callAbort?.abort();
      this.abort.signal.addEventListener('abort', stopOnRunAbort, { once: true });
      const deadline = Date.parse(launched.launchedAt) + launched.timeoutMs;
      const timer = setTimeout(() => this.callAbort?.abort(new Error('timeout')), Math.max(0, deadline - this.deps.clock.now()));
      let response: ModelResponse;
      try {
        response = await this.deps.model.complete({
          runId: this.runId,
          role,
          model,
          system: this.state.phase!.system,
          messages,
          tools: this.deps.tools.specsFor(role, this.state.phase!.tools),
          maxTokens: this.deps.maxOutputTokens ?? 8192,
          signal: this.callAbort.signal,
          onTextDelta: (text) => this.deps.observer?.onTextDelta?.(this.runId, role, action.turn, text),
        });
      } catch (err) {
        const error =
          err instanceof ModelError ? err : new ModelError('server', `model provider failed: ${(err as Error)?.message ?? String(err)}`);
        if (this.abort.signal.aborted) return;
        // The run's timeout aborted the call: the next decision ends the run TIMEOUT.
        if (this.deps.clock.now() >= deadline) return;
        const retry = this.retryPolicy();
        const failure: ModelCallFailedData = {
          role,
          turn: action.turn,
          callId: callId!,
          attempt,
          kind: error.kind,
          message: error.message,
          ...(error.details.status !== undefined ? { status: error.details.status } : {}),
        };
        const endedAt = () => new Date(this.deps.clock.now()).toISOString();
        // The same error three times in a row: stop retrying whatever attempts are left.
        const breaker = breakerAfter(this.state.resilience.breaker, failure);
        if (isTripped(breaker)) {
          await this.append([
            ...pending,
            { type: 'ModelCallFailed', data: failure },
            { type: 'RunEnded', data: { status: 'failed', reason: 'ERROR', message: breakerMessage(breaker), at: endedAt() } },
          ]);
          return;
        }
        const attemptsLeft = attempt < maxAttemptsOf(retry);
        if (error.kind === 'context_too_long' && attemptsLeft) {
          // The next action compacts the conversation (ContextCompacted), then makes this call again.
          await this.append([...pending, { type: 'ModelCallFailed', data: { ...failure, compactBeforeRetry: true } }]);
          return;
        }
        if (!(error.transient && attemptsLeft)) {
          const reason = `model call failed (${error.kind}) after ${attempt} attempt(s): ${error.message}`;
          await this.append([
            ...pending,
            { type: 'ModelCallFailed', data: failure },
            { type: 'RunEnded', data: { status: 'failed', reason: 'ERROR', message: reason, at: endedAt() } },
          ]);
          return;
        }
        const retryInMs = retryDelayMs(retry, attempt, error.details.retryAfterMs)!;
        await this.append([...pending.splice(0), { type: 'ModelCallFailed', data: { ...failure, retryInMs } }]);
        // A wait past the run's deadline ends with it: the next decision ends the run TIMEOUT.
        await (this.deps.sleep ?? pause)(Math.min(retryInMs, Math.max(0, deadline - this.deps.clock.now())), this.abort.signal);
        if (this.abort.signal.aborted) return;
        continue;
      } finally {
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', stopOnRunAbort);
      }
      const durationMs = this.deps.clock.now() - started;
      // Recorded even if the driver is stopped meanwhile: a recorded response is never asked for again.
      await this.deps.fairShare?.turn();
      await this.append([
        ...pending,
        {
          type: 'ModelCallCompleted',
          data: {
            role,
            turn: action.turn,
            callId: callId!,
            model: response.model,
            content: response.content,
            stopReason: response.stopReason,
            usage: response.usage,
            costUsd: costOf(response.model, response.usage),
            durationMs,
          },
        },
      ]);
      return;
    }
  }

  /** The run's own retry policy (recorded at launch), else the driver's. */
  private retryPolicy(): RetryPolicy {
    return this.state.launched?.retry ?? this.retry;
  }

  /**
   * Runs `work` with a signal aborted when the driver stops (cancel, shutdown, fencing) or the run's
   * timeout passes; `stop()` aborts it too. Resolves once `work` has settled.
   */
  private async underRunSignal<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const launched = this.state.launched!;
    const controller = new AbortController();
    this.callAbort = controller;
    const onStop = () => controller.abort(this.abort.signal.reason);
    if (this.abort.signal.aborted) controller.abort(this.abort.signal.reason);
    else this.abort.signal.addEventListener('abort', onStop, { once: true });
    const deadline = Date.parse(launched.launchedAt) + launched.timeoutMs;
    // One millisecond late rather than early, so the next decision sees the deadline passed.
    const timer = setTimeout(() => controller.abort(new Error('timeout')), Math.max(0, deadline - this.deps.clock.now()) + 1);
    try {
      return await work(controller.signal);
    } finally {
      clearTimeout(timer);
      this.abort.signal.removeEventListener('abort', onStop);
    }
  }

  /**
   * Archives older messages of a role's conversation into a summary written by the summary model
   * (or, when that fails, each message cut to 150 characters) and records it: ContextCompacted.
   */
  private async compactContext(action: Extract<NextAction, { kind: 'compactContext' }>): Promise<void> {
    const { role, plan } = action;
    const archived = this.state.conversations[role].messages.slice(plan.fromIndex, plan.toIndex);
    const request: Omit<ModelRequest, 'signal'> = {
      runId: this.runId,
      role,
      model: action.summaryModel,
      system: SUMMARY_SYSTEM_PROMPT,
      messages: [{ role: 'user', content: `Conversation to summarise (${archived.length} messages):\n\n${renderForSummary(archived)}` }],
      tools: [],
      maxTokens: SUMMARY_MAX_OUTPUT_TOKENS,
      purpose: 'summary',
    };
    const outcome = await this.underRunSignal(async (signal) => {
      try {
        const response = await this.deps.model.complete({ ...request, signal });
        const text = response.content
          .filter((b) => b.type === 'text')
          .map((b) => (b as { text: string }).text)
          .join('\n')
          .trim();
        if (text === '') return { ok: false as const, error: 'the summary model returned no text' };
        return { ok: true as const, text, response };
      } catch (err) {
        return { ok: false as const, error: (err as Error)?.message ?? String(err) };
      }
    });
    if (this.abort.signal.aborted) return;
    const launched = this.state.launched!;
    if (this.deps.clock.now() >= Date.parse(launched.launchedAt) + launched.timeoutMs) return;
    const summary = outcome.ok ? outcome.text : truncatedSummary(archived);
    const summaryTokens = Math.ceil(summary.length / 4);
    await this.append([
      {
        type: 'ContextCompacted',
        data: {
          role,
          turn: action.turn,
          fromIndex: plan.fromIndex,
          toIndex: plan.toIndex,
          summary,
          method: outcome.ok ? 'model' : 'truncate',
          reason: action.reason,
          ...(outcome.ok
            ? { model: outcome.response.model, usage: outcome.response.usage, costUsd: costOf(outcome.response.model, outcome.response.usage) }
            : { error: outcome.error }),
          tokensBefore: plan.tokensBefore,
          tokensAfter: plan.tokensAfter - SUMMARY_RESERVE_TOKENS + summaryTokens,
          budgetTokens: action.budgetTokens,
          at: new Date(this.deps.clock.now()).toISOString(),
        },
      },
    ]);
  }

  /**
   * One turn's tool calls in three passes: preflight (serial, in the model's order: the registry's
   * checks, the approval gate), execute (read-only calls concurrently, others one by one; a call
   * that is not safe to repeat has its start recorded before it runs), commit (the results in the
   * model's order, in one append, whatever order they finished in).
   */
  private async dispatchTools(action: Extract<NextAction, { kind: 'runTool' }>): Promise<void> {
    const role = action.role;
    const s = this.state;
    const turn = s.loop!.context.turn;
    const allowed = s.phase!.tools;
    const policy = s.launched!.toolApproval;
    const nowIso = () => new Date(this.deps.clock.now()).toISOString();
    const context = (signal: AbortSignal) => ({ runId: this.runId, role, workspace: this.workspace(), signal });

    // Pass 1 — preflight.
    const planned: PlannedCall[] = [];
    const approvals: TeamRunEvent[] = [];
    for (const { call, alreadyStarted } of action.batch) {
      const tool = this.deps.tools.get(call.name);
      if (alreadyStarted) {
        // Started before a crash: repeat it only if that is safe; otherwise its outcome is unknown.
        if (tool?.idempotent) planned.push({ call, tool, record: false });
        else planned.push({ call, record: false, outcome: { output: UNKNOWN_OUTCOME_MESSAGE, isError: true }, outcomeUnknown: true });
        continue;
      }
      if (!tool || !allowed.includes(call.name) || this.deps.tools.validate(call.name, call.input) !== undefined) {
        // Not available to the role or invalid input: the registry says why, without running anything.
        planned.push({ call, record: true, outcome: await this.deps.tools.invoke(call, role, allowed, context(new AbortController().signal)) });
        continue;
      }
      if (requiresApproval(tool.risk, policy)) {
        const approval = s.approvals.get(call.id);
        if (!approval) {
          const timeout = policy!.timeout;
          approvals.push({
            type: 'ToolApprovalRequested',
            data: {
              approvalId: approvalIdOf(this.runId, call.id),
              role,
              turn,
              toolUseId: call.id,
              name: call.name,
              input: call.input,
              risk: tool.risk,
              threshold: policy!.threshold,
              ...(timeout.policy !== 'wait'
                ? { timeout: { policy: timeout.policy, dueAt: new Date(this.deps.clock.now() + (timeout.afterMs ?? 0)).toISOString() } }
                : {}),
              at: nowIso(),
            },
          });
          continue;
        }
        if (!approval.decided) return; // still waiting (the fold says so too)
        if (approval.decided.outcome === 'rejected') {
          planned.push({ call, record: false, outcome: { output: rejectionMessage(approval.decided), isError: true } });
          continue;
        }
      }
      planned.push({ call, tool, record: true });
    }
    // The whole batch waits until every approval it needs is decided.
    if (approvals.length > 0) {
      await this.append(approvals);
      return;
    }

    // Pass 2 — execute.
    const toRun = planned.filter((p) => p.tool && !p.outcome);
    const segments = executionSegments(toRun, (p) => p.tool!.readOnly, this.deps.toolDispatch);
    const stopped = await this.underRunSignal(async (signal) => {
      await runSegments(
        segments,
        async (p) => {
          const started = this.deps.clock.now();
          try {
            p.outcome = await this.deps.tools.invoke(p.call, role, allowed, context(signal));
          } catch (err) {
            p.outcome = { isError: true, output: `tool ${p.call.name} failed: ${encodeMachineText(String((err as Error).message))}` };
          }
          p.durationMs = this.deps.clock.now() - started;
        },
        {
          stopped: () => signal.aborted,
          beforeSegment: async (segment) => {
            // A tool that is not safe to repeat has its start recorded before it runs, so a crash
            // during it is known; a repeatable one is recorded with its result.
            const durable = segment.filter((p) => p.record && !p.tool!.idempotent);
            if (durable.length === 0) return;
            await this.append(durable.map((p) => this.toolRequested(role, turn, p.call)));
            for (const p of durable) p.record = false;
          },
        },
      );
      return signal.aborted;
    });
    // Cancelled, shut down or timed out: nothing is committed; the next decision ends the run.
    if (stopped || this.abort.signal.aborted) return;

    // Pass 3 — commit, in the model's order.
    const events: TeamRunEvent[] = [];
    for (const p of planned) {
      if (p.record) events.push(this.toolRequested(role, turn, p.call));
      events.push({
        type: 'ToolCallCompleted',
        data: {
          role,
          turn,
          toolUseId: p.call.id,
          name: p.call.name,
          output: p.outcome!.output,
          isError: p.outcome!.isError,
          durationMs: p.durationMs ?? 0,
          ...(p.outcomeUnknown ? { outcomeUnknown: true } : {}),
        },
      });
    }
    // Results of tools that are safe to repeat are committed together with the next model call's
    // events: one fsync per turn instead of two. If the process dies before that commit, the same
    // calls run again on resume — which is exactly what "safe to repeat" allows.
    const repeatable = planned.every((p) => p.tool?.idempotent === true && !p.outcomeUnknown);
    if (repeatable && this.deps.deferRepeatableToolResults !== false) this.defer(events);
    else await this.append(events);
  }

  private toolRequested(role: RoleName, turn: number, call: ToolUseBlock): TeamRunEvent {
    return { type: 'ToolCallRequested', data: { role, turn, toolUseId: call.id, name: call.name, input: call.input, at: new Date(this.deps.clock.now()).toISOString() } };
  }

  private async submit(role: RoleName, call: ToolUseBlock): Promise<void> {
    const turn = this.state.loop!.context.turn;
    const at = new Date(this.deps.clock.now()).toISOString();
    const result = validateSubmission(role, call.input);
    const completed = (output: string, isError: boolean): TeamRunEvent => ({
      type: 'ToolCallCompleted',
      data: { role, turn, toolUseId: call.id, name: call.name, output, isError, durationMs: 0 },
    });
    if (!result.ok) {
      await this.append([completed(`invalid submission: ${result.error}`, true)]);
      return;
    }
    await this.append([completed('Submitted.', false), this.submissionEvent(role, call.id, result.submission as unknown as Record<string, unknown>, at)]);
  }

  private submissionEvent(role: RoleName, toolUseId: string, input: Record<string, unknown>, at: string): TeamRunEvent {
    const iteration = this.state.team.context.iteration;
    switch (role) {
      case 'architect':
        return { type: 'PlanSubmitted', data: { toolUseId, plan: String(input.plan ?? ''), steps: (input.steps as string[]) ?? [], at } };
      case 'executor':
        return { type: 'WorkSubmitted', data: { toolUseId, iteration, summary: String(input.summary ?? ''), files: (input.files as string[]) ?? [], at } };
      case 'reviewer':
        return {
          type: 'VerdictSubmitted',
          data: {
            toolUseId,
            iteration,
            verdict: input.verdict as 'APPROVE' | 'REQUEST_CHANGES' | 'BLOCK',
            findings: (input.findings as string[]) ?? [],
            summary: String(input.summary ?? ''),
            at,
          },
        };
    }
  }

  private workspace(): string {
    return `${this.deps.workspaceRoot}/${this.runId}`;
  }

  /**
   * Folds events now and commits them with the next append (see the tool pass). Until then the
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
      result = await this.appendDurably(newEvents, this.state.revision - deferred.length);
    } catch (err) {
      if (deferred.length > 0) {
        // The fold ran ahead of the store with results that were never committed: rebuild it from
        // the store (the uncommitted calls are repeatable and will run again).
        this.state = await loadRunState(this.deps.store, this.runId, this.deps.checkpoints, this.deps.logger);
      }
      throw err;
    }
    const all: TeamRunEvent[] = [...deferred.map((d) => ({ type: d.type, data: d.data }) as TeamRunEvent), ...events];
    const recorded = this.path.recorded(this.stream, all, newEvents, result);
    this.state.position = result.position - events.length;
    // Deferred events are folded already; only this append's own events are new to the fold.
    for (let i = deferred.length; i < recorded.length; i++) evolve(this.state, recorded[i], recorded[i]);
    if (this.deps.observer?.onEvents) this.deps.observer.onEvents(this.runId, recorded);
    // Folded and published: let the other runs the same sync acknowledged take their turn.
    await this.deps.fairShare?.turn();
    if (this.deps.checkpoints) {
      const every = this.deps.checkpointEveryTurns ?? DEFAULT_CHECKPOINT_EVERY_TURNS;
      const phaseBoundary = all.some((e) => e.type === 'PhaseStarted' || e.type === 'IterationStarted' || e.type === 'ReviewOpened');
      // Every N turns — and never more often than a quarter of the turns checkpointed last time: a
      // checkpoint holds the whole state, so spacing them with its size keeps their total cost
      // linear in the run's length, while a resume folds at most a quarter more than it loads.
      const turns = totalTurns(this.state);
      const turnBoundary = turns - this.checkpointTurns >= Math.max(every, Math.floor(this.checkpointTurns / 4));
      if (phaseBoundary || turnBoundary) await this.saveCheckpoint(phaseBoundary ? 'phase' : 'turns');
    }
  }

  /** Appends through the command path, waiting out store faults (see CommandPath.append). */
  private appendDurably(events: NewEvent[], expectedRevision: number) {
    return this.path.append(this.stream, events, expectedRevision, {
      signal: this.abort.signal,
      onOutage: () => this.deps.logger?.warn(`run ${this.runId}: the event store is not reachable; the run waits for it`),
    });
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

  status() {
    return runStatus(this.state);
  }
}

export { ROLE_OF_PHASE, loadRunState };

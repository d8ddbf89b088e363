import type { Identity } from '../auth/identity';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.port';
import type { CommandPath } from '../events/command-handling';
import { ConflictError, InvalidRequestError } from '../shared/errors';
import type { Clock } from '../shared/ports';
import { isWellFormedText } from '../shared/text';
import { carriesCredentials, endpointOf, pinOf, repinned, type PinChange, type RunPin } from '../team/domain/model-pin';
import { runDecider } from '../team/domain/run-decider';
import { ROLES } from '../team/domain/roles';
import type { RunLeases } from '../team/leases/run-leases.port';
import { catalogueOf } from '../team/models/model-provider.factory';
import type { RoleName } from '../team/models/model.port';
import { runContext, runStream } from '../team/runs/run-stream';

/** The run's lease is another live process's: it drives the run (409; the CLI waits for it instead). */
export class DrivenElsewhereError extends ConflictError {
  override name = 'DrivenElsewhereError';
  constructor(runId: string) {
    super(`run ${runId} is being driven by another process`);
  }
}

/** A re-pin that cannot be accepted as given (400): nothing is written. */
export class InvalidRepinError extends InvalidRequestError {
  override name = 'InvalidRepinError';
}

/** What resuming a run needs of the serving process's drivers (DriverPool). */
export interface ResumingSupervisor {
  readonly owner: string;
  isDriving(runId: string): boolean;
  /** Drives the run here, over the cap (a human asked); resolves once its lease is decided. */
  wake(runId: string, why: 'resume'): Promise<{ driving: boolean }>;
  /** What a run pinned to `pin` waits for when this process's model is not its pin. */
  pinWait(pin: RunPin): string | undefined;
}

export interface ResumeDeps {
  path: CommandPath;
  checkpoints: CheckpointStore;
  leases: RunLeases;
  clock: Clock;
  supervisor: ResumingSupervisor;
}

export interface ResumeResult {
  runId: string;
  /** `running`: this process drives it; `waiting`: its pin is another process's, which will (`waitingFor`). */
  status: 'running' | 'waiting';
  driver?: string;
  waitingFor?: string;
  /** The pin before and after, when this resume re-pinned the run. */
  repinned?: { from: RunPin; to: RunPin };
}

const MAX_MODEL_NAME = 200;

/**
 * An operator's re-pin from a request body or the CLI's options: `models` (role → model) and
 * `endpoint` (a base URL: only its scheme, host and port are kept; `offline:` for the offline
 * model). Undefined when neither is given (a plain resume). Throws InvalidRepinError.
 */
export function parsePinChange(raw: { models?: unknown; endpoint?: unknown }): PinChange | undefined {
  const change: PinChange = {};
  if (raw.models !== undefined) {
    if (typeof raw.models !== 'object' || raw.models === null || Array.isArray(raw.models)) throw new InvalidRepinError('models must be an object of role → model');
    const models: Partial<Record<RoleName, string>> = {};
    for (const [role, model] of Object.entries(raw.models)) {
      if (!(ROLES as readonly string[]).includes(role)) throw new InvalidRepinError(`models.${role}: unknown role; the roles are ${ROLES.join(', ')}`);
      if (typeof model !== 'string' || model.trim() === '' || model.length > MAX_MODEL_NAME || !isWellFormedText(model)) {
        throw new InvalidRepinError(`models.${role} must be a model name (1 to ${MAX_MODEL_NAME} characters)`);
      }
      models[role as RoleName] = model.trim();
    }
    if (Object.keys(models).length > 0) change.models = models;
  }
  if (raw.endpoint !== undefined) {
    if (typeof raw.endpoint !== 'string' || raw.endpoint.length > 2000 || !isWellFormedText(raw.endpoint)) throw new InvalidRepinError('endpoint must be a base URL such as https://api.anthropic.com, or offline:');
    const endpoint = endpointOf(raw.endpoint);
    if (endpoint === undefined) throw new InvalidRepinError('endpoint is not an http(s) base URL nor a provider name such as offline:');
    // A key in a URL would be recorded in the run's events: refused, not stripped silently.
    if (carriesCredentials(raw.endpoint.trim())) throw new InvalidRepinError('endpoint must not carry credentials (the key is the server configuration\'s)');
    change.endpoint = endpoint;
  }
  return change.models || change.endpoint ? change : undefined;
}

/** Refuses a re-pin whose models the new pin's provider does not serve (the offline model never stands in for another). */
function checkServed(runId: string, from: RunPin, change: PinChange): void {
  const to = repinned(from, change);
  for (const role of ROLES) {
    const catalogue = catalogueOf(to[role].provider);
    if (catalogue && !catalogue.serves(to[role].model)) {
      throw new InvalidRepinError(`run ${runId}: the ${role}'s model '${to[role].model}' is not served by provider ${to[role].provider}, which serves ${catalogue.accepts}; name one with models.${role}`);
    }
  }
}

/**
 * Resumes a suspended or crashed run: records RunResumed when it was suspended, and RunRepinned
 * first when an operator re-pins it (`repin`). A process whose model matches the run's pin then
 * drives it: this one when it matches (the CLI drives it in the foreground), else a serving
 * process's dispatcher (RunRepinned and RunResumed wake them) or recovery. The run's events decide:
 * a run that has ended, waits for a human review or has just been suspended is a conflict even
 * while this process's driver is still winding it down.
 */
export async function resumeRun({ path, checkpoints, leases, clock, supervisor }: ResumeDeps, runId: string, by: Identity, repin?: PinChange): Promise<ResumeResult> {
  const model = runStream(path.store, runId, checkpoints);
  if (supervisor.isDriving(runId)) {
    // Its model is not changed under a driver in the middle of a turn.
    if (repin) throw new ConflictError(`run ${runId} is being driven by this process; re-pin it once it waits for a human or is suspended`);
    // A suspension this driver has recorded while it still winds down (a shutdown): recording the
    // resumption now would be lost on a driver that is stopping; the caller asks again once it has.
    const resumption = runDecider.decide({ type: 'ResumeRun', runId, by: by.id, at: '' }, await model.load());
    if (resumption.length > 0) throw new ConflictError(`run ${runId} is being suspended by this process; resume it once it has stopped`);
    return { runId, status: 'running', driver: supervisor.owner };
  }
  const holder = await leases.holder(runId, clock.now());
  if (holder && holder !== supervisor.owner) {
    runDecider.decide({ type: 'ResumeRun', runId, by: by.id, at: '' }, await model.load());
    throw new DrivenElsewhereError(runId);
  }
  const at = new Date(clock.now()).toISOString();
  const { state, events } = await path.handle(
    model,
    (state) => {
      if (repin && state.launched) checkServed(runId, pinOf(state.launched), repin);
      return runDecider.decide({ type: 'ResumeRun', runId, by: by.id, at, ...(repin ? { repin } : {}) }, state);
    },
    runContext(runId, by.id),
    { maxAttempts: 1 },
  );
  const change = events.find((e) => e.type === 'RunRepinned');
  const repinnedPins = change?.type === 'RunRepinned' ? { repinned: { from: change.data.from, to: change.data.to } } : {};
  // Pinned to another provider or endpoint than this process's: left to one that matches.
  const waitingFor = supervisor.pinWait(pinOf(state.launched!));
  if (waitingFor) return { runId, status: 'waiting', waitingFor, ...repinnedPins };
  // This process takes the run when it can: a suspended run's RunResumed wakes the dispatchers
  // too, a crashed run's (nothing recorded) is otherwise recovery's once its lease expires.
  const { driving } = await supervisor.wake(runId, 'resume');
  if (!driving) throw new DrivenElsewhereError(runId);
  return { runId, status: 'running', driver: supervisor.owner, ...repinnedPins };
}

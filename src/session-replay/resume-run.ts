import type { Identity } from '../auth/identity';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.port';
import type { CommandPath } from '../events/command-handling';
import { ConflictError } from '../shared/errors';
import type { Clock } from '../shared/ports';
import { decideRun } from '../team/domain/run-decider';
import type { RunLeases } from '../team/leases/run-leases';
import { runContext, runStream } from '../team/run-stream';

/** The run's lease is another live process's: it drives the run (409; the CLI waits for it instead). */
export class DrivenElsewhereError extends ConflictError {
  override name = 'DrivenElsewhereError';
  constructor(runId: string) {
    super(`run ${runId} is being driven by another process`);
  }
}

/** What resuming a run needs of the serving process's supervisor. */
export interface ResumingSupervisor {
  readonly owner: string;
  isDriving(runId: string): boolean;
  startIfLeased(runId: string, options: { overCap?: boolean }): Promise<boolean>;
}

export interface ResumeDeps {
  path: CommandPath;
  checkpoints: CheckpointStore;
  leases: RunLeases;
  clock: Clock;
  supervisor: ResumingSupervisor;
}

/**
 * Resumes a suspended or crashed run: records RunResumed when it was suspended. A serving
 * process's dispatcher then drives it (the CLI drives it in the foreground); a crashed run with no
 * live lease is taken by whoever resumes it or by recovery. The run's events decide: a run that
 * has ended, waits for a human review or has just been suspended is a conflict even while this
 * process's driver is still winding it down.
 */
export async function resumeRun({ path, checkpoints, leases, clock, supervisor }: ResumeDeps, runId: string, by: Identity) {
  const model = runStream(path.store, runId, checkpoints);
  if (supervisor.isDriving(runId)) {
    // A suspension this driver has recorded while it still winds down (a shutdown): recording the
    // resumption now would be lost on a driver that is stopping; the caller asks again once it has.
    const resumption = decideRun({ type: 'ResumeRun', runId, by: by.id, at: '' }, await model.load());
    if (resumption.length > 0) throw new ConflictError(`run ${runId} is being suspended by this process; resume it once it has stopped`);
    return { runId, status: 'running', driver: supervisor.owner };
  }
  const holder = await leases.holder(runId, clock.now());
  if (holder && holder !== supervisor.owner) {
    decideRun({ type: 'ResumeRun', runId, by: by.id, at: '' }, await model.load());
    throw new DrivenElsewhereError(runId);
  }
  const at = new Date(clock.now()).toISOString();
  await path.handle(model, (state) => decideRun({ type: 'ResumeRun', runId, by: by.id, at }, state), runContext(runId, by.id), { maxAttempts: 1 });
  // This process takes the run when it can: a suspended run's RunResumed wakes the dispatchers
  // too, a crashed run's (nothing recorded) is otherwise recovery's once its lease expires.
  const leased = await supervisor.startIfLeased(runId, { overCap: true });
  if (!leased) throw new DrivenElsewhereError(runId);
  return { runId, status: 'running', driver: supervisor.owner };
}

import { ConflictException, Inject, NotFoundException } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { WrongExpectedRevisionError } from '../../events/errors';
import { CLOCK } from '../../shared/system';
import { RUN_LEASES, type RunLeases } from '../../team/leases/run-leases';
import { TERMINAL_STATUSES, toRunStreamId } from '../../team/domain/run-events';
import { runStatus } from '../../team/domain/run-state';
import type { Clock } from '../../shared/ports';
import { loadRunState } from '../../team/run-driver';
import { RunSupervisor } from '../../team/run-supervisor';

export class ResumeRunCommand {
  constructor(
    readonly runId: string,
    readonly by: Identity,
  ) {}
}

/** Resumes a suspended or crashed run in this process: RunResumed if suspended, then a driver under a lease. */
@CommandHandler(ResumeRunCommand)
export class ResumeRunHandler implements ICommandHandler<ResumeRunCommand, { runId: string; status: string; driver: string }> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CHECKPOINT_STORE) private readonly checkpoints: CheckpointStore,
    @Inject(RUN_LEASES) private readonly leases: RunLeases,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly supervisor: RunSupervisor,
  ) {}

  async execute({ runId, by }: ResumeRunCommand) {
    if (this.supervisor.isDriving(runId)) return { runId, status: 'running', driver: this.supervisor.owner };
    const state = await loadRunState(this.store, runId, this.checkpoints);
    if (!state.launched) throw new NotFoundException(`run ${runId} not found`);
    const status = runStatus(state);
    if (TERMINAL_STATUSES.has(status)) throw new ConflictException(`run ${runId} has ended (${status}); fork it to continue from a turn`);
    if (status === 'awaiting_review') throw new ConflictException(`run ${runId} waits for a human review, not for a driver`);
    const holder = await this.leases.holder(runId, this.clock.now());
    if (holder && holder !== this.supervisor.owner) throw new ConflictException(`run ${runId} is being driven by another process`);
    if (state.suspended) {
      try {
        await this.store.append(
          toRunStreamId(runId),
          [{ type: 'RunResumed', data: { by: by.id, at: new Date(this.clock.now()).toISOString() }, metadata: { runId, correlationId: runId, actor: by.id } }],
          { expectedRevision: state.revision },
        );
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError) throw new ConflictException(`run ${runId} changed meanwhile; try again`);
        throw err;
      }
    }
    void this.supervisor.start(runId);
    return { runId, status: 'running', driver: this.supervisor.owner };
  }
}

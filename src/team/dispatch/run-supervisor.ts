import { Injectable } from '@nestjs/common';
import type { RunPin } from '../domain/model-pin';
import { DriverPool, type Wake, type WakeReason } from './driver-pool';
import { LeaseClaims } from './lease-claims';
import type { PlacementDecision } from './placement';
import { Placement } from './run-placement';
import { RunWorkspaces } from './run-workspaces';

/**
 * What the shell (launch, cancel, a run's read, a fork, projects, serve) asks of this process's
 * dispatch, in one place: each question is answered by the part that owns it — where a launch goes
 * (Placement), the drivers (DriverPool), claims on other work (LeaseClaims), the runs' workspaces
 * (RunWorkspaces). The dispatcher, recovery, resume and the CLI use those parts directly.
 */
@Injectable()
export class RunSupervisor {
  constructor(
    readonly pool: DriverPool,
    readonly placement: Placement,
    private readonly claims: LeaseClaims,
    private readonly workspaces: RunWorkspaces,
  ) {}

  /** This process's identity as a driver (and as a writer: every event's metadata names it). */
  get owner(): string {
    return this.pool.owner;
  }

  get workspaceRoot(): string {
    return this.workspaces.root;
  }

  prepareWorkspace(runId: string): Promise<string> {
    return this.workspaces.prepare(runId);
  }

  drivenElsewhere(runId: string): Promise<string | undefined> {
    return this.pool.drivenElsewhere(runId);
  }

  isDriving(runId: string): boolean {
    return this.pool.isDriving(runId);
  }

  pinWait(pin: RunPin): string | undefined {
    return this.pool.pinWait(pin);
  }

  get activeCount(): number {
    return this.pool.activeCount;
  }

  wake(runId: string, why: WakeReason): Promise<Wake> {
    return this.pool.wake(runId, why);
  }

  stop(runId: string, reason: string): Promise<void> {
    return this.pool.stop(runId, reason);
  }

  startServing(): Promise<void> {
    return this.placement.startServing();
  }

  place(runId: string): Promise<PlacementDecision | undefined> {
    return this.placement.place(runId);
  }

  unplace(runId: string, placement: PlacementDecision | undefined): Promise<void> {
    return this.placement.unplace(runId, placement);
  }

  claim(key: string): Promise<{ release(): Promise<void> } | undefined> {
    return this.claims.claim(key);
  }

  /** How long a claim (or a run's lease) lasts without renewal. */
  get leaseTtlMs(): number {
    return this.claims.ttlMs;
  }
}

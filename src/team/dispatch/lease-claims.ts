import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, PROCESS_ID } from '../../shared/system';
import type { Clock } from '../../shared/ports';
import { RUN_LEASES, type RunLeases } from '../leases/run-leases.port';
import { DISPATCH_OPTIONS, type DispatchOptions } from './dispatch-options';

/**
 * Leases on work that is not a run (a project's planning), in the runs' lease table: held by this
 * process for one lease TTL, so that of several processes reacting to the same thing one does it.
 * A holder that dies leaves a lease that expires, and the work is free again.
 */
@Injectable()
export class LeaseClaims {
  private readonly logger = new Logger(LeaseClaims.name);

  constructor(
    @Inject(RUN_LEASES) private readonly leases: RunLeases,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(DISPATCH_OPTIONS) private readonly options: Pick<DispatchOptions, 'leaseTtlMs'>,
    @Inject(PROCESS_ID) private readonly owner: string,
  ) {}

  /** How long a claim lasts without renewal. */
  get ttlMs(): number {
    return this.options.leaseTtlMs;
  }

  /** The claim on `key`; undefined when another process holds it. */
  async claim(key: string): Promise<{ release(): Promise<void> } | undefined> {
    if (!(await this.leases.tryAcquire(key, this.owner, this.options.leaseTtlMs, this.clock.now()))) return undefined;
    return {
      release: () =>
        this.leases.release(key, this.owner).catch((err: unknown) => {
          // The claim then lapses after its TTL: the work waits that long before another process may take it.
          this.logger.warn(`claim ${key} not released (it lapses after its TTL): ${(err as Error).message}`);
        }),
    };
  }
}

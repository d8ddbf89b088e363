import type { ProcessLoad } from '../dispatch/placement';

/**
 * The serving processes' loads as placement reads them (`Placement.place`). A process at its
 * cap reads every process's load for each launch it places; here at most one read is in flight,
 * shared by every launch that asks before it answers (the callers waiting on one PostgreSQL round
 * trip), and its answer is reused for the rest of the event-loop turn it answers in (the requests
 * of one poll of the sockets); the next turn reads the store again. Each hand-off made from a read
 * is counted in it (`handed`), so launches placed together spread over the processes as they would
 * with a read each.
 *
 * What other launchers place meanwhile, and this launcher's own hand-offs from an earlier read
 * whose leases were not taken yet when this read was made, are seen at a later read: the read and
 * the lease that follows it were never one atomic step, and a process handed more than its cap does
 * not start the extra runs (their leases expire and recovery places them again).
 */
export class LoadsPerTurn {
  /** This turn's loads, once read (copies: `handed` changes them). */
  private loads: ProcessLoad[] | undefined;
  private reading: Promise<ProcessLoad[]> | undefined;

  constructor(
    private readonly read: () => Promise<ProcessLoad[]>,
    /** Runs its callback once the turn is over (setImmediate: after this poll's callbacks). */
    private readonly afterTurn: (callback: () => void) => void = (callback) => void setImmediate(callback),
  ) {}

  /** The loads: this turn's read, or a new one (shared by every caller until it answers). */
  get(): Promise<ProcessLoad[]> {
    if (this.loads) return Promise.resolve(this.loads);
    this.reading ??= this.read().then(
      (loads) => {
        const copies = loads.map((load) => ({ ...load }));
        this.loads = copies;
        this.reading = undefined;
        this.afterTurn(() => {
          if (this.loads === copies) this.loads = undefined;
        });
        return copies;
      },
      (err: unknown) => {
        // Not kept: the next caller reads again.
        this.reading = undefined;
        throw err;
      },
    );
    return this.reading;
  }

  /**
   * A run was just placed on `owner` from `loads` (what `get` answered): one more active there,
   * for the launches placed from the same read. The answer undoes it (the lease was not taken);
   * undoing once the turn is over changes a copy nobody reads any more, never a later read.
   */
  handed(loads: ProcessLoad[], owner: string): () => void {
    const load = loads.find((l) => l.owner === owner);
    if (!load) return () => undefined;
    load.active++;
    let undone = false;
    return () => {
      if (undone) return;
      undone = true;
      load.active--;
    };
  }
}

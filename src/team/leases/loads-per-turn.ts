import type { ProcessLoad } from '../placement';

/**
 * The serving processes' loads as placement reads them (`RunSupervisor.place`), read once per turn
 * of the event loop. A process at its cap reads every process's load for each launch it places;
 * launches that arrive together (the requests of one poll of the sockets, or the callers waiting on
 * one PostgreSQL round trip) are placed on one read instead of one each. Each placement made from a
 * read counts in it (`handed`, `unhanded`), so launches placed together spread over the processes
 * as they would with a read each, and the next turn reads the store again.
 *
 * What another launcher places meanwhile is seen at the next read, as before: the read and the
 * lease that follows it were never one atomic step, and a process handed more than its cap does not
 * start the extra runs (their leases expire and recovery places them again).
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

  /** A run was just placed on `owner` from this turn's loads: one more active there. */
  handed(owner: string): void {
    const load = this.loads?.find((l) => l.owner === owner);
    if (load) load.active++;
  }

  /** A placement counted by `handed` was undone (its lease was not taken). */
  unhanded(owner: string): void {
    const load = this.loads?.find((l) => l.owner === owner);
    if (load && load.active > 0) load.active--;
  }
}

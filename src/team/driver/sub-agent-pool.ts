import { DEFAULT_SCHEDULER_LIMITS, schedule, type SchedulerLimits, type Slot, type Waiting } from '../domain/sub-agent-scheduler';

/** Frees a slot; calling it again does nothing. */
export type ReleaseSlot = () => void;

export interface SlotRequest {
  /** `<runId>/<path>`: unique in the process. */
  id: string;
  parent: string;
  priority: number;
}

/**
 * The process's running sub-agents (at most 8, 5 per parent): the shell around `schedule`, which
 * decides who starts. A sub-agent holds its slot while it runs, and gives it up while it waits for
 * a sub-agent of its own, so nesting never deadlocks the pool.
 */
export class SubAgentPool {
  private readonly running: Slot[] = [];
  private readonly waiting: Array<Waiting & { grant: (release: ReleaseSlot) => void }> = [];
  private seq = 0;

  constructor(private readonly limits: SchedulerLimits = DEFAULT_SCHEDULER_LIMITS) {}

  /** `immediate`: a slot was free at once (no queueing); `ready` resolves with the slot (rejects when `signal` aborts first). */
  request(slot: SlotRequest, signal: AbortSignal): { immediate: boolean; ready: Promise<ReleaseSlot> } {
    let grant!: (release: ReleaseSlot) => void;
    let refuse!: (err: Error) => void;
    const ready = new Promise<ReleaseSlot>((resolve, reject) => {
      grant = resolve;
      refuse = reject;
    });
    const entry = { id: slot.id, parent: slot.parent, priority: slot.priority, seq: this.seq++, grant };
    this.waiting.push(entry);
    const before = this.running.length;
    this.pump();
    const immediate = this.running.length > before && this.running.some((r) => r.id === slot.id);
    if (!immediate) {
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i < 0) return;
        this.waiting.splice(i, 1);
        refuse(new Error('stopped while queued'));
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    return { immediate, ready };
  }

  get runningCount(): number {
    return this.running.length;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  private pump(): void {
    for (const id of schedule({ running: this.running, waiting: this.waiting }, this.limits)) {
      const i = this.waiting.findIndex((w) => w.id === id);
      const [entry] = this.waiting.splice(i, 1);
      const slot: Slot = { id: entry.id, parent: entry.parent };
      this.running.push(slot);
      let released = false;
      entry.grant(() => {
        if (released) return;
        released = true;
        this.running.splice(this.running.indexOf(slot), 1);
        this.pump();
      });
    }
  }
}

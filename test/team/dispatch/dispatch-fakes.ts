import { InMemoryCheckpointStore } from '../../../src/checkpoint/in-memory.checkpoint-store';
import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { HealthRegistry } from '../../../src/shared/health';
import type { RunState } from '../../../src/team/domain/run-state';
import type { RunDriver } from '../../../src/team/driver/run-driver';
import { DriverPool } from '../../../src/team/dispatch/driver-pool';
import { InMemoryRunLeases } from '../../../src/team/leases/in-memory.run-leases';

/** A driver that drives until the test ends it (`finish`, `fail`) or the pool stops it. */
export class FakeDriver {
  fenced = false;
  stoppedFor?: string;
  suspended = false;
  /** The state its drive ends with (any object: the pool hands it on as it is). */
  readonly state = { fake: true } as unknown as RunState;
  private end!: (outcome: { state?: RunState; error?: Error }) => void;
  private readonly ended = new Promise<{ state?: RunState; error?: Error }>((resolve) => (this.end = resolve));
  driving = false;

  constructor(readonly runId: string) {}

  knowRealWorkspace(): void {}

  async drive(): Promise<RunState> {
    this.driving = true;
    const { state, error } = await this.ended;
    if (error) throw error;
    return state!;
  }

  finish(): void {
    this.end({ state: this.state });
  }

  fail(message: string): void {
    this.end({ error: new Error(message) });
  }

  stop(reason: string): void {
    this.stoppedFor = reason;
    this.finish();
  }

  async suspend(done: Promise<unknown>): Promise<boolean> {
    this.suspended = true;
    this.finish();
    await done;
    return true;
  }
}

/** Log lines by level, to assert what a fault path says. */
export function recordingLogger() {
  const lines: Array<{ level: 'log' | 'warn' | 'error'; message: string }> = [];
  const at = (level: 'log' | 'warn' | 'error') => (message: string) => void lines.push({ level, message });
  return { logger: { log: at('log'), warn: at('warn'), error: at('error') }, lines };
}

/** A DriverPool over in-memory parts and fake drivers, with a clock the test moves. */
export function poolWith(options: { cap?: number; owner?: string } = {}) {
  const clock = { t: Date.parse('2026-01-05T09:00:00Z'), now: () => clock.t };
  const leases = new InMemoryRunLeases();
  const health = new HealthRegistry();
  const drivers = new Map<string, FakeDriver>();
  const tools = { ready: async () => undefined, close: jest.fn(async () => undefined) };
  const { logger, lines } = recordingLogger();
  const owner = options.owner ?? 'proc_here';
  const store = new InMemoryEventStore();
  const pool = new DriverPool({
    newDriver: (runId) => {
      const driver = new FakeDriver(runId);
      drivers.set(runId, driver);
      return driver as unknown as RunDriver;
    },
    prepareWorkspace: async (runId) => `/tmp/workspaces/${runId}`,
    store,
    checkpoints: new InMemoryCheckpointStore(),
    leases,
    tools,
    here: { provider: 'offline', endpoint: 'offline:' },
    clock,
    options: { leaseTtlMs: 30_000, checkpointEveryTurns: 100, maxActiveRuns: options.cap ?? 2 },
    owner,
    health,
    logger,
  });
  let slotsFreed = 0;
  pool.onSlotFreed(() => slotsFreed++);
  return { pool, store, clock, leases, health, drivers, tools, lines, owner, slotsFreed: () => slotsFreed };
}

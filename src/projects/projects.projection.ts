import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EVENT_STORE, type EventStore, type RecordedEvent, type Subscription } from '../events/event-store.port';
import { isStoreUnavailable, StoreUnavailableError } from '../events/errors';
import { pause, storeBackoffMs } from '../events/store-retry';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { runIdOfStream } from '../team/run-summary';
import type { RunLaunchedData } from '../team/domain/run-events';
import { evolveProject, initialProjectState } from './domain/project-decider';
import { PROJECT_EVENT_TYPES, projectIdOfStream, type ProjectEvent, type ProjectState, type ProjectStatus } from './domain/project-events';

const PROJECTION = 'projects';

/**
 * The projects read model (GET /v1/projects), folded from a catch-up subscription to the whole
 * store like the runs read model, rebuilt at each boot. It also tells listeners (the project
 * reactor) which project an event concerns: the project's own events, and the launch and the end
 * of its task runs.
 */
@Injectable()
export class ProjectsProjection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ProjectsProjection.name);
  private readonly projects = new Map<string, ProjectState>();
  /** Task runs (launched by a project) → their project. */
  private readonly taskRuns = new Map<string, string>();
  private readonly listeners = new Set<(projectId: string) => void>();
  private readonly waiters = new Set<() => void>();
  private subscription?: Subscription;
  private position = 0;
  private failed?: Error;
  private stopped = false;
  private readonly stop = new AbortController();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(HEALTH_REGISTRY) private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.health.projectionAt(PROJECTION, 0);
    void this.run();
  }

  /** Called with a project's id after each event that concerns it; returns the unsubscribe. */
  onChange(listener: (projectId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private apply(e: RecordedEvent): void {
    const projectId = projectIdOfStream(e.streamId);
    if (projectId !== undefined) {
      if (!(PROJECT_EVENT_TYPES as readonly string[]).includes(e.type)) return;
      this.projects.set(projectId, evolveProject(this.projects.get(projectId) ?? initialProjectState(projectId), e as unknown as ProjectEvent, e));
      this.notify(projectId);
      return;
    }
    if (e.type !== 'RunLaunched' && e.type !== 'RunEnded') return;
    const runId = runIdOfStream(e.streamId);
    if (!runId) return;
    if (e.type === 'RunLaunched') {
      const link = (e.data as RunLaunchedData).project;
      if (!link) return;
      this.taskRuns.set(runId, link.projectId);
      this.notify(link.projectId);
      return;
    }
    const owner = this.taskRuns.get(runId);
    if (owner) this.notify(owner);
  }

  private notify(projectId: string): void {
    for (const l of this.listeners) l(projectId);
  }

  private async run(): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt++) {
      const sub = this.store.subscribe({ batchSize: 1000, after: this.position });
      this.subscription = sub;
      try {
        for await (const e of sub) {
          this.apply(e);
          this.advance(e.position);
          attempt = 1;
        }
        return;
      } catch (err) {
        if (this.stopped) return;
        this.failed = err as Error;
        this.health.projectionFailed(PROJECTION, isStoreUnavailable(err) ? 'the event store is not reachable' : (err as Error).message);
        this.logger.error(`projects projection stopped, restarting at position ${this.position}: ${(err as Error).message}`);
        for (const w of this.waiters) w();
        await pause(storeBackoffMs(attempt), this.stop.signal);
      } finally {
        sub.close();
      }
    }
  }

  private advance(position: number): void {
    this.position = position;
    this.failed = undefined;
    this.health.projectionAt(PROJECTION, position);
    for (const w of this.waiters) w();
  }

  /** Resolves once every event up to the store's current head is folded (bounded wait). */
  async catchUp(timeoutMs = 5000): Promise<void> {
    const head = await this.store.headPosition();
    const deadline = Date.now() + timeoutMs;
    while (this.position < head) {
      if (this.failed) throw isStoreUnavailable(this.failed) ? new StoreUnavailableError(this.failed.message) : new Error(`the projects read model is failing: ${this.failed.message}`);
      if (Date.now() > deadline) throw new Error('the projects read model is behind the store');
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(done, 20);
        this.waiters.add(done);
      });
    }
  }

  get(projectId: string): ProjectState | undefined {
    const p = this.projects.get(projectId);
    return p?.launched ? p : undefined;
  }

  list(filter: { status?: ProjectStatus; limit?: number } = {}): ProjectState[] {
    const all = [...this.projects.values()].filter((p) => p.launched && (!filter.status || p.status === filter.status));
    all.sort((a, b) => (a.launched!.launchedAt < b.launched!.launchedAt ? 1 : a.launched!.launchedAt > b.launched!.launchedAt ? -1 : 0));
    return filter.limit ? all.slice(0, filter.limit) : all;
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    this.stop.abort();
    this.subscription?.close();
  }
}

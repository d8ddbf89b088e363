import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CatchUpFold } from '../events/catch-up-fold';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../events/event-store/event-store.port';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { runIdOfStream } from '../team/runs/run-summary';
import type { RunLaunchedData } from '../team/domain/run-events';
import { evolveProject, initialProjectState } from './domain/project-decider';
import { PROJECT_EVENT_TYPES, projectIdOfStream, type ProjectEvent, type ProjectState, type ProjectStatus } from './domain/project-events';

const PROJECTION = 'projects';

/**
 * The projects read model (GET /v1/projects), folded from the store by a `CatchUpFold` like
 * the runs read model, rebuilt at each boot. It also tells listeners (the project
 * reactor) which project an event concerns: the project's own events, and the launch and the end
 * of its task runs.
 */
@Injectable()
export class ProjectsProjection implements OnModuleInit, OnApplicationShutdown {
  private readonly projects = new Map<string, ProjectState>();
  /** Task runs (launched by a project) → their project. */
  private readonly taskRuns = new Map<string, string>();
  private readonly listeners = new Set<(projectId: string) => void>();
  private readonly fold: CatchUpFold;

  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(HEALTH_REGISTRY) health: HealthRegistry) {
    // A project's events and its task runs' launches and ends: what `apply` uses, by stored type.
    this.fold = new CatchUpFold(store, health, PROJECTION, (e) => this.apply(e), new Logger(ProjectsProjection.name), {
      types: [...PROJECT_EVENT_TYPES, 'RunLaunched', 'RunEnded'],
    });
  }

  onModuleInit(): void {
    this.fold.start();
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

  /** Resolves once every event up to the store's current head is folded (bounded wait). */
  catchUp(timeoutMs?: number): Promise<void> {
    return this.fold.catchUp(timeoutMs);
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
    this.fold.close();
  }
}

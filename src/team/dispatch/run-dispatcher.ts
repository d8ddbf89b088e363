import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { HEALTH_REGISTRY, type HealthRegistry } from '../../shared/health';
import { RunDispatch } from './run-dispatch';
import { RunSupervisor } from './run-supervisor';

/** The dispatcher of a serving process (see RunDispatch); `triad serve` starts it. */
@Injectable()
export class RunDispatcher extends RunDispatch implements OnApplicationShutdown {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(HEALTH_REGISTRY) health: HealthRegistry, supervisor: RunSupervisor) {
    super(store, health, supervisor, new Logger(RunDispatcher.name));
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }
}

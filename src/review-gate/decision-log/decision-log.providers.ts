import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit, type Provider } from '@nestjs/common';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { HEALTH_REGISTRY, type HealthRegistry } from '../../shared/health';
import { DecisionLog } from './decision-log';
import { DecisionLogProjection } from './decision-log.projection';
import { DECISION_RECORD_REPOSITORY, type DecisionRecordRepository } from './decision-record.repository';
import { STORAGE, type Storage } from '../../storage/storage';

/**
 * The Nest shell of the decision log: the repository from the storage (in the events' database;
 * closed with it), the projector started with the application and stopped (checkpoint saved)
 * before the storage closes, and the read/verify service.
 */
@Injectable()
export class DecisionLogProjector implements OnModuleInit, OnModuleDestroy {
  readonly projection: DecisionLogProjection;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(DECISION_RECORD_REPOSITORY) repo: DecisionRecordRepository,
    @Inject(HEALTH_REGISTRY) health: HealthRegistry,
  ) {
    this.projection = new DecisionLogProjection(store, repo, { logger: new Logger('DecisionLog'), health });
  }

  onModuleInit(): void {
    this.projection.start();
  }

  // onModuleDestroy runs before any onApplicationShutdown, so the storage is still open here.
  async onModuleDestroy(): Promise<void> {
    await this.projection.stop();
  }
}

@Injectable()
export class DecisionLogService extends DecisionLog {
  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(DECISION_RECORD_REPOSITORY) repo: DecisionRecordRepository,
    projector: DecisionLogProjector,
  ) {
    super(store, repo, projector.projection);
  }
}

export const DECISION_LOG_PROVIDERS: Provider[] = [
  { provide: DECISION_RECORD_REPOSITORY, inject: [STORAGE], useFactory: (storage: Storage) => storage.decisions },
  DecisionLogProjector,
  DecisionLogService,
];

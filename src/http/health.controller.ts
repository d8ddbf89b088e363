import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../auth/auth.guard';
import { EVENT_STORE, type EventStore } from '../events/event-store/event-store.port';
import { DurabilityError } from '../events/wal-sync';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { MODEL_PROVIDER, type ModelProvider } from '../team/models/model.port';
import { SANDBOX } from '../team/tokens';
import type { Sandbox } from '../team/tools/sandbox/sandbox';

@Controller()
@Public()
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(HEALTH_REGISTRY) private readonly registry: HealthRegistry,
    @Inject(SANDBOX) private readonly sandbox: Sandbox,
  ) {}

  /**
   * Liveness and readiness. 503 `degraded` with the reason while the store does not answer (as
   * the components using it report, or this check's own read of the head), while a projection
   * fails or is far behind, or when the store can no longer make writes durable.
   */
  @Get('health')
  async health(@Res({ passthrough: true }) res: Response) {
    const degraded = (reason: string) => {
      res.status(503);
      return { statusCode: 503, error: 'Service Unavailable', status: 'degraded', reason, message: reason };
    };
    const known = this.registry.assess();
    if (!known.ok) return degraded(known.reasons.join('; '));
    let head: number;
    try {
      head = await this.store.headPosition();
    } catch (err) {
      // A store that can no longer make writes durable says why (and that a restart is needed).
      return degraded(err instanceof DurabilityError ? err.message : 'the event store is not reachable');
    }
    const assessed = this.registry.assess(head);
    if (!assessed.ok) return degraded(assessed.reasons.join('; '));
    const sandbox = this.sandbox.state;
    return {
      status: 'ok',
      store: this.store.kind,
      model: this.model.name,
      offlineModel: this.model.name === 'offline',
      headPosition: head,
      // Not a reason for 503: runs without commands work; run_command and stdio MCP servers are refused.
      sandbox,
      ...(sandbox === 'unavailable' ? { sandboxProblem: this.sandbox.describe() } : {}),
    };
  }
}

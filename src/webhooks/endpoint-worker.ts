import type { EventStore, RecordedEvent } from '../events/event-store/event-store.port';
import { followAcrossFaults } from '../events/outlast-store';
import { pause } from '../shared/pause';
import { acknowledged, afterFailure, type DeliverySchedule } from './domain/delivery-schedule';
import { runOfSource, SOURCE_EVENT_TYPES, webhookIdOf, webhookMessageOf, webhookTypeOf, type WebhookMessage } from './domain/webhook-events';
import type { Resolver } from './address-guard';
import { sendWebhook } from './webhook-sender';
import type { DeliveryRecord, StoredWebhookEndpoint, WebhookStore } from './store/webhook-store.port';

/** How a delivery ended, for /metrics: `retried` counts each failed attempt that will be tried again. */
export type DeliveryOutcome = 'delivered' | 'retried' | 'failed';

export interface EndpointWorkerDeps {
  events: EventStore;
  webhooks: WebhookStore;
  schedule: DeliverySchedule;
  timeoutMs: number;
  publicUrl: string;
  userAgent: string;
  /** The goal of a run (its launch's), for the payload. */
  goalOf(runId: string): Promise<string>;
  now(): number;
  random(): number;
  resolver?: Resolver;
  observe(outcome: DeliveryOutcome): void;
  logger: { log(message: string): void; warn(message: string): void; error(message: string): void };
}

/**
 * Delivers one endpoint's webhooks from the event log, in order, while this process holds its
 * lease (WebhookDelivery). It follows the store with a catch-up subscription from the endpoint's
 * stored position, across store faults (followAcrossFaults); each event the endpoint wants is
 * delivered until a 2xx acknowledges it or the schedule gives up, and only then is the position
 * moved past it (in the same write as the delivery's final record). So nothing is lost to a crash
 * or an endpoint down for long, and a restart sends again only what was not acknowledged, with the
 * same `webhook-id` and the attempts counted so far.
 */
export class EndpointWorker {
  private readonly stopping = new AbortController();
  private running?: Promise<void>;

  constructor(
    readonly endpointId: string,
    private readonly deps: EndpointWorkerDeps,
  ) {}

  start(): void {
    this.running ??= this.follow();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  private async follow(): Promise<void> {
    const { signal } = this.stopping;
    await followAcrossFaults({
      signal,
      life: async ({ seen }) => {
        // The stored position is the truth: a life after a fault starts from what was settled.
        const endpoint = await this.deps.webhooks.forDelivery(this.endpointId);
        if (!endpoint) return;
        const sub = this.deps.events.subscribe({ after: endpoint.position, filter: { streamPrefixes: ['run-'], types: [...SOURCE_EVENT_TYPES] }, batchSize: 100, signal });
        try {
          for await (const event of sub) {
            const type = webhookTypeOf(event);
            if (type && endpoint.events.includes(type)) {
              const message = webhookMessageOf(event, await this.deps.goalOf(runOfSource(event)!), this.deps.publicUrl)!;
              if (!(await this.deliver(endpoint, event, message))) return;
            } else await this.deps.webhooks.advance(endpoint.id, event.position);
            seen(event.position);
          }
        } finally {
          sub.close();
        }
      },
      onFault: (err) => this.deps.logger.error(`webhook ${this.endpointId}: delivery stopped, starting again from its stored position: ${(err as Error).message}`),
    });
  }

  /** Attempts until acknowledged or given up (true), or until stopped (false: the next holder goes on). */
  private async deliver(endpoint: StoredWebhookEndpoint, event: RecordedEvent, message: WebhookMessage): Promise<boolean> {
    const { signal } = this.stopping;
    const webhookId = webhookIdOf(endpoint.id, event.id);
    const body = JSON.stringify(message);
    const prior = await this.deps.webhooks.delivery(endpoint.id, event.id);
    if (prior && prior.status !== 'retrying') {
      await this.deps.webhooks.advance(endpoint.id, event.position);
      return true;
    }
    let record: DeliveryRecord = prior ?? {
      endpointId: endpoint.id,
      eventId: event.id,
      position: event.position,
      webhookId,
      type: message.type,
      status: 'retrying',
      attempts: 0,
      firstAttemptAt: new Date(this.deps.now()).toISOString(),
      lastAttemptAt: new Date(this.deps.now()).toISOString(),
    };
    // Resumed after a restart or a handover: the retry that was due keeps its time.
    if (prior?.nextRetryAt) await pause(Math.max(0, Date.parse(prior.nextRetryAt) - this.deps.now()), signal);
    while (!signal.aborted) {
      const at = new Date(this.deps.now());
      const result = await sendWebhook({ url: endpoint.url, secret: endpoint.secret, allowPrivate: endpoint.allowPrivate, webhookId, body, at, timeoutMs: this.deps.timeoutMs, userAgent: this.deps.userAgent, resolver: this.deps.resolver, signal });
      if (signal.aborted) return false;
      const { nextRetryAt: _due, responseCode: _code, error: _error, ...rest } = record;
      record = {
        ...rest,
        attempts: record.attempts + 1,
        lastAttemptAt: at.toISOString(),
        ...(result.kind === 'answered' ? { responseCode: result.status } : {}),
        ...(acknowledged(result) ? {} : { error: result.kind === 'answered' ? `HTTP ${result.status}` : result.error }),
      };
      if (acknowledged(result)) {
        await this.deps.webhooks.settle({ ...record, status: 'delivered' });
        this.deps.observe('delivered');
        return true;
      }
      const next = afterFailure(record.attempts, Date.parse(record.firstAttemptAt), this.deps.now(), this.deps.schedule, this.deps.random);
      if (next.next === 'give_up') {
        await this.deps.webhooks.settle({ ...record, status: 'failed' });
        this.deps.observe('failed');
        this.deps.logger.warn(`webhook ${endpoint.id}: ${message.type} ${webhookId} given up after ${record.attempts} attempts (${record.error})`);
        return true;
      }
      record = { ...record, status: 'retrying', nextRetryAt: new Date(next.retryAt).toISOString() };
      await this.deps.webhooks.recordAttempt(record);
      this.deps.observe('retried');
      await pause(next.delayMs, signal);
    }
    return false;
  }
}

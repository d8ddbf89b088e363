import { randomBytes } from 'node:crypto';
import type { EventStore } from '../events/event-store/event-store.port';
import { InvalidRequestError, NotFoundError, UnavailableError } from '../shared/errors';
import { checkedAddress, WebhookAddressRefused, type Resolver } from './address-guard';
import { parseWebhookUrl } from './domain/endpoint-url';
import { parseWebhookEventTypes } from './domain/webhook-events';
import type { DeliveryRecord, WebhookEndpoint, WebhookStore } from './store/webhook-store.port';

/** An endpoint as listed: with its last delivery (status, attempts, code, when). */
export interface ListedWebhook extends WebhookEndpoint {
  lastDelivery?: Pick<DeliveryRecord, 'status' | 'attempts' | 'responseCode' | 'lastAttemptAt' | 'nextRetryAt' | 'type'>;
}

/** The answer to an add: the only place the secret is ever shown. */
export interface AddedWebhook extends WebhookEndpoint {
  secret: string;
}

export interface AddWebhookInput {
  url: string;
  events: readonly string[];
  allowPrivate?: boolean;
  /** `user:<name>` of who adds it. */
  by: string;
}

export const MAX_DELIVERIES_LISTED = 100;

/**
 * Webhook endpoints for the HTTP routes and the CLI alike: add (URL, events and the SSRF rule
 * checked, a secret made and shown once, delivery from the log's head on), list (never a secret),
 * remove, and the delivery log. `changed` tells this process's delivery that the endpoints changed.
 */
export class WebhooksService {
  constructor(
    private readonly store: WebhookStore | null,
    private readonly events: Pick<EventStore, 'headPosition'>,
    private readonly now: () => Date,
    private readonly changed: () => void = () => undefined,
    private readonly resolver?: Resolver,
  ) {}

  private webhooks(): WebhookStore {
    if (!this.store) throw new UnavailableError('webhooks need the sqlite, postgres or memory store (TRIAD_STORE); EventStoreDB keeps none');
    return this.store;
  }

  async add(input: AddWebhookInput): Promise<AddedWebhook> {
    const store = this.webhooks();
    const parsed = parseWebhookUrl(input.url);
    if (!parsed.ok) throw new InvalidRequestError(parsed.reason);
    const events = parseWebhookEventTypes(input.events);
    if (!events.ok) throw new InvalidRequestError(events.reason);
    const allowPrivate = input.allowPrivate === true;
    try {
      await checkedAddress(parsed.target.host, allowPrivate, this.resolver);
    } catch (err) {
      if (err instanceof WebhookAddressRefused) throw new InvalidRequestError(`url refused: ${err.message}`);
      throw err;
    }
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const endpoint = {
      id: `wh_${randomBytes(8).toString('hex')}`,
      url: parsed.target.url,
      events: events.types,
      allowPrivate,
      secretHint: `…${secret.slice(-4)}`,
      createdBy: input.by,
      createdAt: this.now().toISOString(),
      // What is recorded from now on: an endpoint is told of what happens after it was added.
      position: await this.events.headPosition(),
    };
    await store.add({ ...endpoint, secret });
    this.changed();
    return { ...endpoint, secret };
  }

  async list(): Promise<ListedWebhook[]> {
    const store = this.webhooks();
    const endpoints = await store.list();
    return Promise.all(
      endpoints.map(async (e) => {
        const [last] = await store.deliveries(e.id, 1);
        return last ? { ...e, lastDelivery: { type: last.type, status: last.status, attempts: last.attempts, ...(last.responseCode !== undefined ? { responseCode: last.responseCode } : {}), lastAttemptAt: last.lastAttemptAt, ...(last.nextRetryAt ? { nextRetryAt: last.nextRetryAt } : {}) } } : e;
      }),
    );
  }

  async remove(id: string): Promise<void> {
    if (!(await this.webhooks().remove(id))) throw new NotFoundError(`webhook ${id.slice(0, 64)} not found`);
    this.changed();
  }

  async deliveries(id: string, limit = 20): Promise<DeliveryRecord[]> {
    const store = this.webhooks();
    if (!(await store.get(id))) throw new NotFoundError(`webhook ${id.slice(0, 64)} not found`);
    return store.deliveries(id, limit);
  }
}

import { DELIVERY_LOG_SIZE, type DeliveryRecord, type StoredWebhookEndpoint, type WebhookEndpoint, type WebhookStore } from './webhook-store.port';

/** Webhooks held in the process (the memory store): copies in and out, like a database. */
export class InMemoryWebhookStore implements WebhookStore {
  private readonly endpoints = new Map<string, StoredWebhookEndpoint>();
  private readonly log = new Map<string, Map<string, DeliveryRecord>>();

  async add(endpoint: StoredWebhookEndpoint): Promise<void> {
    if (this.endpoints.has(endpoint.id)) throw new Error(`webhook endpoint ${endpoint.id} exists`);
    this.endpoints.set(endpoint.id, structuredClone(endpoint));
    this.log.set(endpoint.id, new Map());
  }

  async remove(id: string): Promise<boolean> {
    this.log.delete(id);
    return this.endpoints.delete(id);
  }

  async list(): Promise<WebhookEndpoint[]> {
    return [...this.endpoints.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)).map(listed);
  }

  async get(id: string): Promise<WebhookEndpoint | undefined> {
    const e = this.endpoints.get(id);
    return e && listed(e);
  }

  async forDelivery(id: string): Promise<StoredWebhookEndpoint | undefined> {
    const e = this.endpoints.get(id);
    return e && structuredClone(e);
  }

  async recordAttempt(delivery: DeliveryRecord): Promise<void> {
    this.log.get(delivery.endpointId)?.set(delivery.eventId, structuredClone(delivery));
  }

  async settle(delivery: DeliveryRecord): Promise<void> {
    const log = this.log.get(delivery.endpointId);
    if (!log) return;
    log.set(delivery.eventId, structuredClone(delivery));
    await this.advance(delivery.endpointId, delivery.position);
    const kept = [...log.values()].sort((a, b) => b.position - a.position).slice(DELIVERY_LOG_SIZE);
    for (const old of kept) log.delete(old.eventId);
  }

  async advance(endpointId: string, position: number): Promise<void> {
    const e = this.endpoints.get(endpointId);
    if (e && position > e.position) e.position = position;
  }

  async delivery(endpointId: string, eventId: string): Promise<DeliveryRecord | undefined> {
    const d = this.log.get(endpointId)?.get(eventId);
    return d && structuredClone(d);
  }

  async deliveries(endpointId: string, limit: number): Promise<DeliveryRecord[]> {
    return [...(this.log.get(endpointId)?.values() ?? [])].sort((a, b) => b.position - a.position).slice(0, limit).map((d) => structuredClone(d));
  }

  async close(): Promise<void> {}
}

function listed(e: StoredWebhookEndpoint): WebhookEndpoint {
  const { secret: _secret, ...rest } = e;
  return structuredClone(rest);
}

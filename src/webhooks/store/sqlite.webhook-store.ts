import type Database from 'better-sqlite3';
import { DELIVERY_LOG_SIZE, type DeliveryRecord, type StoredWebhookEndpoint, type WebhookEndpoint, type WebhookStore } from './webhook-store.port';
import { DELIVERY_COLUMNS, deliveryOfRow, deliveryValues, endpointOfRow, storedEndpointOfRow, type DeliveryRow, type EndpointRow } from './webhook-rows';

const LISTED = 'id, url, events, allow_private, secret_hint, created_by, created_at, position';

/**
 * Webhooks in the events file, on the storage's shared connection. A settled delivery and its
 * endpoint's position are one transaction, so a crash leaves either both or neither.
 */
export class SqliteWebhookStore implements WebhookStore {
  private readonly stmts;
  private readonly settleTx;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS webhook_endpoints (
      id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT NOT NULL, allow_private INTEGER NOT NULL,
      secret TEXT NOT NULL, secret_hint TEXT NOT NULL, created_by TEXT NOT NULL, created_at TEXT NOT NULL,
      position INTEGER NOT NULL
    )`);
    db.exec(`CREATE TABLE IF NOT EXISTS webhook_deliveries (
      endpoint_id TEXT NOT NULL, event_id TEXT NOT NULL, position INTEGER NOT NULL, webhook_id TEXT NOT NULL,
      type TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, response_code INTEGER, error TEXT,
      first_attempt_at TEXT NOT NULL, last_attempt_at TEXT NOT NULL, next_retry_at TEXT,
      PRIMARY KEY (endpoint_id, event_id)
    )`);
    db.exec('CREATE INDEX IF NOT EXISTS webhook_deliveries_position ON webhook_deliveries (endpoint_id, position)');
    this.stmts = {
      add: db.prepare(`INSERT INTO webhook_endpoints (${LISTED}, secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      removeDeliveries: db.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?'),
      remove: db.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
      list: db.prepare(`SELECT ${LISTED} FROM webhook_endpoints ORDER BY created_at, id`),
      get: db.prepare(`SELECT ${LISTED} FROM webhook_endpoints WHERE id = ?`),
      forDelivery: db.prepare(`SELECT ${LISTED}, secret FROM webhook_endpoints WHERE id = ?`),
      upsert: db.prepare(
        // Only for an endpoint still there: a delivery settled just after its endpoint was removed leaves nothing.
        `INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ?)
         ON CONFLICT (endpoint_id, event_id) DO UPDATE SET status = excluded.status, attempts = excluded.attempts,
           response_code = excluded.response_code, error = excluded.error, last_attempt_at = excluded.last_attempt_at,
           next_retry_at = excluded.next_retry_at`,
      ),
      advance: db.prepare('UPDATE webhook_endpoints SET position = max(position, ?) WHERE id = ?'),
      prune: db.prepare(
        `DELETE FROM webhook_deliveries WHERE endpoint_id = @id AND position < (
           SELECT position FROM webhook_deliveries WHERE endpoint_id = @id ORDER BY position DESC LIMIT 1 OFFSET @keep)`,
      ),
      delivery: db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ? AND event_id = ?`),
      deliveries: db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY position DESC LIMIT ?`),
    };
    this.settleTx = db.transaction((d: DeliveryRecord) => {
      this.stmts.upsert.run(...deliveryValues(d), d.endpointId);
      this.stmts.advance.run(d.position, d.endpointId);
      this.stmts.prune.run({ id: d.endpointId, keep: DELIVERY_LOG_SIZE - 1 });
    });
  }

  async add(e: StoredWebhookEndpoint): Promise<void> {
    this.stmts.add.run(e.id, e.url, JSON.stringify(e.events), e.allowPrivate ? 1 : 0, e.secretHint, e.createdBy, e.createdAt, e.position, e.secret);
  }

  async remove(id: string): Promise<boolean> {
    return this.db.transaction(() => {
      this.stmts.removeDeliveries.run(id);
      return this.stmts.remove.run(id).changes === 1;
    })();
  }

  async list(): Promise<WebhookEndpoint[]> {
    return (this.stmts.list.all() as EndpointRow[]).map(endpointOfRow);
  }

  async get(id: string): Promise<WebhookEndpoint | undefined> {
    const row = this.stmts.get.get(id) as EndpointRow | undefined;
    return row && endpointOfRow(row);
  }

  async forDelivery(id: string): Promise<StoredWebhookEndpoint | undefined> {
    const row = this.stmts.forDelivery.get(id) as (EndpointRow & { secret: string }) | undefined;
    return row && storedEndpointOfRow(row);
  }

  async recordAttempt(d: DeliveryRecord): Promise<void> {
    this.stmts.upsert.run(...deliveryValues(d), d.endpointId);
  }

  async settle(d: DeliveryRecord): Promise<void> {
    this.settleTx(d);
  }

  async advance(endpointId: string, position: number): Promise<void> {
    this.stmts.advance.run(position, endpointId);
  }

  async delivery(endpointId: string, eventId: string): Promise<DeliveryRecord | undefined> {
    const row = this.stmts.delivery.get(endpointId, eventId) as DeliveryRow | undefined;
    return row && deliveryOfRow(row);
  }

  async deliveries(endpointId: string, limit: number): Promise<DeliveryRecord[]> {
    return (this.stmts.deliveries.all(endpointId, limit) as DeliveryRow[]).map(deliveryOfRow);
  }

  async close(): Promise<void> {}
}

import type { Pool } from 'pg';
import { LazyPgTable, type TableLogger } from '../../shared/postgres-tables';
import { DELIVERY_LOG_SIZE, type DeliveryRecord, type StoredWebhookEndpoint, type WebhookEndpoint, type WebhookStore } from './webhook-store.port';
import { DELIVERY_COLUMNS, deliveryOfRow, deliveryValues, endpointOfRow, storedEndpointOfRow, type DeliveryRow, type EndpointRow } from './webhook-rows';

const LISTED = 'id, url, events, allow_private, secret_hint, created_by, created_at, position';

/**
 * Webhooks in triad's PostgreSQL schema. A settled delivery and its endpoint's position are one
 * statement (a data-modifying WITH), so a crash leaves either both or neither.
 */
export class PostgresWebhookStore implements WebhookStore {
  private readonly endpoints: LazyPgTable;
  private readonly log: LazyPgTable;

  constructor(
    private readonly pool: Pool,
    schema: string,
    logger?: TableLogger,
  ) {
    this.endpoints = new LazyPgTable(
      pool,
      schema,
      'webhook_endpoints',
      'id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT NOT NULL, allow_private BOOLEAN NOT NULL, secret TEXT NOT NULL, secret_hint TEXT NOT NULL, created_by TEXT NOT NULL, created_at TEXT NOT NULL, position BIGINT NOT NULL',
      [],
      logger,
    );
    this.log = new LazyPgTable(
      pool,
      schema,
      'webhook_deliveries',
      `endpoint_id TEXT NOT NULL, event_id TEXT NOT NULL, position BIGINT NOT NULL, webhook_id TEXT NOT NULL, type TEXT NOT NULL,
       status TEXT NOT NULL, attempts INTEGER NOT NULL, response_code INTEGER, error TEXT, first_attempt_at TEXT NOT NULL,
       last_attempt_at TEXT NOT NULL, next_retry_at TEXT, PRIMARY KEY (endpoint_id, event_id)`,
      [{ name: 'position', columns: 'endpoint_id, position' }],
      logger,
    );
  }

  /** Creates the tables now when they are missing (opening the storage does). */
  async ensureTables(): Promise<void> {
    await this.endpoints.ensure();
    await this.log.ensure();
  }

  async add(e: StoredWebhookEndpoint): Promise<void> {
    await this.ensureTables();
    await this.pool.query(`INSERT INTO ${this.endpoints.name} (${LISTED}, secret) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
      e.id,
      e.url,
      JSON.stringify(e.events),
      e.allowPrivate,
      e.secretHint,
      e.createdBy,
      e.createdAt,
      e.position,
      e.secret,
    ]);
  }

  async remove(id: string): Promise<boolean> {
    await this.ensureTables();
    const r = await this.pool.query(`WITH d AS (DELETE FROM ${this.log.name} WHERE endpoint_id = $1) DELETE FROM ${this.endpoints.name} WHERE id = $1`, [id]);
    return r.rowCount === 1;
  }

  async list(): Promise<WebhookEndpoint[]> {
    await this.ensureTables();
    const { rows } = await this.pool.query<EndpointRow>(`SELECT ${LISTED} FROM ${this.endpoints.name} ORDER BY created_at, id`);
    return rows.map(endpointOfRow);
  }

  async get(id: string): Promise<WebhookEndpoint | undefined> {
    await this.ensureTables();
    const { rows } = await this.pool.query<EndpointRow>(`SELECT ${LISTED} FROM ${this.endpoints.name} WHERE id = $1`, [id]);
    return rows[0] && endpointOfRow(rows[0]);
  }

  async forDelivery(id: string): Promise<StoredWebhookEndpoint | undefined> {
    await this.ensureTables();
    const { rows } = await this.pool.query<EndpointRow & { secret: string }>(`SELECT ${LISTED}, secret FROM ${this.endpoints.name} WHERE id = $1`, [id]);
    return rows[0] && storedEndpointOfRow(rows[0]);
  }

  private upsertSql(): string {
    // Only for an endpoint still there: a delivery settled just after its endpoint was removed leaves nothing.
    return `INSERT INTO ${this.log.name} (${DELIVERY_COLUMNS})
      SELECT $1, $2, $3::bigint, $4, $5, $6, $7::integer, $8::integer, $9::text, $10, $11, $12::text
      WHERE EXISTS (SELECT 1 FROM ${this.endpoints.name} WHERE id = $1)
      ON CONFLICT (endpoint_id, event_id) DO UPDATE SET status = EXCLUDED.status, attempts = EXCLUDED.attempts,
        response_code = EXCLUDED.response_code, error = EXCLUDED.error, last_attempt_at = EXCLUDED.last_attempt_at,
        next_retry_at = EXCLUDED.next_retry_at`;
  }

  async recordAttempt(d: DeliveryRecord): Promise<void> {
    await this.ensureTables();
    await this.pool.query(this.upsertSql(), deliveryValues(d));
  }

  async settle(d: DeliveryRecord): Promise<void> {
    await this.ensureTables();
    // One statement: the delivery, the position past it, and the log cut to its last DELIVERY_LOG_SIZE.
    await this.pool.query(
      `WITH up AS (${this.upsertSql()}),
         pos AS (UPDATE ${this.endpoints.name} SET position = GREATEST(position, $3) WHERE id = $1)
       DELETE FROM ${this.log.name} WHERE endpoint_id = $1 AND position < (
         SELECT position FROM ${this.log.name} WHERE endpoint_id = $1 ORDER BY position DESC LIMIT 1 OFFSET $13)`,
      [...deliveryValues(d), DELIVERY_LOG_SIZE - 1],
    );
  }

  async advance(endpointId: string, position: number): Promise<void> {
    await this.ensureTables();
    await this.pool.query(`UPDATE ${this.endpoints.name} SET position = GREATEST(position, $1) WHERE id = $2`, [position, endpointId]);
  }

  async delivery(endpointId: string, eventId: string): Promise<DeliveryRecord | undefined> {
    await this.ensureTables();
    const { rows } = await this.pool.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${this.log.name} WHERE endpoint_id = $1 AND event_id = $2`, [endpointId, eventId]);
    return rows[0] && deliveryOfRow(rows[0]);
  }

  async deliveries(endpointId: string, limit: number): Promise<DeliveryRecord[]> {
    await this.ensureTables();
    const { rows } = await this.pool.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM ${this.log.name} WHERE endpoint_id = $1 ORDER BY position DESC LIMIT $2`, [endpointId, limit]);
    return rows.map(deliveryOfRow);
  }

  async close(): Promise<void> {}
}

import type { WebhookEventType } from '../domain/webhook-events';
import type { DeliveryRecord, DeliveryStatus, StoredWebhookEndpoint, WebhookEndpoint } from './webhook-store.port';

/** Rows of the SQL adapters, to and from the port's records (one mapping for SQLite and PostgreSQL). */

export interface EndpointRow {
  id: string;
  url: string;
  events: string;
  allow_private: number | boolean;
  secret?: string;
  secret_hint: string;
  created_by: string;
  created_at: string;
  position: number | string;
}

export interface DeliveryRow {
  endpoint_id: string;
  event_id: string;
  position: number | string;
  webhook_id: string;
  type: string;
  status: string;
  attempts: number;
  response_code: number | null;
  error: string | null;
  first_attempt_at: string;
  last_attempt_at: string;
  next_retry_at: string | null;
}

export function endpointOfRow(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEventType[],
    allowPrivate: row.allow_private === true || row.allow_private === 1,
    secretHint: row.secret_hint,
    createdBy: row.created_by,
    createdAt: row.created_at,
    position: Number(row.position),
  };
}

export function storedEndpointOfRow(row: EndpointRow & { secret: string }): StoredWebhookEndpoint {
  return { ...endpointOfRow(row), secret: row.secret };
}

export function deliveryOfRow(row: DeliveryRow): DeliveryRecord {
  return {
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    position: Number(row.position),
    webhookId: row.webhook_id,
    type: row.type as WebhookEventType,
    status: row.status as DeliveryStatus,
    attempts: row.attempts,
    ...(row.response_code !== null ? { responseCode: row.response_code } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    firstAttemptAt: row.first_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    ...(row.next_retry_at !== null ? { nextRetryAt: row.next_retry_at } : {}),
  };
}

/** A delivery's values in column order (endpoint_id … next_retry_at). */
export function deliveryValues(d: DeliveryRecord): unknown[] {
  return [d.endpointId, d.eventId, d.position, d.webhookId, d.type, d.status, d.attempts, d.responseCode ?? null, d.error ?? null, d.firstAttemptAt, d.lastAttemptAt, d.nextRetryAt ?? null];
}

export const DELIVERY_COLUMNS = 'endpoint_id, event_id, position, webhook_id, type, status, attempts, response_code, error, first_attempt_at, last_attempt_at, next_retry_at';

import type { WebhookEventType } from '../domain/webhook-events';

/**
 * Webhook endpoints, the position each has been delivered up to in the event log (its outbox
 * position), and the log of its last deliveries: state of the storage, beside the events (SQLite,
 * PostgreSQL; kept in memory for the memory store). The secret is stored to sign with and read
 * back only by the delivery worker (`forDelivery`); every listing leaves it out.
 */

/** An endpoint as it is listed: never its secret. */
export interface WebhookEndpoint {
  /** `wh_…` */
  id: string;
  url: string;
  events: WebhookEventType[];
  /** Added with --allow-private: private, loopback and link-local addresses may be reached. */
  allowPrivate: boolean;
  /** The secret's last four characters, to tell secrets apart. */
  secretHint: string;
  /** `user:<name>` who added it. */
  createdBy: string;
  createdAt: string;
  /** Every event at or before this position of the log is delivered, given up on, or not one it wants. */
  position: number;
}

/** An endpoint with the secret it signs with (`whsec_…`): for the delivery worker. */
export interface StoredWebhookEndpoint extends WebhookEndpoint {
  secret: string;
}

/** `retrying`: not acknowledged yet; `delivered`: a 2xx came back; `failed`: given up on. */
export type DeliveryStatus = 'retrying' | 'delivered' | 'failed';

export interface DeliveryRecord {
  endpointId: string;
  /** The stored event delivered. */
  eventId: string;
  /** Its position in the log. */
  position: number;
  webhookId: string;
  type: WebhookEventType;
  status: DeliveryStatus;
  attempts: number;
  /** The last answer's HTTP status (absent: no answer — a timeout, a refused connection). */
  responseCode?: number;
  /** Why the last attempt failed, in a few words (never a response body). */
  error?: string;
  firstAttemptAt: string;
  lastAttemptAt: string;
  /** When it is tried again (status `retrying`). */
  nextRetryAt?: string;
}

/** How many deliveries each endpoint's log keeps (the oldest go first). */
export const DELIVERY_LOG_SIZE = 100;

export interface WebhookStore {
  add(endpoint: StoredWebhookEndpoint): Promise<void>;
  /** Removes the endpoint and its delivery log; false when there was none. */
  remove(id: string): Promise<boolean>;
  list(): Promise<WebhookEndpoint[]>;
  get(id: string): Promise<WebhookEndpoint | undefined>;
  /** The endpoint with its secret, for signing (the delivery worker only). */
  forDelivery(id: string): Promise<StoredWebhookEndpoint | undefined>;
  /** Records an attempt that is to be retried (by endpoint and event: one row per delivery). */
  recordAttempt(delivery: DeliveryRecord): Promise<void>;
  /** The delivery settled (delivered or failed), and the endpoint's position past its event: one write. */
  settle(delivery: DeliveryRecord): Promise<void>;
  /** Moves the endpoint's position forward (never back) past events it does not want. */
  advance(endpointId: string, position: number): Promise<void>;
  /** One delivery, to go on with its attempts after a restart. */
  delivery(endpointId: string, eventId: string): Promise<DeliveryRecord | undefined>;
  /** The endpoint's last deliveries, newest first. */
  deliveries(endpointId: string, limit: number): Promise<DeliveryRecord[]>;
  close(): Promise<void>;
}

export const WEBHOOK_STORE = Symbol('WEBHOOK_STORE');

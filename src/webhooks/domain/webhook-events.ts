/**
 * What a webhook says, decided from one recorded event: which events of the log word that work
 * waits (a review opened at the gate, a tool call waiting for approval) or has ended (a run's end
 * with its outcome), the payload a chat tool can show, and the `webhook-id` a receiver
 * deduplicates by. Pure: the run's goal and the console's address are given.
 */

import { sha256Hex } from '../../shared/canonical-json';

/** The webhook event types an endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = ['review.opened', 'run.ended', 'approval.requested'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The stored event type each webhook event comes from (all in run streams). */
export const SOURCE_EVENT_OF: Readonly<Record<WebhookEventType, string>> = {
  'review.opened': 'ReviewOpened',
  'run.ended': 'RunEnded',
  'approval.requested': 'ToolApprovalRequested',
};

/** Every stored event type a delivery worker reads. */
export const SOURCE_EVENT_TYPES: readonly string[] = Object.values(SOURCE_EVENT_OF);

export interface WebhookData {
  runId: string;
  goal: string;
  /** review.opened: the review to decide. */
  reviewId?: string;
  iteration?: number;
  /** approval.requested: the approval to decide, and the tool call waiting. */
  approvalId?: string;
  tool?: string;
  risk?: string;
  /** run.ended: the termination reason (COMPLETED, REJECTED, BLOCKED, …) and the final status. */
  outcome?: string;
  status?: string;
  message?: string;
  /** Where a person acts on it in the web console. */
  url: string;
}

/** The JSON body of a delivery (Standard Webhooks: `type`, `timestamp`, `data`). */
export interface WebhookMessage {
  type: WebhookEventType;
  /** When it happened (the event's time), ISO 8601. */
  timestamp: string;
  data: WebhookData;
}

/** What the mapping reads of a recorded event. */
export interface SourceEvent {
  type: string;
  streamId: string;
  data: unknown;
  recordedAt: string;
}

const RUN_PREFIX = 'run-';

/** The run a source event belongs to, or undefined for an event outside a run stream. */
export function runOfSource(event: Pick<SourceEvent, 'streamId'>): string | undefined {
  return event.streamId.startsWith(RUN_PREFIX) ? event.streamId.slice(RUN_PREFIX.length) : undefined;
}

/** The webhook event type of a stored event, or undefined when it words nothing. */
export function webhookTypeOf(event: Pick<SourceEvent, 'type' | 'streamId'>): WebhookEventType | undefined {
  if (runOfSource(event) === undefined) return undefined;
  return WEBHOOK_EVENT_TYPES.find((t) => SOURCE_EVENT_OF[t] === event.type);
}

/** The console's page for a run or a review, under the server's public URL (no trailing slash). */
export function consoleLink(publicUrl: string, target: { runId: string } | { review: true }): string {
  const base = publicUrl.replace(/\/+$/, '');
  return 'runId' in target ? `${base}/#/runs/${encodeURIComponent(target.runId)}` : `${base}/#/reviews`;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * The message a stored event becomes, or undefined when it is not one a webhook words. `goal` is
 * the run's (from its launch); `publicUrl` the server's address as people reach it.
 */
export function webhookMessageOf(event: SourceEvent, goal: string, publicUrl: string): WebhookMessage | undefined {
  const type = webhookTypeOf(event);
  const runId = runOfSource(event);
  if (!type || runId === undefined) return undefined;
  const d = (event.data ?? {}) as Record<string, unknown>;
  const timestamp = str(d.at) ?? event.recordedAt;
  const base = { runId, goal };
  switch (type) {
    case 'review.opened':
      return { type, timestamp, data: { ...base, reviewId: str(d.reviewId), iteration: num(d.iteration), url: consoleLink(publicUrl, { review: true }) } };
    case 'approval.requested':
      return { type, timestamp, data: { ...base, approvalId: str(d.approvalId), tool: str(d.name), risk: str(d.risk), url: consoleLink(publicUrl, { runId }) } };
    case 'run.ended':
      return { type, timestamp, data: { ...base, outcome: str(d.reason), status: str(d.status), ...(str(d.message) ? { message: str(d.message) } : {}), url: consoleLink(publicUrl, { runId }) } };
    default: {
      const never: never = type;
      return never;
    }
  }
}

/**
 * The `webhook-id` of a delivery: the same for every attempt and after every restart (it depends
 * on the endpoint and the event only), distinct per endpoint, so a receiver deduplicates on it.
 */
export function webhookIdOf(endpointId: string, eventId: string): string {
  return `msg_${sha256Hex(`${endpointId}\n${eventId}`).slice(0, 32)}`;
}

/** The event types of a comma-separated list, checked; an unknown or empty list is refused with the reason. */
export function parseWebhookEventTypes(raw: readonly string[]): { ok: true; types: WebhookEventType[] } | { ok: false; reason: string } {
  const types = raw.map((t) => t.trim()).filter((t) => t !== '');
  if (types.length === 0) return { ok: false, reason: `events must name at least one of ${WEBHOOK_EVENT_TYPES.join(', ')}` };
  const unknown = types.find((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown !== undefined) return { ok: false, reason: `unknown webhook event '${unknown.slice(0, 40)}' (one of ${WEBHOOK_EVENT_TYPES.join(', ')})` };
  return { ok: true, types: [...new Set(types)] as WebhookEventType[] };
}

import type { JsonSchema } from './openapi-schemas';

/**
 * What each operation of the OpenAPI document answers: its success (status, and the body of each
 * content type it may send), and which of the errors every route shares apply to it. The errors
 * follow from what the route is — public or not, role-guarded, state-changing, with path values —
 * (docs/API.md, "Request rules"); only the conflicts (409) are the route's own, listed here.
 */

/** How an operation answers when it succeeds: a status and a schema per content type. */
export interface Success {
  status: number;
  description: string;
  /** Content type → schema; none: an empty body. */
  content?: Record<string, JsonSchema>;
}

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ 'application/json': ref(name) });
const text: JsonSchema = { type: 'string' };
/** An event stream as Server-Sent Events: `id: <revision>`, `event: <type>`, `data: <RecordedEvent as JSON>`. */
const sse = (extra: string): JsonSchema => ({
  type: 'string',
  description: `Server-Sent Events, with \`Accept: text/event-stream\`: each stored event as \`id: <revision>\`, \`event: <type>\`, \`data: <RecordedEvent>\`, catch-up then live (\`Last-Event-ID\` resumes after it); ${extra}`,
});

/** By operation id (`Controller_method`, as @nestjs/swagger names them). */
export const SUCCESSES: Readonly<Record<string, Success>> = {
  HealthController_health: { status: 200, description: 'ready (503 `degraded` with the reason otherwise)', content: json('HealthOk') },
  ConsoleSessionController_signIn: { status: 200, description: 'signed in: the session cookie is set', content: json('SignedInView') },
  ConsoleSessionController_current: { status: 200, description: 'who is signed in, or `signedIn: false`', content: json('SessionView') },
  ConsoleSessionController_signOut: { status: 204, description: 'signed out: the cookie is cleared' },
  PasskeysController_list: { status: 200, description: "the signed-in person's passkeys", content: json('PasskeyList') },
  PasskeysController_options: { status: 200, description: 'WebAuthn options for enrolling a passkey', content: json('PasskeyOptions') },
  PasskeysController_enrol: { status: 201, description: 'the passkey enrolled', content: json('PasskeyView') },
  RunsController_launch: { status: 202, description: 'launched (or the original launch of the same idempotency key)', content: json('LaunchAccepted') },
  RunsController_list: { status: 200, description: 'runs, newest first', content: json('RunList') },
  RunsController_get: { status: 200, description: 'the run', content: json('RunSummary') },
  RunsController_cancel: { status: 200, description: 'cancelled', content: json('CancelResult') },
  RunsController_wait: { status: 200, description: 'the run ended, waits for a human, or the wait timed out', content: json('WaitAnswer') },
  RunsController_events: {
    status: 200,
    description: "the run's events",
    content: { 'application/json': ref('RunEventsPage'), 'text/event-stream': sse('live model text as `event: delta` with a TextDelta and no id; the stream closes after the run ends') },
  },
  ReviewsController_statement: { status: 200, description: 'what a reviewer signs to decide this review so', content: json('DecisionStatement') },
  ReviewsController_pending: { status: 200, description: 'reviews waiting for a human', content: json('PendingReviewList') },
  ReviewViewController_one: { status: 200, description: 'the review with its whole history, and whether the caller may decide it', content: json('ReviewView') },
  ReviewsController_approve: { status: 200, description: 'approved: the decision record', content: json('DecisionResult') },
  ReviewsController_reject: { status: 200, description: 'rejected: the decision record', content: json('DecisionResult') },
  DecisionsController_head: { status: 200, description: "the log's last record, signed now by this server", content: json('SignedHead') },
  DecisionsController_keys: { status: 200, description: 'the server signing keys the store knows', content: json('ServerKeyList') },
  DecisionsController_verify: { status: 200, description: 'the chain, every attestation and signature checked', content: json('DecisionLogVerification') },
  DecisionsController_list: {
    status: 200,
    description: 'decision records (`format=json`, paged), or every matching one as NDJSON or CSV',
    content: { 'application/json': ref('DecisionPage'), 'application/x-ndjson': { ...text, description: 'one DecisionRecord per line' }, 'text/csv': { ...text, description: 'a header, then one record per row' } },
  },
  SessionController_workspace: { status: 200, description: "the workspace's files at the end of the iteration, and of the one before", content: json('WorkspaceView') },
  SessionController_context: { status: 200, description: "the run's agent context at the revision, rebuilt from its events", content: json('RunContext') },
  SessionController_resume: { status: 202, description: 'resumed here, or waiting for a process of its pin', content: json('ResumeResult') },
  SessionController_fork: { status: 202, description: 'the new run, forked and launched', content: json('ForkResult') },
  ApprovalsController_statement: { status: 200, description: 'what a reviewer signs to decide this tool call so', content: json('DecisionStatement') },
  ApprovalsController_pending: { status: 200, description: 'tool calls waiting for a human', content: json('PendingApprovalList') },
  ApprovalsController_approve: { status: 200, description: 'approved', content: json('ApprovalResult') },
  ApprovalsController_reject: { status: 200, description: 'rejected: the model is told so', content: json('ApprovalResult') },
  WebhooksController_add: { status: 201, description: 'the endpoint, with its secret (shown only here)', content: json('AddedWebhook') },
  WebhooksController_list: { status: 200, description: 'the endpoints (never a secret), each with its last delivery', content: json('WebhookList') },
  WebhooksController_remove: { status: 204, description: 'removed, with its delivery log' },
  WebhooksController_deliveries: { status: 200, description: "the endpoint's last deliveries, newest first", content: json('WebhookDeliveryList') },
  A2aController_card: {
    status: 200,
    description: "triad's A2A agent card, in the shape of the A2A version asked for",
    content: { 'application/json': { oneOf: [ref('AgentCard'), ref('AgentCardV1')] } },
  },
  MetricsController_metrics: { status: 200, description: 'Prometheus text exposition', content: { 'text/plain': text } },
  ProjectsController_launch: { status: 202, description: 'launched', content: json('ProjectAccepted') },
  ProjectsController_list: { status: 200, description: 'projects, newest first', content: json('ProjectList') },
  ProjectsController_get: { status: 200, description: 'the project', content: json('ProjectView') },
  ProjectsController_cancel: { status: 200, description: 'cancelled', content: json('ProjectView') },
  ProjectsController_retry: { status: 202, description: 'the failed task started again', content: json('ProjectView') },
  ProjectsController_approve: { status: 200, description: 'approved', content: json('ProjectView') },
  ProjectsController_reject: { status: 200, description: 'rejected', content: json('ProjectView') },
  ProjectsController_events: {
    status: 200,
    description: "the project's events",
    content: { 'application/json': ref('ProjectEventsPage'), 'text/event-stream': sse('the stream closes after the project ends') },
  },
};

/** Operations that may answer 409, and when. */
export const CONFLICTS: Readonly<Record<string, string>> = {
  RunsController_launch: 'the idempotency key was used for another launch',
  RunsController_cancel: 'the run has already ended',
  ReviewsController_approve: 'the review is already decided',
  ReviewsController_reject: 'the review is already decided',
  ApprovalsController_approve: 'the tool call is already decided',
  ApprovalsController_reject: 'the tool call is already decided',
  SessionController_resume: 'the run cannot be resumed (ended, or driven by another process)',
  SessionController_fork: 'the run cannot be forked at that turn',
  PasskeysController_enrol: 'no enrolment of this person waits for the answer',
  ProjectsController_launch: 'the idempotency key was used for another project',
  ProjectsController_cancel: 'the project has already ended',
  ProjectsController_retry: 'the task has not failed, or the project has ended',
  ProjectsController_approve: 'the project has no open review',
  ProjectsController_reject: 'the project has no open review',
};

/** Errors of public routes that check something themselves; a schema other than Error where the body differs. */
export const OWN_ERRORS: Readonly<Record<string, Record<number, { description: string; schema?: string }>>> = {
  HealthController_health: { 503: { description: 'degraded: the store or a projection fails, with the reason', schema: 'HealthDegraded' } },
  ConsoleSessionController_signIn: {
    401: { description: 'the API key is not valid' },
    403: { description: 'the request comes from another origin' },
    429: { description: 'too many failed authentications from this address: retry after `Retry-After` seconds' },
  },
  ConsoleSessionController_signOut: { 403: { description: 'a live session cookie without its CSRF token, or from another origin' } },
  MetricsController_metrics: { 401: { description: 'TRIAD_METRICS_KEY is set and the request does not carry it' } },
};

/** What decides which shared errors an operation can answer. */
export interface RouteTraits {
  /** Needs an API key or a console session. */
  authenticated: boolean;
  /** Guarded by a role. */
  roles: boolean;
  /** POST, PUT, PATCH, DELETE: a JSON body (or none), a CSRF token with a session cookie. */
  stateChanging: boolean;
  /** Has path values (an unknown one is 404). */
  pathValues: boolean;
}

const SHARED_ERRORS: Record<number, string> = {
  400: 'malformed input (a query parameter or body field not accepted, a value out of range, text that is not well-formed): nothing is written',
  401: 'no API key or session, or an unknown key',
  403: 'a role this route needs is missing, the decision is not yours to make, or a session cookie without its CSRF token',
  404: 'no such id',
  413: 'the body is over 2 MiB',
  415: 'the body is not application/json (UTF-8)',
  421: 'the Host header names a host this server does not answer for',
  429: 'too many failed authentications from this address: retry after `Retry-After` seconds',
};

/** The error statuses an operation can answer, each with when and the schema of its body. */
export function errorResponses(operationId: string, traits: RouteTraits): Record<number, { description: string; schema: string }> {
  const statuses = [400, 421];
  if (traits.authenticated) statuses.push(401, 429);
  if (traits.authenticated && (traits.roles || traits.stateChanging)) statuses.push(403);
  if (traits.pathValues) statuses.push(404);
  if (traits.stateChanging) statuses.push(413, 415);
  const errors: Record<number, { description: string; schema: string }> = {};
  for (const status of statuses) errors[status] = { description: SHARED_ERRORS[status], schema: 'Error' };
  if (CONFLICTS[operationId]) errors[409] = { description: CONFLICTS[operationId], schema: 'Error' };
  for (const [status, own] of Object.entries(OWN_ERRORS[operationId] ?? {})) errors[Number(status)] = { description: own.description, schema: own.schema ?? 'Error' };
  return errors;
}

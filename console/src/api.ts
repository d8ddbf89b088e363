// The console's typed client of the HTTP API. The bodies' types are the OpenAPI document's, as the
// typed client generates them (clients/typescript/src/schema.d.ts; type-only imports, no runtime).
import type { components } from '../../clients/typescript/src/schema';
// What the document holds as an open object is typed from the server where the console builds it:
// a fork's overrides and a passkey's signature (`Record<string, unknown>` in the document).
import type { ForkOverrides } from '../../src/http/api-types';
import type { WebAuthnSignature } from '../../src/attestation/personal-signature';

type Schemas = components['schemas'];

export type ApiErrorBody = Schemas['Error'];
export type ApprovalResult = Schemas['ApprovalResult'];
export type ChatMessage = Schemas['ChatMessage'];
export type DecisionLogVerification = Schemas['DecisionLogVerification'];
export type DecisionPage = Schemas['DecisionPage'];
export type DecisionRecord = Schemas['DecisionRecord'];
export type DecisionResult = Schemas['DecisionResult'];
export type ForkResult = Schemas['ForkResult'];
export type LaunchAccepted = Schemas['LaunchAccepted'];
export type LaunchRunInput = Schemas['LaunchRunDto'];
export type ListedWebhook = Schemas['ListedWebhook'];
export type PasskeyList = Schemas['PasskeyList'];
export type PasskeyView = Schemas['PasskeyView'];
export type PendingApprovalItem = Schemas['PendingApprovalItem'];
export type PendingReviewItem = Schemas['PendingReview'];
export type ProjectList = Schemas['ProjectList'];
export type ProjectStatus = Schemas['ProjectView']['status'];
export type ProjectView = Schemas['ProjectView'];
/** An event as stored; its `data` is an open object in the document (its fields by type: docs/EVENTS.md). */
export type RecordedEvent = Schemas['RecordedEvent'];
export type ReviewIteration = Schemas['ReviewIteration'];
export type ReviewView = Schemas['ReviewView'];
export type RunContext = Schemas['RunContext'];
export type RunEventsPage = Schemas['RunEventsPage'];
export type RunList = Schemas['RunList'];
export type RunStatus = Schemas['RunStatus'];
export type RunSummary = Schemas['RunSummary'];
export type RoleName = keyof RunSummary['pin'];
export type SessionView = Schemas['SessionView'];
export type SignedInView = Schemas['SignedInView'];
/** `GET /v1/reviews/:id/statement`: what a person signs to decide, and its sha256 as a passkey's challenge (base64url). */
export type StatementView = Schemas['DecisionStatement'];
export type SubAgentSummary = Schemas['SubAgentSummary'];
export type TaskState = Schemas['TaskState'];
export type TextDelta = Schemas['TextDelta'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WorkspaceFile = Schemas['WorkspaceFile'];
export type WorkspaceView = Schemas['WorkspaceView'];

export type { ForkOverrides, WebAuthnSignature };

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const CSRF_HEADER = 'x-csrf-token';
/** How long a read of what a page follows live may wait for its answer. */
const READ_TIMEOUT_MS = 30_000;
let csrfToken: string | undefined;
const signedOutListeners = new Set<() => void>();
/**
 * Which session the page is in: bumped at every sign-in and sign-out. A 401 answering a request
 * sent in an earlier session (a poll still in flight at sign-out) says nothing about the current
 * one, and must not sign out a user who has just signed in again.
 */
let sessionEpoch = 0;
/**
 * Requests of the current session still waiting for their answer, and whether it is being signed
 * out: signing out cancels them and sends no more until the next sign-in, so that no read lands
 * after the session is gone (a 401 the browser would log as a failed request).
 */
const inFlight = new Set<AbortController>();
let signedOut = false;

/** Called when the server says the session is gone (401), so the app shows the sign-in form. */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

/** `polled`: a read of what the pages follow live, given up on after READ_TIMEOUT_MS. */
async function call<T>(method: string, path: string, body?: unknown, options: { polled?: boolean } = {}): Promise<T> {
  const epoch = sessionEpoch;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers[CSRF_HEADER] = csrfToken;
  // A read of what a page follows live (a run's summary, the lists it polls) that the server never
  // answers (a laptop that slept, a network that changed) fails after a while, so that the page,
  // which reads one request at a time, reads again. Other requests are never given up on: a
  // decision may still be carried out, and verifying a long decision log takes as long as it takes.
  const timeout = options.polled ? AbortSignal.timeout(READ_TIMEOUT_MS) : undefined;
  const session = path === '/v1/session';
  if (signedOut && !session) throw new ApiError(0, 'signed out');
  const cancel = new AbortController();
  const signal = timeout ? AbortSignal.any([timeout, cancel.signal]) : cancel.signal;
  if (!session) inFlight.add(cancel);
  let res: Response;
  let text: string;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', signal });
    text = await res.text();
  } catch (err) {
    if (cancel.signal.aborted) throw new ApiError(0, 'signed out');
    if (timeout?.aborted) throw new ApiError(0, `no answer from the server in ${READ_TIMEOUT_MS / 1000} s`);
    throw err;
  } finally {
    inFlight.delete(cancel);
  }
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const err = parsed as ApiErrorBody | undefined;
    const message = err?.message === undefined ? `${res.status} ${res.statusText}` : Array.isArray(err.message) ? err.message.join('; ') : err.message;
    if (res.status === 401 && path !== '/v1/session' && epoch === sessionEpoch) for (const l of signedOutListeners) l();
    throw new ApiError(res.status, message);
  }
  return parsed as T;
}

const q = (params: Record<string, string | number | undefined>): string => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') s.set(k, String(v));
  const text = s.toString();
  return text ? `?${text}` : '';
};

const enc = encodeURIComponent;
const POLLED = { polled: true };

export const api = {
  async signIn(apiKey: string): Promise<SignedInView> {
    const view = await call<SignedInView>('POST', '/v1/session', { apiKey });
    csrfToken = view.csrfToken;
    sessionEpoch += 1;
    signedOut = false;
    return view;
  },
  /** Who is signed in: `signedIn: false` (not a 401) for nobody, so a signed-out page logs no error. */
  async session(): Promise<SessionView> {
    const view = await call<SessionView>('GET', '/v1/session');
    csrfToken = view.signedIn ? view.csrfToken : undefined;
    // Signed in (here, or in another tab since this one signed out): its reads go out again.
    if (view.signedIn) signedOut = false;
    return view;
  },
  async signOut(): Promise<void> {
    sessionEpoch += 1;
    // Nothing of this session is read after it ends: what waits is cancelled, nothing new is sent.
    signedOut = true;
    for (const request of inFlight) request.abort();
    try {
      await call<void>('DELETE', '/v1/session');
    } finally {
      csrfToken = undefined;
    }
  },
  runs: (status?: RunStatus) => call<RunList>('GET', `/v1/runs${q({ status })}`, undefined, POLLED),
  run: (id: string) => call<RunSummary>('GET', `/v1/runs/${enc(id)}`, undefined, POLLED),
  events: (id: string, fromRevision = 0) => call<RunEventsPage>('GET', `/v1/runs/${enc(id)}/events${q({ fromRevision })}`),
  launch: (input: LaunchRunInput) => call<LaunchAccepted>('POST', '/v1/runs', input),
  cancel: (id: string, reason?: string) => call<unknown>('POST', `/v1/runs/${enc(id)}/cancel`, reason ? { reason } : {}),
  resume: (id: string) => call<unknown>('POST', `/v1/runs/${enc(id)}/resume`, {}),
  context: (id: string, revision?: number) => call<RunContext>('GET', `/v1/runs/${enc(id)}/context${q({ revision })}`),
  fork: (id: string, turn: number, overrides?: ForkOverrides) => call<ForkResult>('POST', `/v1/runs/${enc(id)}/fork`, overrides ? { turn, overrides } : { turn }),
  reviews: () => call<{ reviews: PendingReviewItem[] }>('GET', '/v1/reviews', undefined, POLLED),
  review: (id: string) => call<ReviewView>('GET', `/v1/reviews/${enc(id)}`, undefined, POLLED),
  approveReview: (id: string, reason: string, signature?: WebAuthnSignature) => call<DecisionResult>('POST', `/v1/reviews/${enc(id)}/approve`, signature ? { reason, signature } : { reason }),
  rejectReview: (id: string, reason: string, rework: boolean, signature?: WebAuthnSignature) =>
    call<DecisionResult>('POST', `/v1/reviews/${enc(id)}/reject`, signature ? { reason, rework, signature } : { reason, rework }),
  reviewStatement: (id: string, outcome: 'approved' | 'rejected', reason: string) => call<StatementView>('GET', `/v1/reviews/${enc(id)}/statement${q({ outcome, reason })}`),
  passkeys: () => call<PasskeyList>('GET', '/v1/auth/passkeys'),
  passkeyOptions: () => call<PublicKeyCredentialCreationOptionsJSON>('POST', '/v1/auth/passkeys/options', {}),
  enrolPasskey: (response: RegistrationResponseJSON) => call<PasskeyView>('POST', '/v1/auth/passkeys', { response }),
  approvals: () => call<{ approvals: PendingApprovalItem[] }>('GET', '/v1/approvals', undefined, POLLED),
  approveToolCall: (id: string, reason?: string, signature?: WebAuthnSignature) =>
    call<ApprovalResult>('POST', `/v1/approvals/${enc(id)}/approve`, { ...(reason ? { reason } : {}), ...(signature ? { signature } : {}) }),
  rejectToolCall: (id: string, reason: string, signature?: WebAuthnSignature) => call<ApprovalResult>('POST', `/v1/approvals/${enc(id)}/reject`, signature ? { reason, signature } : { reason }),
  approvalStatement: (id: string, outcome: 'approved' | 'rejected', reason?: string) => call<StatementView>('GET', `/v1/approvals/${enc(id)}/statement${q({ outcome, reason })}`),
  decisions: (filter: DecisionFilter) => call<DecisionPage>('GET', `/v1/decisions${q({ ...filter })}`),
  decisionsExportUrl: (filter: DecisionFilter, format: 'ndjson' | 'csv') => `/v1/decisions${q({ ...filter, format })}`,
  verifyDecisions: () => call<DecisionLogVerification>('GET', '/v1/decisions/verify'),
  projects: (status?: ProjectStatus) => call<ProjectList>('GET', `/v1/projects${q({ status })}`, undefined, POLLED),
  project: (id: string) => call<ProjectView>('GET', `/v1/projects/${enc(id)}`, undefined, POLLED),
  cancelProject: (id: string, reason?: string) => call<ProjectView>('POST', `/v1/projects/${enc(id)}/cancel`, reason ? { reason } : {}),
  retryTask: (id: string, key: string) => call<ProjectView>('POST', `/v1/projects/${enc(id)}/tasks/${enc(key)}/retry`, {}),
  approveProject: (id: string, reason: string) => call<ProjectView>('POST', `/v1/projects/${enc(id)}/review/approve`, { reason }),
  rejectProject: (id: string, reason: string) => call<ProjectView>('POST', `/v1/projects/${enc(id)}/review/reject`, { reason }),
  workspace: (id: string, iteration?: number, diff?: 'previous' | 'start') => call<WorkspaceView>('GET', `/v1/runs/${enc(id)}/workspace${q({ iteration, diff })}`),
  webhooks: () => call<{ webhooks: ListedWebhook[] }>('GET', '/v1/webhooks'),
  webhookDeliveries: (id: string) => call<{ deliveries: WebhookDelivery[] }>('GET', `/v1/webhooks/${enc(id)}/deliveries`),
};

export interface DecisionFilter {
  kind?: string;
  runId?: string;
  decider?: string;
  outcome?: string;
  from?: string;
  to?: string;
}

import type { PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/browser';

import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema';
import { errorBody, TriadApiError } from './errors';
import { sseFrames } from './sse';

/**
 * `createTriadClient`: triad's HTTP API through openapi-fetch with the generated types, plus the
 * few things people do most — launch a run, follow its event stream, wait for it, and decide its
 * review — each answering the success body or throwing TriadApiError. `api` is the whole typed
 * client for every other route.
 */

type Schemas = components['schemas'];
export type LaunchRunRequest = Schemas['LaunchRunDto'];
export type LaunchAccepted = Schemas['LaunchAccepted'];
export type RunSummary = Schemas['RunSummary'];
export type RunStatus = Schemas['RunStatus'];
export type WaitAnswer = Schemas['WaitAnswer'];
export type RecordedEvent = Schemas['RecordedEvent'];
export type TextDelta = Schemas['TextDelta'];
export type PendingReview = Schemas['PendingReview'];
export type DecisionResult = Schemas['DecisionResult'];
export type PendingApprovalItem = Schemas['PendingApprovalItem'];
export type ApprovalResult = Schemas['ApprovalResult'];
export type CancelResult = Schemas['CancelResult'];

/** One message of a run's event stream: a stored event (its revision is its SSE id), or live model text. */
export type RunStreamMessage = { kind: 'event'; event: RecordedEvent } | { kind: 'delta'; delta: TextDelta };

export interface TriadClientOptions {
  /** Where triad serves, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** An API key (`triad keys add`, or an entry of TRIAD_API_KEYS); sent as `Authorization: Bearer`. */
  apiKey: string;
  /** Another fetch (a test's, a proxy's); the global one by default. */
  fetch?: typeof fetch;
}

export interface FollowOptions {
  /** The first revision to send (0, the run's first event, by default). */
  fromRevision?: number;
  /** Resume after this revision (an event's `revision`, the SSE id), as an EventSource reconnecting does. */
  lastEventId?: number;
  signal?: AbortSignal;
}

/** What openapi-fetch answers: the success body, or the error body with the response. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function ok<T>(what: string, answer: Answer<T>): T {
  if (answer.error !== undefined || !answer.response.ok) throw new TriadApiError(answer.response.status, errorBody(answer.error), what);
  return answer.data as T;
}

export type TriadClient = ReturnType<typeof createTriadClient>;

export function createTriadClient(options: TriadClientOptions) {
  const api: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const id = (value: string) => ({ path: { id: value } });

  return {
    /** The typed openapi-fetch client of every route (`api.GET('/v1/runs/{id}/context', …)`). */
    api,

    /** `POST /v1/runs`: accepted at once; the run goes on in the server. */
    async launchRun(body: LaunchRunRequest): Promise<LaunchAccepted> {
      return ok('launch', await api.POST('/v1/runs', { body }));
    },

    async getRun(runId: string): Promise<RunSummary> {
      return ok(`run ${runId}`, await api.GET('/v1/runs/{id}', { params: id(runId) }));
    },

    /** Newest first; `limit` 1 to 1,000 (100 by default). */
    async listRuns(query: { status?: RunStatus; limit?: number } = {}): Promise<RunSummary[]> {
      return ok('runs', await api.GET('/v1/runs', { params: { query } })).runs;
    },

    /**
     * `POST /v1/runs/:id/wait`: answers when the run ends (`ok`, `error`), as soon as it waits for a
     * human (`waiting`), or after `timeoutMs` (`timeout`; 30 s by default, at most 10 min).
     */
    async waitForRun(runId: string, { timeoutMs }: { timeoutMs?: number } = {}): Promise<WaitAnswer> {
      const answer = await api.POST('/v1/runs/{id}/wait', { params: { ...id(runId), query: timeoutMs === undefined ? {} : { timeoutMs } } });
      // openapi-fetch's reading of the body leaves out a field whose only value is null (`endedAt` while waiting).
      return ok(`wait for ${runId}`, answer) as WaitAnswer;
    },

    async cancelRun(runId: string, reason?: string): Promise<CancelResult> {
      return ok(`cancel ${runId}`, await api.POST('/v1/runs/{id}/cancel', { params: id(runId), body: reason === undefined ? {} : { reason } }));
    },

    /**
     * The run's events as they happen (`GET /v1/runs/:id/events` as Server-Sent Events): every stored
     * event from `fromRevision`, then live ones, with the model's text as `delta` messages; the
     * iteration ends after the run ends. Leaving the loop early (`break`) closes the connection.
     */
    async *followRun(runId: string, { fromRevision, lastEventId, signal }: FollowOptions = {}): AsyncGenerator<RunStreamMessage> {
      const answer = await api.GET('/v1/runs/{id}/events', {
        params: { ...id(runId), query: fromRevision === undefined ? {} : { fromRevision }, header: lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId } },
        headers: { accept: 'text/event-stream' },
        parseAs: 'stream',
        ...(signal ? { signal } : {}),
      });
      const body = ok(`events of ${runId}`, answer as Answer<ReadableStream<Uint8Array> | null>);
      if (!body) throw new TriadApiError(answer.response.status, undefined, `events of ${runId}: no body`);
      for await (const frame of sseFrames(body)) {
        if (frame.event === 'delta') yield { kind: 'delta', delta: JSON.parse(frame.data) as TextDelta };
        else yield { kind: 'event', event: JSON.parse(frame.data) as RecordedEvent };
      }
    },

    /** Reviews waiting for a human (the reviewer role). */
    async listReviews(): Promise<PendingReview[]> {
      return ok('reviews', await api.GET('/v1/reviews')).reviews;
    },

    /** Approves the work under review; deciding your own run or work you did is 403. */
    async approveReview(reviewId: string, reason: string): Promise<DecisionResult> {
      return ok(`approve ${reviewId}`, await api.POST('/v1/reviews/{id}/approve', { params: id(reviewId), body: { reason } }));
    },

    /** Sends the work back to the executor (while iterations remain), or ends the run with `rework: false`. */
    async rejectReview(reviewId: string, reason: string, { rework }: { rework?: boolean } = {}): Promise<DecisionResult> {
      return ok(`reject ${reviewId}`, await api.POST('/v1/reviews/{id}/reject', { params: id(reviewId), body: rework === undefined ? { reason } : { reason, rework } }));
    },

    /** Risky tool calls waiting for a human, of every run or of one. */
    async listApprovals(query: { runId?: string } = {}): Promise<PendingApprovalItem[]> {
      return ok('approvals', await api.GET('/v1/approvals', { params: { query } })).approvals;
    },

    async approveToolCall(approvalId: string, reason?: string): Promise<ApprovalResult> {
      return ok(`approve ${approvalId}`, await api.POST('/v1/approvals/{id}/approve', { params: id(approvalId), body: reason === undefined ? {} : { reason } }));
    },

    /** The model is told the call was rejected by the user, with the reason. */
    async rejectToolCall(approvalId: string, reason: string): Promise<ApprovalResult> {
      return ok(`reject ${approvalId}`, await api.POST('/v1/approvals/{id}/reject', { params: id(approvalId), body: { reason } }));
    },
  };
}

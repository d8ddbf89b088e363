import { HUMAN_ROLES } from '../auth/roles';
import { DECISION_KINDS, DECISION_OUTCOMES } from '../review-gate/decision-log/decision-record';
import { PROJECT_STATUSES } from '../projects/domain/project-events';
import { PROJECT_STRATEGIES } from '../projects/domain/task-graph';
import { LOOP_STRATEGIES, RUN_STATUSES } from '../team/domain/run-events';
import { ROLES } from '../team/domain/roles';
import { WEBHOOK_EVENT_TYPES } from '../webhooks/domain/webhook-events';

/**
 * The JSON Schemas (OpenAPI 3.0) of every body the API answers with, by component name: what
 * openapi.ts adds to the document beside the request DTOs' schemas, and what the typed client's
 * types are generated from. Each mirrors a server type (named in its description) field for field;
 * an object whose keys are open (an event's payload, a machine snapshot) says so with
 * `additionalProperties: true`, every other object lists all of its fields.
 *
 * One file over 400 lines on purpose: every answer's schema side by side, so a reviewer compares
 * the whole API's bodies with the server's types (test/client/schema-types.ts) in one place.
 */

export type JsonSchema = Record<string, unknown>;

const str: JsonSchema = { type: 'string' };
const int: JsonSchema = { type: 'integer' };
const num: JsonSchema = { type: 'number' };
const bool: JsonSchema = { type: 'boolean' };
const time: JsonSchema = { type: 'string', format: 'date-time' };
const oneOf = (values: readonly string[]): JsonSchema => ({ type: 'string', enum: [...values] });
const list = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const mapOf = (values: JsonSchema): JsonSchema => ({ type: 'object', additionalProperties: values });
const open = (description: string): JsonSchema => ({ type: 'object', additionalProperties: true, description });
const nullable = (schema: JsonSchema): JsonSchema => ({ ...schema, nullable: true });
const described = (description: string, schema: JsonSchema): JsonSchema => ({ ...schema, description });

/** An object with these fields, `optional` ones besides. */
function object(required: Record<string, JsonSchema>, optional: Record<string, JsonSchema> = {}): JsonSchema {
  const names = Object.keys(required);
  return { type: 'object', ...(names.length > 0 ? { required: names } : {}), properties: { ...required, ...optional } };
}

/** An object with one field per team role, each of them (`Record<RoleName, T>`) or any (`Partial`). */
const byRole = (values: JsonSchema, every = true): JsonSchema => {
  const fields = Object.fromEntries(ROLES.map((role) => [role, values]));
  return every ? object(fields) : object({}, fields);
};

const tokens = { inputTokens: int, outputTokens: int };
/** A run's, a role's and a sub-agent's usage (src/team/runs/run-summary.ts TokenUsage): the cost is priced from all four. */
const usageTokens = {
  inputTokens: described("the prompt's tokens not read from the prompt cache", int),
  outputTokens: int,
  cacheReadTokens: described('prompt tokens read from the cache (billed at 0.1x input)', int),
  cacheWriteTokens: described('prompt tokens written to the cache (billed at 1.25x input)', int),
};
const subAgentUsage = object({ ...usageTokens, costUsd: num });
const forkedFrom = object({ runId: str, revision: int, turn: int });
const timeout = object({ policy: str, dueAt: time });
const decided = oneOf(['approved', 'rejected']);
/** Anything JSON: what the server holds as `unknown` (a machine's snapshot, a model's tool input). */
const anything = (description: string): JsonSchema => ({ description });
const runStatus = ref('RunStatus');
/** A workspace file as a reviewer lists it (src/session-replay/workspace-diff.ts WorkspaceFileEntry). */
const fileEntry = { path: str, size: described('bytes of its content (UTF-8)', int), sha256: described('sha256 of its content, hex', str) };
/** An outbound webhook endpoint (src/webhooks/store/webhook-store.port.ts WebhookEndpoint): never its secret. */
const webhookEndpoint = {
  id: described('`wh_…`', str),
  url: str,
  events: list(ref('WebhookEventType')),
  allowPrivate: described('private, loopback and link-local addresses may be reached', bool),
  secretHint: described("the secret's last four characters", str),
  createdBy: str,
  createdAt: time,
  position: described('every event at or before this position of the log is delivered, given up on, or not one it wants', int),
};
const deliveryStatus = oneOf(['retrying', 'delivered', 'failed']);
/** An A2A agent card's skill, in both versions' shape. */
const skill = object({ id: str, name: str, description: str, tags: list(str), examples: list(str), inputModes: list(str), outputModes: list(str) });

export const RESPONSE_SCHEMAS: Record<string, JsonSchema> = {
  RunStatus: oneOf(RUN_STATUSES),
  TerminationReason: oneOf(['COMPLETED', 'REJECTED', 'BLOCKED', 'MAX_ITERATIONS', 'MAX_TURNS', 'BUDGET_EXHAUSTED', 'TIMEOUT', 'CANCELLED', 'STAGNATION', 'SHUTDOWN', 'ERROR']),
  HealthOk: object(
    { status: oneOf(['ok']), store: str, model: str, offlineModel: bool, headPosition: int, sandbox: oneOf(['bubblewrap', 'off', 'unavailable']) },
    { sandboxProblem: described('why the sandbox is unavailable (run_command and stdio MCP servers are refused)', str) },
  ),
  HealthDegraded: object({ statusCode: int, error: str, status: oneOf(['degraded']), reason: str, message: str }),
  Identity: object({ id: described('`user:<name>`', str), name: str, roles: list(oneOf(HUMAN_ROLES)) }),
  SessionView: {
    description: 'who is signed in (`signedIn: true`), or nobody (`signedIn: false`: the probe of a signed-out page)',
    oneOf: [ref('SignedInView'), object({ signedIn: { type: 'boolean', enum: [false] } })],
  },
  SignedInView: object(
    { signedIn: { type: 'boolean', enum: [true] }, identity: ref('Identity') },
    { csrfToken: described('absent when the request was authenticated with a bearer key', str), expiresAt: time },
  ),
  PasskeyView: object({ keyId: str, publicKey: str, rpId: str, origins: list(str), revoked: bool }, { transports: list(str) }),
  PasskeyList: object({ passkeys: list(ref('PasskeyView')) }),
  PasskeyOptions: open('WebAuthn credential creation options (PublicKeyCredentialCreationOptionsJSON)'),
  LaunchAccepted: object({ runId: str, acceptedAt: time }),
  RolePin: object({ provider: str, model: str }, { endpoint: str }),
  LoopSummary: object(
    { strategy: oneOf(LOOP_STRATEGIES), replans: int },
    { running: oneOf(LOOP_STRATEGIES.filter((s) => s !== 'auto')), steps: int, currentStep: object({ index: int, of: int, text: str, status: oneOf(['running', 'completed', 'failed']) }) },
  ),
  PendingApproval: object(
    { approvalId: str, toolUseId: str, role: oneOf(ROLES), turn: int, tool: str, input: open("the tool call's input"), risk: str, requestedAt: time },
    { timeout },
  ),
  SubAgentSummary: object(
    {
      path: str,
      agent: str,
      parent: str,
      role: str,
      task: str,
      depth: int,
      status: oneOf(['pending', 'awaiting_approval', 'queued', 'running', 'completed', 'failed', 'cancelled', 'timed_out']),
      priority: int,
      tools: list(str),
      limits: object({ maxTurns: int, maxTokens: int, timeoutMs: int }),
      turns: int,
      usage: subAgentUsage,
      spawnedAt: time,
    },
    { startedAt: time, endedAt: time, result: str, error: object({ reason: str, message: str }) },
  ),
  GateRefusal: object(
    { type: str, position: int, problem: oneOf(['unsigned', 'bad_signature', 'unknown_signer', 'revoked_signer', 'no_decision', 'misplaced']) },
    { decisionId: str, decider: str, outcome: str },
  ),
  RunSummary: object(
    {
      runId: str,
      goal: str,
      acceptanceCriteria: list(str),
      status: runStatus,
      iteration: int,
      maxIterations: int,
      launchedBy: str,
      provider: str,
      pin: byRole(ref('RolePin')),
      startedAt: time,
      usage: object({ ...usageTokens, costUsd: num, turns: int, byRole: byRole(object({ ...usageTokens, turns: int })) }),
      revision: int,
      position: int,
    },
    {
      phase: str,
      terminationReason: ref('TerminationReason'),
      message: str,
      waitingFor: str,
      sandbox: object({ mode: oneOf(['bubblewrap', 'off']), network: byRole(list(str), false) }),
      endedAt: time,
      forkedFrom,
      project: object({ projectId: str, taskKey: str, attempt: int }),
      pendingReview: object({ reviewId: str, iteration: int, openedAt: time, executor: str, artifactHash: str }, { timeout, escalated: bool }),
      lastVerdict: ref('Verdict'),
      pendingApprovals: list(ref('PendingApproval')),
      subAgents: list(ref('SubAgentSummary')),
      loops: byRole(ref('LoopSummary'), false),
      refused: list(ref('GateRefusal')),
    },
  ),
  Verdict: object({ verdict: str, findings: list(str), summary: str, iteration: int }),
  RunList: object({ runs: list(ref('RunSummary')) }),
  CancelResult: object({ runId: str, status: oneOf(['cancelled']) }),
  WaitAnswer: {
    oneOf: [
      object({ status: oneOf(['waiting']), runStatus, startedAt: time, endedAt: described('null: the run has not ended', { type: 'string', nullable: true, enum: [null] }) }),
      object({ status: oneOf(['ok', 'error', 'timeout']), runStatus, startedAt: time }, { terminationReason: ref('TerminationReason'), endedAt: time }),
    ],
  },
  EventMetadata: {
    ...object({ correlationId: str, causationId: nullable(str), actor: str, schemaVersion: int }, { runId: str }),
    additionalProperties: true,
  },
  RecordedEvent: object({
    id: str,
    type: described('the event type (docs/EVENTS.md)', str),
    streamId: str,
    revision: int,
    position: int,
    data: open("the event's payload, by type (docs/EVENTS.md)"),
    metadata: ref('EventMetadata'),
    recordedAt: time,
  }),
  RunEventsPage: object({ runId: str, events: list(ref('RecordedEvent')) }),
  ProjectEventsPage: object({ projectId: str, events: list(ref('RecordedEvent')) }),
  TextDelta: described('live model text on an event stream (`event: delta`, no id): not stored', object({ role: oneOf(ROLES), turn: int, text: str })),
  DecisionStatement: object({
    statement: described('what is signed, as one line of canonical JSON (`text`; docs/AUDIT.md)', {
      oneOf: [
        object({ kind: oneOf(['review']), runId: str, reviewId: str, iteration: int, artifactHash: str, outcome: decided, reason: str }),
        object({ kind: oneOf(['tool_approval']), runId: str, approvalId: str, inputHash: str, outcome: decided, reason: str }),
      ],
    }),
    text: str,
    challenge: described("the statement's sha256 (base64url): a passkey's challenge", str),
  }),
  PendingReview: object(
    { reviewId: str, iteration: int, openedAt: time, executor: str, artifactHash: str, runId: str, goal: str, acceptanceCriteria: list(str), launchedBy: str },
    { timeout, escalated: bool, lastVerdict: ref('Verdict') },
  ),
  PendingReviewList: object({ reviews: list(ref('PendingReview')) }),
  DecisionResult: object({ decisionId: str, reviewId: str, outcome: str, runStatus: str }),
  PendingApprovalItem: object(
    { approvalId: str, toolUseId: str, role: oneOf(ROLES), turn: int, tool: str, input: open("the tool call's input"), risk: str, requestedAt: time, runId: str, goal: str, launchedBy: str },
    { timeout },
  ),
  PendingApprovalList: object({ approvals: list(ref('PendingApprovalItem')) }),
  ApprovalResult: object({ approvalId: str, runId: str, outcome: oneOf(['approved', 'rejected']), runStatus: str }),
  DecisionRecord: object(
    {
      seq: int,
      prevHash: str,
      hash: str,
      decisionId: str,
      runId: str,
      decider: str,
      deciderKind: oneOf(['human', 'system']),
      outcome: oneOf(DECISION_OUTCOMES),
      reason: str,
      decidedAt: time,
      position: int,
    },
    {
      kind: described('absent for a review decision', oneOf(DECISION_KINDS.filter((k) => k !== 'review'))),
      reviewId: str,
      iteration: int,
      executor: str,
      policy: oneOf(['wait', 'auto_approve', 'auto_deny', 'escalate']),
      acceptanceCriteria: list(str),
      artifactHash: str,
      charterVersion: str,
      approvalId: str,
      toolName: str,
      inputHash: str,
      risk: str,
      role: str,
      turn: int,
    },
  ),
  DecisionPage: object({ decisions: list(ref('DecisionRecord')) }, { nextAfterSeq: int }),
  SignedHead: object({ seq: int, hash: str, at: time, keyId: str, sig: str, token: described('the signed head as one line, for `verify?since=`', str) }),
  ServerKeyList: object({
    keys: list(object({ keyId: str, publicKey: str, registeredBy: str, trusted: bool, position: int, at: time }, { revokedFrom: int, host: str })),
  }),
  DecisionLogVerification: object(
    { ok: bool, checked: int },
    {
      firstBadRecord: object({ seq: int, decisionId: nullable(str), problem: oneOf(['altered', 'removed', 'reordered', 'inserted', 'missing_tail']), detail: str }),
      since: object(
        { hash: str, extends: bool, head: object({ seq: int, hash: str }) },
        { seq: int, detail: str, signedHead: object({ seq: int, at: time, keyId: str }, { problem: str }) },
      ),
      streamGaps: list(object({ streamId: str, missingRevision: int, foundRevision: int })),
      attestations: object(
        {
          ok: bool,
          checked: int,
          personallySigned: int,
          beforeSigning: int,
          issues: list(object({ position: int, type: str, id: str, of: oneOf(['server', 'person']), problem: oneOf(['unsigned', 'bad_signature', 'unknown_signer', 'revoked_signer']) })),
        },
        { signingSince: int },
      ),
    },
  ),
  WorkspaceFile: object({ path: str, content: str }),
  WorkspaceFileEntry: object(fileEntry),
  WorkspaceViewFile: object({ ...fileEntry, content: str }),
  WorkspaceChanges: object(
    {
      against: oneOf(['previous', 'start']),
      changes: list(
        object(
          { path: str, change: oneOf(['added', 'removed', 'changed']) },
          { omitted: described("why the patch leaves this file out (too large to diff, or the answer's diff limit reached): compare its sha256", str) },
        ),
      ),
      patch: described('a unified diff of every changed file not omitted, in path order', str),
    },
    { fromIteration: int },
  ),
  WorkspaceView: object(
    { runId: str, iteration: int, submitted: bool, files: list(ref('WorkspaceViewFile')), iterations: list(int), notReproduced: mapOf(int) },
    { previous: object({ iteration: int, files: list(ref('WorkspaceFile')) }), diff: ref('WorkspaceChanges') },
  ),
  RunContext: object(
    {
      runId: str,
      revision: int,
      status: str,
      iteration: int,
      roles: byRole(object({ messages: list(ref('ChatMessage')), turns: int, usage: object({ ...tokens, costUsd: num, turns: int }, { cacheReadTokens: int, cacheWriteTokens: int }) })),
      usage: object({ ...tokens, costUsd: num, turns: int }),
      machine: object({ team: anything("the team machine's persisted snapshot"), loop: anything("the loop machine's persisted snapshot, or null") }),
      completeness: object({ score: num, events: int, understood: int, missing: list(str) }),
    },
    {
      terminationReason: ref('TerminationReason'),
      phase: str,
      forkedFrom,
      // A sub-agent's context counts its prompt's tokens whole, the cache's among them (src/team/domain/sub-agents.ts).
      subAgents: mapOf(object({ agent: str, role: str, status: str, turns: int, usage: object({ inputTokens: described("the prompt's tokens, those of the prompt cache included", int), outputTokens: int, costUsd: num }), messages: list(ref('ChatMessage')) })),
    },
  ),
  ChatMessage: object({ role: oneOf(['user', 'assistant']), content: { oneOf: [str, list(ref('ContentBlock'))] } }),
  ContentBlock: {
    oneOf: [
      object({ type: oneOf(['text']), text: str }),
      object({ type: oneOf(['tool_use']), id: str, name: str, input: open("the tool call's input") }),
      object({ type: oneOf(['tool_result']), tool_use_id: str, content: str }, { is_error: bool }),
      object({ type: oneOf(['thinking']), thinking: str, signature: str }),
      object({ type: oneOf(['redacted_thinking']), data: str }),
    ],
  },
  ResumeResult: object(
    { runId: str, status: oneOf(['running', 'waiting']) },
    { driver: str, waitingFor: str, repinned: object({ from: byRole(ref('RolePin')), to: byRole(ref('RolePin')) }) },
  ),
  ForkResult: object({ runId: str, forkedFrom, workspaceNote: str }),
  ProjectAccepted: object({ projectId: str, acceptedAt: time }),
  TaskState: object(
    {
      key: str,
      goal: str,
      acceptanceCriteria: list(str),
      dependsOn: list(str),
      status: oneOf(['pending', 'running', 'completed', 'failed', 'skipped', 'cancelled']),
      attempt: int,
      runIds: list(str),
    },
    { runId: str, runStatus: str, terminationReason: str, skippedBecause: str },
  ),
  ProjectView: object(
    {
      projectId: str,
      goal: str,
      acceptanceCriteria: list(str),
      strategy: oneOf(PROJECT_STRATEGIES),
      concurrency: int,
      reviewPolicy: object({ humanGate: bool, perTask: bool, allowLauncherToReview: bool }),
      status: oneOf(PROJECT_STATUSES),
      launchedBy: str,
      launchedAt: time,
      tasks: list(ref('TaskState')),
      runIds: list(str),
      revision: int,
    },
    {
      terminationReason: str,
      message: str,
      endedAt: time,
      endedBy: str,
      planning: object(
        { source: oneOf(['user', 'architect']) },
        {
          architect: object({ model: str }, { toolUseId: str, input: described('the `submit_task_graph` input as the model gave it', {}), text: str, usage: object(tokens) }),
          failure: str,
        },
      ),
      review: object({ openedAt: time }, { decision: object({ decision: oneOf(['approve', 'reject']), by: str, reason: str, at: time }) }),
    },
  ),
  ProjectList: object({ projects: list(ref('ProjectView')) }),
  ReviewView: described(
    'one review with its whole history (src/review-gate/review-view.ts)',
    object(
      {
        reviewId: str,
        runId: str,
        iteration: int,
        state: described('`open`: waits for a decision', oneOf(['unknown', 'decided', 'run_ended', 'superseded', 'open'])),
        run: object({ runId: str, goal: str, launchedBy: str, status: runStatus, maxIterations: int }, { terminationReason: ref('TerminationReason') }),
        acceptanceCriteria: list(str),
        executor: str,
        artifactHash: str,
        openedAt: time,
        iterations: list(ref('ReviewIteration')),
        deciders: object({
          roles: list(oneOf(HUMAN_ROLES)),
          allowLauncherToReview: bool,
          excluded: described('who may not decide whatever their roles', list(object({ identity: str, rule: oneOf(['executor', 'delegation_chain', 'launcher']) }))),
        }),
        notReproduced: described('tool calls whose effects on the workspace the events do not record, by tool', mapOf(int)),
      },
      { caller: described('whether the caller may decide it now, and why not', object({ identity: str, mayDecide: bool }, { reason: str })) },
    ),
  ),
  ReviewIteration: object(
    {
      iteration: int,
      startedBy: described('how it began: the launch, the reviewer agent\'s findings, or a human\'s rejection', {
        oneOf: [
          object({ reason: oneOf(['launch']) }),
          object({ reason: oneOf(['changes_requested']), findings: list(str), at: time }),
          object({ reason: oneOf(['human_rejected']), feedback: str, at: time }, { by: str }),
        ],
      }),
      decisions: list(
        object(
          { outcome: oneOf(DECISION_OUTCOMES), decider: str, deciderKind: oneOf(['human', 'system']), reason: str, at: time },
          { rework: bool, policy: described('the timeout policy that decided', str) },
        ),
      ),
      files: described('the workspace as the executor left it at the end of the iteration', list(ref('WorkspaceFileEntry'))),
      diff: object({ previous: ref('WorkspaceChanges') }, { start: described('the iteration under review only', ref('WorkspaceChanges')) }),
    },
    {
      work: object({ summary: str, files: list(str), at: time }),
      verdict: object({ verdict: oneOf(['APPROVE', 'REQUEST_CHANGES', 'BLOCK']), findings: list(str), summary: str, at: time }),
      review: object({ reviewId: str, openedAt: time, artifactHash: str }),
    },
  ),
  WebhookEventType: oneOf(WEBHOOK_EVENT_TYPES),
  AddedWebhook: object({ ...webhookEndpoint, secret: described('`whsec_…`: shown only in this answer', str) }),
  ListedWebhook: object(webhookEndpoint, {
    lastDelivery: object({ type: ref('WebhookEventType'), status: deliveryStatus, attempts: int, lastAttemptAt: time }, { responseCode: int, nextRetryAt: time }),
  }),
  WebhookList: object({ webhooks: list(ref('ListedWebhook')) }),
  WebhookDelivery: object(
    {
      endpointId: str,
      eventId: described('the stored event delivered', str),
      position: described('its position in the log', int),
      webhookId: str,
      type: ref('WebhookEventType'),
      status: deliveryStatus,
      attempts: int,
      firstAttemptAt: time,
      lastAttemptAt: time,
    },
    {
      responseCode: described("the last answer's HTTP status (absent: no answer)", int),
      error: described('why the last attempt failed, in a few words', str),
      nextRetryAt: described('when it is tried again (status `retrying`)', time),
    },
  ),
  WebhookDeliveryList: object({ deliveries: list(ref('WebhookDelivery')) }),
  AgentCard: described(
    "triad's A2A agent card in A2A 0.3's shape (no `A2A-Version`, or `0.3`; src/integrations/a2a/agent-card.ts)",
    object({
      protocolVersion: str,
      name: str,
      description: str,
      url: described('the JSON-RPC endpoint', str),
      preferredTransport: oneOf(['JSONRPC']),
      additionalInterfaces: list(object({ url: str, transport: str })),
      version: str,
      capabilities: object({ streaming: bool, pushNotifications: bool, stateTransitionHistory: bool }),
      securitySchemes: mapOf(object({ type: str, scheme: str, description: str })),
      security: list(mapOf(list(str))),
      defaultInputModes: list(str),
      defaultOutputModes: list(str),
      skills: list(skill),
      supportsAuthenticatedExtendedCard: bool,
    }),
  ),
  AgentCardV1: described(
    "the same card in A2A 1.0's JSON shape (`A2A-Version: 1.0`), as the A2A SDK writes it",
    object({
      name: str,
      description: str,
      supportedInterfaces: list(object({ url: str, protocolBinding: str, protocolVersion: str })),
      version: str,
      capabilities: object({ streaming: bool, pushNotifications: bool, extendedAgentCard: bool }),
      securitySchemes: open('security schemes by name (A2A 1.0 SecurityScheme)'),
      securityRequirements: list(open('A2A 1.0 SecurityRequirement')),
      defaultInputModes: list(str),
      defaultOutputModes: list(str),
      skills: list(skill),
    }),
  ),
};

/**
 * The generated client's types against the server's own, both ways: `npm run lint`'s type check
 * fails when a body the OpenAPI document describes and the type the server answers with disagree
 * (a field missing, extra, optional on one side only, or of another type). The answers of real
 * calls are checked against the document itself by test/http/openapi.e2e.spec.ts.
 */
import type { components } from '../../clients/typescript/src/schema';
import type * as Server from '../../src/http/api-types';
import type { WaitAnswer as ServerWaitAnswer } from '../../src/team/runs/run-wait';
import type { ResumeResult as ServerResumeResult } from '../../src/session-replay/resume-run';
import type { SignedHead } from '../../src/attestation/attestation';
import type { KeyRing } from '../../src/attestation/key-ring';
import type { DecisionStatement } from '../../src/attestation/personal-signature';
import type { AddedWebhook } from '../../src/webhooks/webhooks.service';
import type { RolePin } from '../../src/team/domain/model-pin';
import type { AgentCardV03 } from '../../src/integrations/a2a/agent-card';

type Schemas = components['schemas'];

/** Whether a field of this type may be left out of the JSON: it may be undefined (`unknown`, any JSON, is there). */
type Omittable<V> = unknown extends V ? false : undefined extends V ? true : false;

/**
 * A server type as its JSON reads: a field whose value may be undefined is left out of the JSON,
 * so it is an optional field there.
 */
type Json<T> = T extends readonly (infer U)[]
  ? Json<U>[]
  : T extends object
    ? { [K in keyof T as Omittable<T[K]> extends true ? never : K]: Json<T[K]> } & { [K in keyof T as Omittable<T[K]> extends true ? K : never]?: Json<Exclude<T[K], undefined>> }
    : T;

/**
 * `true` when the document's type and the server's JSON are assignable to each other and have the
 * same fields (an optional field the document leaves out would pass assignability); otherwise a
 * type naming what fails, which `same` refuses.
 */
type Same<Document, Server> = [Document] extends [Json<Server>]
  ? [Json<Server>] extends [Document]
    ? [Exclude<keyof Json<Server>, keyof Document>] extends [never]
      ? true
      : { undocumented: Exclude<keyof Json<Server>, keyof Document> }
    : { notAssignable: 'server → document'; server: Server; document: Document }
  : { notAssignable: 'document → server'; document: Document; server: Server };

/** Compiles only when its type argument is `true`. */
function same<_T extends true>(): void {}

same<Same<Schemas['RunSummary'], Server.RunSummary>>();
same<Same<Schemas['RunList'], Server.RunList>>();
same<Same<Schemas['LaunchAccepted'], Server.LaunchAccepted>>();
same<Same<Schemas['WaitAnswer'], ServerWaitAnswer>>();
same<Same<Schemas['PendingApproval'], Server.PendingApproval>>();
same<Same<Schemas['SubAgentSummary'], Server.SubAgentSummary>>();
same<Same<Schemas['PendingReview'], Server.PendingReviewItem>>();
same<Same<Schemas['PendingApprovalItem'], Server.PendingApprovalItem>>();
same<Same<Schemas['DecisionResult'], Server.DecisionResult>>();
same<Same<Schemas['ApprovalResult'], Server.ApprovalResult>>();
same<Same<Schemas['DecisionRecord'], Server.DecisionRecord>>();
same<Same<Schemas['DecisionPage'], Server.DecisionPage>>();
same<Same<Schemas['SessionView'], Server.SessionView>>();
same<Same<Schemas['PasskeyView'], Server.PasskeyView>>();
same<Same<Schemas['WorkspaceView'], Server.WorkspaceView>>();
same<Same<Schemas['ForkResult'], Server.ForkResult>>();
same<Same<Schemas['ResumeResult'], ServerResumeResult>>();
same<Same<Schemas['ProjectView'], Server.ProjectView>>();
same<Same<Schemas['ProjectList'], Server.ProjectList>>();
same<Same<Schemas['TaskState'], Server.TaskState>>();
same<Same<Schemas['TextDelta'], Server.TextDelta>>();
same<Same<Schemas['Error'], Server.ApiErrorBody>>();
same<Same<Schemas['DecisionLogVerification'], Server.DecisionLogVerification>>();
same<Same<Schemas['SignedHead'], Server.DecisionLogHead & SignedHead & { token: string }>>();
same<Same<Schemas['ServerKeyList'], { keys: KeyRing['registered'] }>>();
same<Same<Schemas['Identity'], Server.Identity>>();
same<Same<Schemas['RunContext'], Server.RunContext>>();
same<Same<Schemas['ChatMessage'], Server.ChatMessage>>();
same<Same<Schemas['DecisionStatement'], { statement: DecisionStatement; text: string; challenge: string }>>();
same<Same<Schemas['SignedInView'], Server.SignedInView>>();
same<Same<Schemas['WorkspaceFileEntry'], Server.WorkspaceFileEntry>>();
same<Same<Schemas['WorkspaceChanges'], Server.WorkspaceChanges>>();
same<Same<Schemas['ReviewView'], Server.ReviewView>>();
same<Same<Schemas['ReviewIteration'], Server.ReviewIteration>>();
same<Same<Schemas['RolePin'], RolePin>>();
same<Same<Schemas['AddedWebhook'], AddedWebhook>>();
same<Same<Schemas['ListedWebhook'], Server.ListedWebhook>>();
same<Same<Schemas['WebhookList'], { webhooks: Server.ListedWebhook[] }>>();
same<Same<Schemas['WebhookDelivery'], Server.WebhookDelivery>>();
same<Same<Schemas['WebhookDeliveryList'], { deliveries: Server.WebhookDelivery[] }>>();
same<Same<Schemas['AgentCard'], AgentCardV03>>();

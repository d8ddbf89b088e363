import { randomBytes, randomUUID } from 'node:crypto';
import type { EventStore, NewEvent } from '../src/events/event-store/event-store.port';
import { charterVersion } from '../src/team/domain/charter';
import { reviewIdOf } from '../src/team/domain/review-id';
import { agentIdentity, toRunStreamId } from '../src/team/domain/run-events';
import { buildRunLaunched, type LaunchRunInput } from '../src/team/commands/launch';
import { OFFLINE_MODEL_ID } from '../src/team/models/offline.model';
import { ROLE_PROMPTS } from '../src/team/domain/prompts';

/*
 * A run brought to the human review gate without its agents: shared by the decisions benchmark
 * (which approves thousands of them over HTTP) and the decision-log tests. It lives with the
 * benchmarks, outside src/: it appends a run's events straight to the store, as the program never does.
 */

const DEFAULT_CRITERIA = ['file hello.txt contains "Hello"', 'the tests pass'];

export interface SeedReviewOptions {
  runId?: string;
  /** `user:<name>` of the launcher (who may not decide, by default). */
  launchedBy: string;
  goal?: string;
  acceptanceCriteria?: string[];
  reviewPolicy?: LaunchRunInput['reviewPolicy'];
  now?: Date;
}

/**
 * Launches a run (the real launch path) and appends, through the domain's events, what its
 * agents would have done up to the human gate: plan, work, an APPROVE verdict and the open
 * review — one append, no model. Used where the review gate, not the agents, is measured or tested.
 */
export async function seedRunAwaitingReview(store: EventStore, options: SeedReviewOptions): Promise<{ runId: string; reviewId: string }> {
  const runId = options.runId ?? `run_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
  const now = options.now ?? new Date();
  const at = now.toISOString();
  // The whole run in one append: a serving process's dispatcher wakes on RunLaunched, and its
  // driver must find the run already at the gate (nothing to do), not half written.
  const launched = buildRunLaunched(
    { goal: options.goal ?? 'Write a greeting', acceptanceCriteria: options.acceptanceCriteria ?? DEFAULT_CRITERIA, reviewPolicy: options.reviewPolicy },
    { runId, launchedBy: options.launchedBy, now, provider: 'offline', defaultModel: OFFLINE_MODEL_ID },
  );
  const stream = toRunStreamId(runId);
  const phase = (p: 'planning' | 'executing' | 'reviewing', role: 'architect' | 'executor' | 'reviewer') => ({
    type: 'PhaseStarted',
    data: { phase: p, role, iteration: 1, agent: agentIdentity(role, runId), system: ROLE_PROMPTS[role], tools: launched.team[role].tools, maxTurns: launched.team[role].maxTurns, at },
  });
  const timeout = launched.reviewPolicy.timeout;
  const events: NewEvent[] = [
    { type: 'RunLaunched', data: launched },
    phase('planning', 'architect'),
    { type: 'PlanSubmitted', data: { toolUseId: `toolu_${runId}_plan`, plan: '1. write hello.txt', steps: ['write hello.txt'], at } },
    phase('executing', 'executor'),
    { type: 'WorkSubmitted', data: { toolUseId: `toolu_${runId}_work`, iteration: 1, summary: 'wrote hello.txt', files: ['hello.txt'], at } },
    phase('reviewing', 'reviewer'),
    { type: 'VerdictSubmitted', data: { toolUseId: `toolu_${runId}_verdict`, iteration: 1, verdict: 'APPROVE', findings: [], summary: 'all criteria met', at } },
    {
      type: 'ReviewOpened',
      data: {
        reviewId: reviewIdOf(runId, 1),
        iteration: 1,
        executor: agentIdentity('executor', runId),
        artifactHash: `sha256:${randomBytes(32).toString('hex')}`,
        charterVersion: charterVersion(ROLE_PROMPTS.executor, launched.team.executor),
        ...(timeout.policy !== 'wait' ? { timeout: { policy: timeout.policy, dueAt: new Date(now.getTime() + (timeout.afterMs ?? 0)).toISOString() } } : {}),
        at,
      },
    },
  ];
  await store.append(
    stream,
    events.map((e) => ({
      ...e,
      metadata: { runId, correlationId: runId, actor: e.type === 'RunLaunched' ? options.launchedBy : e.type === 'ReviewOpened' ? 'system' : agentIdentity('executor', runId) },
    })),
    { expectedRevision: 'no_stream' },
  );
  return { runId, reviewId: reviewIdOf(runId, 1) };
}

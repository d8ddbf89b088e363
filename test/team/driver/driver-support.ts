import { commandPathFor } from '../../../src/events/command-handling';
import type { FairShare } from '../../../src/team/dispatch/fair-share';
import type { CheckpointStore } from '../../../src/checkpoint/checkpoint-store.port';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { toRunStreamId } from '../../../src/team/domain/run-events';
import { launchRun, type LaunchRunInput } from '../../../src/team/commands/launch';
import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse, type RoleName } from '../../../src/team/models/model.port';
import { toolUseResponse, type ScriptFunction, type ScriptStep } from '../../../src/team/models/scripted.model';
import type { Clock } from '../../../src/shared/ports';
import { RunDriver } from '../../../src/team/driver/run-driver';
import type { RetryPolicy } from '../../../src/team/domain/resilience/policies';
import type { RunObserver } from '../../../src/team/driver/step-context';
import { createDefaultToolRegistry } from '../../../src/team/tools/tool-registry';
import { createWorkspace } from '../../../src/team/tools/workspace';
import { tempDir } from '../../support/temp-dir';

/** Retries that never wait long, so failing scripts fail fast. */
export const FAST_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 };

export interface HarnessOptions {
  model: ModelProvider;
  launch?: Partial<LaunchRunInput>;
  retry?: RetryPolicy;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  observer?: RunObserver;
  clock?: Clock;
  runId?: string;
  owner?: string;
  fairShare?: Pick<FairShare, 'turn'>;
  logger?: { warn(message: string): void };
  checkpoints?: CheckpointStore;
  /** The store's limit per event (its default when undefined). */
  maxEventBytes?: number;
}

export interface Harness {
  runId: string;
  store: InMemoryEventStore;
  driver: RunDriver;
  /** The run's workspace (real path). */
  workspace: string;
  events(): Promise<RecordedEvent[]>;
  types(): Promise<string[]>;
  remove(): void;
}

let counter = 0;

/** A launched run on an in-memory store, with a temp workspace and the real built-in tools. */
export async function startRun(options: HarnessOptions): Promise<Harness> {
  const dir = tempDir('triad-driver-');
  const store = new InMemoryEventStore({ maxEventBytes: options.maxEventBytes });
  const runId = options.runId ?? `run_driver_${process.pid}_${++counter}`;
  const clock = options.clock ?? { now: () => Date.now() };
  const workspace = await createWorkspace(dir.path, runId);
  await launchRun(
    commandPathFor(store),
    { goal: 'Write hello.txt', acceptanceCriteria: ['file hello.txt contains "Hello"'], ...options.launch },
    { runId, launchedBy: 'user:ann', now: new Date(clock.now()), provider: options.model.name, defaultModel: 'scripted' },
  );
  const driver = new RunDriver(runId, {
    store,
    model: options.model,
    tools: createDefaultToolRegistry(),
    clock,
    ids: { newId: () => randomUUID() },
    workspaceRoot: dir.path,
    retry: options.retry ?? FAST_RETRY,
    sleep: options.sleep,
    observer: options.observer,
    owner: options.owner,
    fairShare: options.fairShare as FairShare | undefined,
    logger: options.logger,
    checkpoints: options.checkpoints,
  });
  const events = () => store.readStream(toRunStreamId(runId));
  return {
    runId,
    store,
    driver,
    workspace,
    events,
    types: async () => (await events()).map((e) => e.type),
    remove: () => dir.remove(),
  };
}

/**
 * A script per role: each role's steps are answered in order. A role that runs out of steps gets a
 * permanent model error, so a wrong script ends the run ERROR at once instead of hanging.
 */
export function roleScript(steps: Partial<Record<RoleName, ScriptStep[] | ((request: ModelRequest, n: number) => ScriptStep)>>): ScriptFunction {
  const served: Record<RoleName, number> = { architect: 0, executor: 0, reviewer: 0 };
  return (request) => {
    const n = served[request.role]++;
    const script = steps[request.role];
    if (typeof script === 'function') return script(request, n);
    return script?.[n] ?? new ModelError('invalid_request', `script: no step ${n + 1} for the ${request.role}`);
  };
}

export const plan = (text = '1. write hello.txt'): ModelResponse => toolUseResponse('submit_plan', { plan: text });
export const writeFile = (path = 'hello.txt', content = 'Hello\n'): ModelResponse => toolUseResponse('write_file', { path, content });
export const submitWork = (summary = 'wrote hello.txt'): ModelResponse => toolUseResponse('submit_work', { summary, files: ['hello.txt'] });
export const verdict = (v: 'APPROVE' | 'REQUEST_CHANGES' | 'BLOCK', findings: string[] = [], summary = `verdict ${v}`): ModelResponse =>
  toolUseResponse('submit_verdict', { verdict: v, findings, summary });

/** Event data of one type, in order. */
export function dataOf<T = Record<string, unknown>>(events: RecordedEvent[], type: string): T[] {
  return events.filter((e) => e.type === type).map((e) => e.data as T);
}

/** Processes of a process group that are alive (zombies excluded: PID 1 here may never reap them). */
export function liveProcessesInGroup(pgid: number): number[] {
  const live: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // Fields after "(comm)": state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') live.push(Number(entry));
  }
  return live;
}

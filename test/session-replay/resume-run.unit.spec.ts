import type { Identity } from '../../src/auth/identity';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { commandPathFor } from '../../src/events/command-handling';
import { resumeRun, type ResumingSupervisor } from '../../src/session-replay/resume-run';
import { ConflictError } from '../../src/shared/errors';
import { toRunStreamId } from '../../src/team/domain/run-events';
import type { RunLeases } from '../../src/team/leases/run-leases.port';
import { awaitingReview, RUN_ID as GATE_RUN_ID } from '../review-gate/gate/review-fixtures';

// Resume asked of a run this process's driver has not let go of yet: the run's events decide.

const OWNER = 'host:1:me';
const ANN = { id: 'user:ann', name: 'ann', roles: ['operator'] } satisfies Identity;

function handlerOver(store: InMemoryEventStore, driving: boolean) {
  const supervisor = { owner: OWNER, isDriving: () => driving, wake: async () => ({ driving: true }), pinWait: () => undefined } satisfies ResumingSupervisor;
  const leases = { holder: async () => (driving ? OWNER : undefined) } as unknown as RunLeases;
  const checkpoints = { latest: async () => undefined, save: async () => undefined, close: async () => undefined };
  const deps = { path: commandPathFor(store), checkpoints, leases, clock: { now: () => Date.parse('2026-01-01T00:00:00Z') }, supervisor };
  return (runId: string) => resumeRun(deps, runId, ANN);
}

describe('resume of a run its driver is still winding down', () => {
  it('given a run that reached the human gate while its driver is still on it, when resumed, then it is a conflict and nothing is recorded', async () => {
    const store = new InMemoryEventStore();
    await store.append(toRunStreamId(GATE_RUN_ID), awaitingReview());
    const before = await store.readStream(toRunStreamId(GATE_RUN_ID));
    const outcome = handlerOver(store, true)(GATE_RUN_ID);
    await expect(outcome).rejects.toBeInstanceOf(ConflictError);
    await expect(outcome).rejects.toThrow(/waits for a human review/);
    expect(await store.readStream(toRunStreamId(GATE_RUN_ID))).toHaveLength(before.length);
  });

  it('given a run its driver is on and that is still being worked on, when resumed, then it answers that this process drives it', async () => {
    const store = new InMemoryEventStore();
    const events = awaitingReview();
    await store.append(toRunStreamId(GATE_RUN_ID), events.slice(0, 1));
    await expect(handlerOver(store, true)(GATE_RUN_ID)).resolves.toEqual({
      runId: GATE_RUN_ID,
      status: 'running',
      driver: OWNER,
    });
  });

  it('given a run its driver has just suspended for a shutdown and not yet let go of, when resumed, then it is a conflict and nothing is recorded', async () => {
    const store = new InMemoryEventStore();
    const events = awaitingReview();
    await store.append(toRunStreamId(GATE_RUN_ID), [...events.slice(0, 1), { type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner: OWNER, at: '2026-01-01T00:00:00.000Z' } }]);
    const before = await store.readStream(toRunStreamId(GATE_RUN_ID));
    const outcome = handlerOver(store, true)(GATE_RUN_ID);
    await expect(outcome).rejects.toBeInstanceOf(ConflictError);
    await expect(outcome).rejects.toThrow(/is being suspended by this process/);
    expect(await store.readStream(toRunStreamId(GATE_RUN_ID))).toHaveLength(before.length);
  });
});

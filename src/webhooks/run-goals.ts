import type { EventStore } from '../events/event-store/event-store.port';
import type { RunForkedData, RunLaunchedData } from '../team/domain/run-events';
import { toRunStreamId } from '../team/domain/run-events';

/** How many goals are remembered (a run's webhooks come close together: its review, its end). */
const REMEMBERED = 1000;

/**
 * A run's goal for webhook payloads, from the run's first event (its launch, or a fork's launch
 * view); remembered for the next webhooks of the same run. A run whose first event is neither
 * has the empty goal.
 */
export function runGoals(store: Pick<EventStore, 'readStream'>): (runId: string) => Promise<string> {
  const goals = new Map<string, string>();
  return async (runId) => {
    const known = goals.get(runId);
    if (known !== undefined) return known;
    const [first] = await store.readStream(toRunStreamId(runId), { maxCount: 1 });
    const goal =
      first?.type === 'RunLaunched' ? (first.data as RunLaunchedData).goal : first?.type === 'RunForked' ? ((first.data as RunForkedData).view?.launched?.goal ?? '') : '';
    if (goals.size >= REMEMBERED) goals.delete(goals.keys().next().value!);
    goals.set(runId, goal);
    return goal;
  };
}

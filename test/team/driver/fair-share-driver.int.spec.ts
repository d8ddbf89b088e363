import type { ModelCallCompletedData } from '../../../src/team/domain/run-events';
import { runStatus } from '../../../src/team/domain/run-state';
import { FairShare } from '../../../src/team/dispatch/fair-share';
import { ScriptedModelProvider } from '../../../src/team/models/scripted.model';
import { dataOf, plan, roleScript, startRun, submitWork, verdict, writeFile, type Harness } from './driver-support';

// The run driver taking turns on a shared FairShare.

const script = () =>
  new ScriptedModelProvider(
    roleScript({
      architect: [plan()],
      executor: [writeFile('hello.txt', 'Hello\n'), submitWork()],
      reviewer: [verdict('APPROVE')],
    }),
  );

let harnesses: Harness[] = [];
afterEach(() => {
  harnesses.forEach((h) => h.remove());
  harnesses = [];
});

describe('RunDriver with a FairShare', () => {
  it('given a driver stopped while it waits for its first turn, then it neither claims the run nor writes anything', async () => {
    const h = await startRun({ model: script(), owner: 'node-a', fairShare: new FairShare(4, () => 0) });
    harnesses.push(h);
    const driving = h.driver.drive();
    h.driver.stop('shutdown');
    await driving;
    expect(await h.types()).toEqual(['RunLaunched']);
  });

  it('given several runs sharing one FairShare, then each runs to the end, claimed once, as it would alone', async () => {
    const share = new FairShare(1);
    for (let i = 0; i < 4; i++) harnesses.push(await startRun({ model: script(), owner: 'node-a', fairShare: share, launch: { reviewPolicy: { humanGate: false } } }));
    const states = await Promise.all(harnesses.map((h) => h.driver.drive()));
    expect(states.map((s) => runStatus(s))).toEqual(['completed', 'completed', 'completed', 'completed']);
    for (const h of harnesses) expect((await h.types()).filter((t) => t === 'DriverClaimed')).toHaveLength(1);
  });

  it('given a wait for the turn after a model response, then the recorded duration of the call does not include that wait', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    // Each turn costs a (fake) second of waiting; the model itself answers in no time.
    const slow = { turn: () => ((now += 1000), Promise.resolve()) };
    const h = await startRun({ model: script(), clock: { now: () => now }, fairShare: slow, launch: { reviewPolicy: { humanGate: false } } });
    harnesses.push(h);
    await h.driver.drive();
    const durations = dataOf<ModelCallCompletedData>(await h.events(), 'ModelCallCompleted').map((d) => d.durationMs);
    expect(durations.length).toBeGreaterThanOrEqual(4);
    expect(durations.every((d) => d === 0)).toBe(true);
  });
});

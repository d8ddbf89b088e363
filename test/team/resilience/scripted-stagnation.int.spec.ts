import type { RunEndedData, StagnationWarnedData } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { ScriptedModelProvider } from '../../../src/team/models/scripted.model';
import { call, dataOf, expectReplayMatchesLive, lastUserMessage, plan, roleScript, startHarness, submitWork, verdict, type Harness } from './resilience-support';

// Stagnation on the scripted model: a corrective message first (StagnationWarned, then carried by
// the next ModelCallStarted), the run's end if it persists; repeated findings end it at team level.

let h: Harness | undefined;
afterEach(() => {
  h?.remove();
  h = undefined;
});

const readSame = () => call('read_file', { path: 'notes.txt' });

describe('stagnation in the agent loop', () => {
  it('repeating the same call: warned once, then the run ends STAGNATION', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: () => readSame() }));
    h = await startHarness({ model, launch: { stagnation: {} } });
    const state = await h.driver.drive();
    const events = await h.events();

    expect(terminationReason(state)).toBe('STAGNATION');
    const [warned] = dataOf<StagnationWarnedData>(events, 'StagnationWarned');
    expect(warned).toMatchObject({ role: 'executor', turn: 6, signal: 'repetition', ratio: 0.833 });
    expect(warned.fingerprints).toEqual([expect.stringMatching(/^read_file:[0-9a-f]{16}$/)]);
    // The warning went out with the 7th call, after the 6th call's tool result.
    const calls = model.calls.filter((c) => c.role === 'executor');
    const seventh = lastUserMessage(calls[6]);
    expect((seventh.content as Array<{ type: string; text?: string }>).map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect((seventh.content as Array<{ text?: string }>)[1].text).toBe(warned.message);
    // Six more of the same after the warning: the end, with 12 calls in all.
    expect(calls).toHaveLength(12);
    expect(dataOf<RunEndedData>(events, 'RunEnded')[0]).toMatchObject({
      status: 'failed',
      reason: 'STAGNATION',
      message: expect.stringMatching(/^the executor is stuck after 1 corrective message\(s\): 83% of the last 6 tool calls repeat/),
    });
    await expectReplayMatchesLive(h, state);
  });

  it('an A→B→A→B cycle is detected after four turns', async () => {
    const model = new ScriptedModelProvider(
      roleScript({ architect: [plan()], executor: (_r, i) => (i % 2 === 0 ? call('read_file', { path: 'a.txt' }) : call('list_files', {})) }),
    );
    h = await startHarness({ model, launch: { stagnation: { maxWarnings: 0 } } });
    const state = await h.driver.drive();
    expect(terminationReason(state)).toBe('STAGNATION');
    expect(model.calls.filter((c) => c.role === 'executor')).toHaveLength(4);
    expect(dataOf<RunEndedData>(await h.events(), 'RunEnded')[0].message).toMatch(/repeat a cycle of 2 \(read_file → list_files → read_file → list_files\)/);
    await expectReplayMatchesLive(h, state);
  });

  it('an agent that changes course after the warning carries on', async () => {
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: (request, i) => {
          const warned = JSON.stringify(request.messages).includes('You seem to be stuck');
          if (!warned) return readSame();
          return i < 9 ? call('write_file', { path: `f${i}.txt`, content: `${i}` }) : submitWork();
        },
        reviewer: [verdict('APPROVE')],
      }),
    );
    h = await startHarness({ model, launch: { stagnation: {} } });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(await h.events(), 'StagnationWarned')).toHaveLength(1);
    await expectReplayMatchesLive(h, state);
  });

  it('runs launched without a stagnation policy are not stopped (as before)', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: (_r, i) => (i < 12 ? readSame() : submitWork()), reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(await h.events(), 'StagnationWarned')).toEqual([]);
  });
});

describe('stagnation at team level', () => {
  it('a REQUEST_CHANGES repeating the previous findings ends the run STAGNATION instead of burning iterations', async () => {
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: () => submitWork(),
        reviewer: [verdict('REQUEST_CHANGES', ['Say "world" too.']), verdict('REQUEST_CHANGES', ['say "World" too'])],
      }),
    );
    h = await startHarness({ model, launch: { maxIterations: 5, stagnation: {} } });
    const state = await h.driver.drive();
    expect(terminationReason(state)).toBe('STAGNATION');
    expect(state.team.context.iteration).toBe(2);
    expect(dataOf<RunEndedData>(await h.events(), 'RunEnded')[0].message).toMatch(/the reviewer requested the same changes as in the previous iteration/);
    await expectReplayMatchesLive(h, state);
  });
});

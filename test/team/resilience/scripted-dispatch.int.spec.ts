import { hostProcessesWith, uniqueSleep } from '../../support/host-processes';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import type { RunEndedData, ToolCallCompletedData } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { ScriptedModelProvider } from '../../../src/team/models/scripted.model';
import { waitFor } from '../../support/wait-for';
import {
  dataOf,
  expectReplayMatchesLive,
  lastUserMessage,
  plan,
  probeTools,
  respond,
  roleScript,
  startHarness,
  submitWork,
  toolUse,
  verdict,
  type Harness,
  type ProbeEntry,
} from './resilience-support';

// Tool dispatch in three passes: preflight (serial), execute (read-only calls concurrently, others
// one by one), commit (results in the model's order); the crash rule for non-idempotent tools; and
// nothing running after a run has ended (cancel, timeout).

let h: Harness | undefined;
afterEach(() => {
  h?.remove();
  h = undefined;
});

describe('three-pass dispatch', () => {
  it('read-only calls run concurrently; results are committed in the model order in one append', async () => {
    const log: ProbeEntry[] = [];
    const batches: RecordedEvent[][] = [];
    const turn = respond(
      // Each finishes only once the others let it: b once all three have started, c after b, a
      // after c. Run one by one, a would wait for a c that never starts.
      toolUse('probe_read', { id: 'a', after: 'c' }, 'tu_a'),
      toolUse('probe_read', { id: 'b', afterStarts: 3 }, 'tu_b'),
      toolUse('probe_read', { id: 'c', after: 'b' }, 'tu_c'),
    );
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: probeTools(log), observer: { onEvents: (_id, events) => batches.push(events) } });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');

    // All three started before any finished; they finished b, c, a.
    expect(log.slice(0, 3).map((e) => e.at)).toEqual(['start', 'start', 'start']);
    expect(log.filter((e) => e.at === 'end').map((e) => e.id)).toEqual(['b', 'c', 'a']);
    // Committed together, in the model's order, each preceded by its start (idempotent: recorded with its result),
    // in the same append as the next model call (one commit per turn), which follows them.
    const commit = batches.find((b) => b.some((e) => e.type === 'ToolCallCompleted' && (e.data as ToolCallCompletedData).toolUseId === 'tu_a'))!;
    expect(commit.map((e) => [e.type, (e.data as { toolUseId?: string }).toolUseId])).toEqual([
      ['ToolCallRequested', 'tu_a'], ['ToolCallCompleted', 'tu_a'],
      ['ToolCallRequested', 'tu_b'], ['ToolCallCompleted', 'tu_b'],
      ['ToolCallRequested', 'tu_c'], ['ToolCallCompleted', 'tu_c'],
      ['ModelCallStarted', undefined], ['ModelCallCompleted', undefined],
    ]); // prettier-ignore
    // The next request carries the results in the model's order.
    const next = lastUserMessage(model.calls.filter((c) => c.role === 'executor')[1]);
    expect((next.content as Array<{ tool_use_id: string }>).map((b) => b.tool_use_id)).toEqual(['tu_a', 'tu_b', 'tu_c']);
    await expectReplayMatchesLive(h, state);
  });

  it('a write splits the turn: reads before it, the write alone, reads after it', async () => {
    const log: ProbeEntry[] = [];
    const turn = respond(
      toolUse('probe_read', { id: 'r1', ms: 30 }, 'tu_1'),
      toolUse('probe_read', { id: 'r2', ms: 30 }, 'tu_2'),
      toolUse('probe_write', { id: 'w', ms: 10 }, 'tu_3'),
      toolUse('probe_read', { id: 'r3', ms: 5 }, 'tu_4'),
    );
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: probeTools(log) });
    const state = await h.driver.drive();
    expect(log.map((e) => `${e.at} ${e.id}`)).toEqual(['start r1', 'start r2', 'end r1', 'end r2', 'start w', 'end w', 'start r3', 'end r3']);
    const completed = dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').filter((d) => d.role === 'executor').map((d) => d.toolUseId);
    expect(completed.slice(0, 4)).toEqual(['tu_1', 'tu_2', 'tu_3', 'tu_4']);
    await expectReplayMatchesLive(h, state);
  });

  it('serial dispatch (the baseline) runs one call at a time', async () => {
    const log: ProbeEntry[] = [];
    const turn = respond(toolUse('probe_read', { id: 'a', ms: 20 }), toolUse('probe_read', { id: 'b', ms: 5 }));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: probeTools(log), toolDispatch: 'serial' });
    await h.driver.drive();
    expect(log.map((e) => `${e.at} ${e.id}`)).toEqual(['start a', 'end a', 'start b', 'end b']);
  });

  it('preflight refuses invalid and unavailable calls without running them; the rest of the turn runs', async () => {
    const log: ProbeEntry[] = [];
    const turn = respond(
      toolUse('write_file', { path: 'x.txt' }, 'tu_bad'),
      toolUse('no_such_tool', {}, 'tu_unknown'),
      toolUse('probe_read', { id: 'ok', ms: 1 }, 'tu_ok'),
    );
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: probeTools(log) });
    const state = await h.driver.drive();
    const completed = dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').filter((d) => d.role === 'executor').slice(0, 3);
    expect(completed.map((d) => [d.toolUseId, d.isError])).toEqual([
      ['tu_bad', true],
      ['tu_unknown', true],
      ['tu_ok', false],
    ]);
    expect(completed[0].output).toMatch(/^invalid input for write_file: missing required property content/);
    expect(completed[1].output).toMatch(/^tool no_such_tool is not available to the executor/);
    expect(existsSync(join(h.workspace, 'x.txt'))).toBe(false);
    expect(log.map((e) => e.id)).toEqual(['ok', 'ok']);
    await expectReplayMatchesLive(h, state);
  });

  it('a non-idempotent tool has its start recorded (its own append) before it runs', async () => {
    const batches: string[][] = [];
    const turn = respond(toolUse('run_command', { command: 'echo hi > out.txt' }, 'tu_cmd'));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, observer: { onEvents: (_id, events) => batches.push(events.map((e) => e.type)) } });
    const state = await h.driver.drive();
    const i = batches.findIndex((b) => b.includes('ToolCallRequested'));
    expect(batches[i]).toEqual(['ToolCallRequested']);
    expect(batches[i + 1]).toEqual(['ToolCallCompleted']);
    expect(readFileSync(join(h.workspace, 'out.txt'), 'utf8')).toBe('hi\n');
    await expectReplayMatchesLive(h, state);
  });
});

describe('crash semantics under the three-pass dispatch', () => {
  it('a non-idempotent call started before a crash is reported as outcome unknown; a read-only one of the same turn runs again', async () => {
    const log: ProbeEntry[] = [];
    const turn = respond(toolUse('probe_read', { id: 'r', ms: 1 }, 'tu_r'), toolUse('run_command', { command: 'echo $$ > pid.txt; sleep 30' }, 'tu_cmd'));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: probeTools(log) });
    const first = h.driver;
    const driving = first.drive();
    const pidFile = join(h.workspace, 'pid.txt');
    await waitFor('the command to write its pid', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 5000, 10);
    first.stop('crash'); // the process dies: nothing after ToolCallRequested(run_command) is recorded
    await driving;
    expect((await h.types()).at(-1)).toBe('ToolCallRequested');

    const state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    const completed = dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').filter((d) => d.role === 'executor');
    expect(completed.slice(0, 2).map((d) => [d.toolUseId, d.isError, d.outcomeUnknown ?? false])).toEqual([
      ['tu_r', false, false],
      ['tu_cmd', true, true],
    ]);
    // The read ran twice (once per driver); the command once.
    expect(log.filter((e) => e.at === 'start').map((e) => e.id)).toEqual(['r', 'r']);
    await expectReplayMatchesLive(h, state);
  });
});

describe('nothing keeps running after a run has ended', () => {
  it('the run timeout during run_command kills its processes and ends the run TIMEOUT', async () => {
    const mark = uniqueSleep();
    const turn = respond(toolUse('run_command', { command: `echo started > started.txt; sleep ${mark} & sleep ${mark}; wait` }, 'tu_cmd'));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn] }));
    h = await startHarness({ model, launch: { timeoutMs: 1_500 } });
    const started = Date.now();
    const state = await h.driver.drive();
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(readFileSync(join(h.workspace, 'started.txt'), 'utf8')).toBe('started\n');
    const events = await h.events();
    // Nothing is appended from drive()'s return until its processes are gone (the time a
    // straggler of the run would have to write in).
    await waitFor('its processes to be gone', () => hostProcessesWith(mark).length === 0, 20_000, 10);
    expect(terminationReason(state)).toBe('TIMEOUT');
    expect(events.at(-1)!.type).toBe('RunEnded');
    expect(events.at(-2)).toMatchObject({ type: 'ToolCallRequested', data: { name: 'run_command' } });
    expect((await h.events()).length).toBe(events.length);
    await expectReplayMatchesLive(h, state);
  });

  it('cancel during concurrent tools stops them all before the driver returns; nothing is committed', async () => {
    const log: ProbeEntry[] = [];
    const turn = respond(toolUse('probe_read', { id: 'a', ms: 10_000 }), toolUse('probe_read', { id: 'b', ms: 10_000 }));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn] }));
    h = await startHarness({ model, extraTools: probeTools(log) });
    const driving = h.driver.drive();
    await waitFor('both probes to start', () => log.filter((e) => e.at === 'start').length === 2, 5000, 10);
    await h.appendAsOther([{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message: 'cancelled by user:bob', at: new Date().toISOString() } }]);
    const stoppedAt = Date.now();
    h.driver.stop('cancelled');
    const state = await driving;
    expect(Date.now() - stoppedAt).toBeLessThan(8_000);
    // Both calls had ended when drive() returned.
    expect(log.filter((e) => e.at === 'end').map((e) => e.id).sort()).toEqual(['a', 'b']);
    const events = await h.events();
    expect(events.at(-1)).toMatchObject({ type: 'RunEnded', data: { reason: 'CANCELLED' } });
    expect(dataOf<ToolCallCompletedData>(events, 'ToolCallCompleted').filter((d) => d.role === 'executor')).toEqual([]);
    // The stopped driver never folded the cancel; a driver started now sees the run as it is.
    expect(runStatus(state)).toBe('executing');
    const reloaded = await h.newDriver().drive();
    expect(runStatus(reloaded)).toBe('cancelled');
    await expectReplayMatchesLive(h, reloaded);
  });

  it('cancel during run_command in a concurrent turn kills its processes too', async () => {
    const mark = uniqueSleep();
    const turn = respond(toolUse('run_command', { command: `sleep ${mark} & sleep ${mark}; wait` }, 'tu_cmd'));
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [turn] }));
    h = await startHarness({ model });
    const driving = h.driver.drive();
    await waitFor('both sleeps to start', () => hostProcessesWith(mark).length >= 2, 5000, 10);
    await h.appendAsOther([{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', at: new Date().toISOString() } }]);
    h.driver.stop('cancelled');
    await driving;
    await waitFor('both sleeps to be gone', () => hostProcessesWith(mark).length === 0, 3000, 10);
    expect(dataOf<RunEndedData>(await h.events(), 'RunEnded')).toHaveLength(1);
  });
});

import { decideSpawn, evolveSubAgents, nextSubAgentStep, spawnOutcome, subAgentTokens, type SpawnContext, type SubAgents } from '../../../src/team/domain/sub-agents';
import type { SubAgentEvent } from '../../../src/team/domain/run-events';

const AT = '2026-01-01T00:00:00.000Z';
const NOW = Date.parse(AT);
const EXECUTOR: SpawnContext['parent'] = {
  agent: 'agent:executor:run1',
  depth: 0,
  tools: ['read_file', 'write_file', 'run_command', 'spawn_sub_agent', 'submit_work'],
  phaseRole: 'executor',
};

function given(events: SubAgentEvent[]) {
  const agents: SubAgents = {};
  for (const e of events) evolveSubAgents(agents, e);
  return {
    agents,
    whenSpawned: (input: Record<string, unknown>, parent = EXECUTOR, toolUseId = 'toolu_1') =>
      decideSpawn(agents, input, { runId: 'run1', parent, toolUseId, at: AT }),
  };
}

function spawned(path = 'executor/1', overrides: Partial<Extract<SubAgentEvent, { type: 'SubAgentSpawned' }>['data']> = {}): SubAgentEvent {
  return {
    type: 'SubAgentSpawned',
    data: {
      path,
      agent: `agent:coder:run1/${path}`,
      parent: 'agent:executor:run1',
      depth: path.split('/').length - 1,
      toolUseId: 'toolu_1',
      role: 'coder',
      task: 'write it',
      tools: ['read_file', 'write_file'],
      limits: { maxTurns: 2, maxTokens: 1_000, timeoutMs: 60_000 },
      priority: 5,
      at: AT,
      ...overrides,
    },
  };
}

const started = (path = 'executor/1'): SubAgentEvent => ({ type: 'SubAgentStarted', data: { path, at: AT } });
const called = (turn: number, response: unknown[], tokens = 10): SubAgentEvent => ({
  type: 'SubAgentModelCalled',
  data: {
    path: 'executor/1',
    turn,
    callId: `c${turn}`,
    model: 'm',
    content: [],
    response: response as never,
    stopReason: 'end_turn',
    usage: { inputTokens: tokens, outputTokens: tokens },
    costUsd: 0,
    durationMs: 1,
    at: AT,
  },
});

describe('sub-agent decider', () => {
  it('given no sub-agent, when the executor spawns one with defaults, then it is named below the executor with the default limits and its tools', () => {
    const decision = given([]).whenSpawned({ role: 'coder', task: 'write hello.txt' });
    expect(decision).toEqual({
      ok: true,
      event: {
        type: 'SubAgentSpawned',
        data: expect.objectContaining({
          path: 'executor/1',
          agent: 'agent:coder:run1/executor/1',
          parent: 'agent:executor:run1',
          depth: 1,
          tools: ['read_file', 'write_file', 'run_command', 'spawn_sub_agent'],
          limits: { maxTurns: 20, maxTokens: 100_000, timeoutMs: 3_600_000 },
          priority: 5,
        }),
      },
    });
  });

  it('given one sub-agent of the executor, when it spawns another, then the second is executor/2', () => {
    const decision = given([spawned()]).whenSpawned({ role: 'tester', task: 'test it' }, EXECUTOR, 'toolu_2');
    expect(decision.ok && decision.event.data.path).toBe('executor/2');
  });

  it('when the requested tools are wider than the parent\'s, then the spawn is refused', () => {
    const parent = { ...EXECUTOR, tools: ['read_file', 'spawn_sub_agent'] };
    expect(given([]).whenSpawned({ role: 'coder', task: 't', tools: ['read_file', 'write_file'] }, parent)).toEqual({
      ok: false,
      error: expect.stringContaining('write_file'),
    });
  });

  it('when tools are requested within the parent\'s, then the sub-agent gets exactly those', () => {
    const decision = given([]).whenSpawned({ role: 'researcher', task: 't', tools: ['read_file'] });
    expect(decision.ok && decision.event.data.tools).toEqual(['read_file']);
  });

  it('given a sub-agent at depth 3, when it spawns, then the spawn is refused; at depth 2 its child may not spawn further', () => {
    const deep = { agent: 'agent:coder:run1/executor/1/1/1', path: 'executor/1/1/1', depth: 3, tools: ['read_file', 'spawn_sub_agent'], phaseRole: 'executor' as const };
    expect(given([]).whenSpawned({ role: 'coder', task: 't' }, deep)).toEqual({ ok: false, error: expect.stringContaining('at most 3 deep') });
    const second = { ...deep, agent: 'agent:coder:run1/executor/1/1', path: 'executor/1/1', depth: 2 };
    const decision = given([]).whenSpawned({ role: 'coder', task: 't' }, second);
    expect(decision.ok && decision.event.data).toEqual(expect.objectContaining({ path: 'executor/1/1/1', parentPath: 'executor/1/1', depth: 3, tools: ['read_file'] }));
  });

  it.each([
    [{ role: 'wizard', task: 't' }, 'role must be one of'],
    [{ role: 'coder', task: '  ' }, 'task must be'],
    [{ role: 'coder', task: 't', priority: 0 }, 'priority must be an integer from 1 to 10'],
    [{ role: 'coder', task: 't', maxTurns: 101 }, 'maxTurns must be an integer from 1 to 100'],
    [{ role: 'coder', task: 't', maxTokens: 999 }, 'maxTokens'],
    [{ role: 'coder', task: 't', timeoutMs: 241 * 60_000 }, 'timeoutMs'],
  ])('when the request is %j, then it is refused (%s)', (input, message) => {
    expect(given([]).whenSpawned(input)).toEqual({ ok: false, error: expect.stringContaining(message) });
  });
});

describe('sub-agent lifecycle and steps', () => {
  it('given spawned, queued and started, then the status follows each event', () => {
    const { agents } = given([spawned()]);
    expect(agents['executor/1'].status).toBe('pending');
    evolveSubAgents(agents, { type: 'SubAgentAwaitingApproval', data: { path: 'executor/1', approvalId: 'apr_x', at: AT } });
    expect(agents['executor/1'].status).toBe('awaiting_approval');
    evolveSubAgents(agents, { type: 'SubAgentQueued', data: { path: 'executor/1', priority: 5, at: AT } });
    expect(agents['executor/1'].status).toBe('queued');
    evolveSubAgents(agents, started());
    expect(agents['executor/1'].status).toBe('running');
  });

  it('given a started sub-agent, when nothing happened yet, then it calls its model with the task', () => {
    const { agents } = given([spawned(), started()]);
    const step = nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT);
    expect(step).toEqual({ kind: 'callModel', turn: 1, content: [{ type: 'text', text: expect.stringContaining('write it') }] });
  });

  it('given a response with a tool call, then the call runs; once its result is recorded, the next turn carries it', () => {
    const use = { type: 'tool_use', id: 'tu1', name: 'write_file', input: { path: 'a', content: 'b' } };
    const { agents } = given([spawned(), started(), called(1, [use])]);
    expect(nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT)).toEqual({ kind: 'runTools', turn: 1, calls: [{ call: use, alreadyStarted: false }] });
    evolveSubAgents(agents, { type: 'SubAgentToolCompleted', data: { path: 'executor/1', turn: 1, toolUseId: 'tu1', name: 'write_file', output: 'ok', isError: false, durationMs: 1 } });
    expect(nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT)).toEqual({ kind: 'callModel', turn: 2, content: [] });
    evolveSubAgents(agents, called(2, [{ type: 'text', text: 'done: a written' }]));
    expect(agents['executor/1'].messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'ok' }] });
    const end = nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT);
    expect(end).toEqual({ kind: 'end', event: { type: 'SubAgentCompleted', data: { path: 'executor/1', result: 'done: a written', at: AT } } });
    evolveSubAgents(agents, (end as { event: SubAgentEvent }).event);
    expect(nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT)).toEqual({ kind: 'done' });
    expect(spawnOutcome(agents['executor/1'])).toEqual({ isError: false, output: expect.stringContaining('done: a written') });
    expect(subAgentTokens(agents)).toBe(40);
  });

  it('given its turns used up, then it fails MAX_TURNS; given its tokens or the run\'s used up, then BUDGET_EXHAUSTED', () => {
    const use = (id: string) => ({ type: 'tool_use', id, name: 'read_file', input: {} });
    const result = (id: string): SubAgentEvent => ({ type: 'SubAgentToolCompleted', data: { path: 'executor/1', turn: 1, toolUseId: id, name: 'read_file', output: 'x', isError: false, durationMs: 1 } });
    const { agents } = given([spawned(), started(), called(1, [use('a')]), result('a'), called(2, [use('b')]), result('b')]);
    expect(nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT)).toEqual({ kind: 'end', event: expect.objectContaining({ type: 'SubAgentFailed', data: expect.objectContaining({ reason: 'MAX_TURNS' }) }) });
    expect(nextSubAgentStep(agents['executor/1'], NOW, 0, AT)).toEqual({ kind: 'end', event: expect.objectContaining({ data: expect.objectContaining({ reason: 'BUDGET_EXHAUSTED' }) }) });
    const big = given([spawned(), started(), called(1, [use('a')], 600), result('a')]).agents;
    expect(nextSubAgentStep(big['executor/1'], NOW, 10_000, AT)).toEqual({ kind: 'end', event: expect.objectContaining({ data: expect.objectContaining({ reason: 'BUDGET_EXHAUSTED' }) }) });
  });

  it('given its timeout passed, then it times out', () => {
    const { agents } = given([spawned(), started()]);
    expect(nextSubAgentStep(agents['executor/1'], NOW + 60_000, 10_000, AT)).toEqual({ kind: 'end', event: expect.objectContaining({ type: 'SubAgentTimedOut' }) });
  });

  it('given a tool recorded as started before a crash, then it is reported as already started', () => {
    const use = { type: 'tool_use', id: 'tu1', name: 'run_command', input: {} };
    const { agents } = given([spawned(), started(), called(1, [use]), { type: 'SubAgentToolStarted', data: { path: 'executor/1', turn: 1, toolUseId: 'tu1', name: 'run_command', at: AT } }]);
    expect(nextSubAgentStep(agents['executor/1'], NOW, 10_000, AT)).toEqual({ kind: 'runTools', turn: 1, calls: [{ call: use, alreadyStarted: true }] });
  });
});

import { endpointOf, launchPin, matchPin, pinOf, repinned, waitingFor, type PinChange, type ProcessModel, type RunPin } from '../../src/team/domain/model-pin';
import { runDecider, RunNotActiveError, type RunCommand } from '../../src/team/domain/run-decider';
import type { RunLaunchedData, TeamRunEvent } from '../../src/team/domain/run-events';
import { evolve, initialRunState, type RunState } from '../../src/team/domain/run-state';
import { modelOfCall } from '../../src/team/domain/next-action';
import { buildRunLaunched, InvalidLaunchError, type LaunchContext } from '../../src/team/commands/launch';
import { catalogueOf, defaultModelOf } from '../../src/team/models/model-provider.factory';
import { InvalidRepinError, parsePinChange } from '../../src/session-replay/resume-run';
import { DeciderSpecification } from '../support/decider-specification';
import { planned, RUN_ID, runEnded } from './machines/given-when-then';

// A run is pinned to the provider, model and endpoint it was launched on: only a process that
// matches drives it, and an operator re-pins it explicitly.

const CLAUDE_A = 'https://claude-a.example:8443';
const anthropicAt = (endpoint: string) => ({ provider: 'anthropic', endpoint });
const OFFLINE = { provider: 'offline', endpoint: 'offline:' };
const team = (model: string) => ({ architect: { model }, executor: { model }, reviewer: { model } });
const pinnedTo = (model: string, here: { provider: string; endpoint: string }): RunPin => launchPin(team(model), here);

describe('the pin comparison', () => {
  it('given a run pinned to an endpoint, when a process at that endpoint asks, then it may drive it', () => {
    expect(matchPin(pinnedTo('claude-sonnet-4-6', anthropicAt(CLAUDE_A)), anthropicAt(CLAUDE_A))).toEqual({ matches: true });
  });

  it('given a run pinned to one endpoint, when a process at another endpoint asks, then it waits for the first', () => {
    const match = matchPin(pinnedTo('claude-sonnet-4-6', anthropicAt(CLAUDE_A)), anthropicAt('https://claude-b.example:443'));
    expect(match).toMatchObject({ matches: false, role: 'architect', waitingFor: `a process with provider anthropic at ${CLAUDE_A}` });
  });

  it('given a run pinned to Claude, when the offline model asks, then it does not stand in', () => {
    expect(matchPin(pinnedTo('claude-sonnet-4-6', anthropicAt(CLAUDE_A)), OFFLINE)).toMatchObject({ matches: false, waitingFor: `a process with provider anthropic at ${CLAUDE_A}` });
  });

  it('given a run pinned to the offline model, when a Claude process asks, then it waits for the offline model', () => {
    expect(matchPin(pinnedTo('triad-offline-1', OFFLINE), anthropicAt(CLAUDE_A))).toMatchObject({ matches: false, waitingFor: 'a process with provider offline at offline:' });
  });

  it('given roles pinned to two providers, when asked what it waits for, then it names one process with both', () => {
    const pin = { ...pinnedTo('claude-sonnet-4-6', anthropicAt(CLAUDE_A)), reviewer: { provider: 'offline', model: 'triad-offline-1', endpoint: 'offline:' } };
    expect(waitingFor(pin)).toBe(`a process with provider anthropic at ${CLAUDE_A} and provider offline at offline:`);
  });

  it('given roles pinned to two endpoints of one provider, when asked what it waits for, then it names both and says to re-pin', () => {
    const pin = { ...pinnedTo('claude-sonnet-4-6', anthropicAt(CLAUDE_A)), reviewer: { provider: 'anthropic', model: 'claude-sonnet-4-6', endpoint: 'https://claude-b.example:443' } };
    expect(waitingFor(pin)).toBe(`processes with provider anthropic at ${CLAUDE_A} and provider anthropic at https://claude-b.example:443 (no one process serves them all: re-pin the run)`);
  });

  it('given a run launched before pins, when read, then it is pinned to its provider at any endpoint', () => {
    const old = { provider: 'anthropic', team: team('claude-sonnet-4-6') } as Pick<RunLaunchedData, 'provider' | 'team'>;
    const pin = pinOf(old);
    expect(pin.executor).toEqual({ provider: 'anthropic', model: 'claude-sonnet-4-6' });
    expect(matchPin(pin, anthropicAt('https://anywhere.example:443'))).toEqual({ matches: true });
    expect(matchPin(pin, OFFLINE)).toMatchObject({ matches: false, waitingFor: 'a process with provider anthropic at any endpoint' });
  });
});

describe('an endpoint', () => {
  it.each([
    ['https://api.anthropic.com', 'https://api.anthropic.com:443'],
    ['http://127.0.0.1:4010/v1?key=sk-secret', 'http://127.0.0.1:4010'],
    ['https://user:sk-secret@Proxy.Example/anthropic', 'https://proxy.example:443'],
    ['http://[::1]:9000/', 'http://[::1]:9000'],
    ['offline:', 'offline:'],
    ['offline', 'offline:'],
  ])('given %s, then it is %s (scheme, host and port only)', (url, endpoint) => {
    expect(endpointOf(url)).toBe(endpoint);
  });

  it.each(['ftp://host', 'not a url', 'https://', ''])('given %p, then it is no endpoint', (url) => {
    expect(endpointOf(url)).toBeUndefined();
  });
});

describe('a launch', () => {
  const ctx = (provider: string, endpoint: string): LaunchContext => ({
    runId: 'run_1',
    launchedBy: 'user:ann',
    now: new Date('2026-01-01T00:00:00Z'),
    provider,
    defaultModel: provider === 'offline' ? 'triad-offline-1' : 'claude-sonnet-4-6',
    models: { here: { provider, endpoint }, catalogueOf, defaultModelOf },
  });
  const input = { goal: 'g', acceptanceCriteria: ['c'] };

  it('given a Claude server, when launched with no models named, then every role is pinned to its provider, model and endpoint', () => {
    const data = buildRunLaunched(input, ctx('anthropic', CLAUDE_A));
    expect(data.pin).toEqual(pinnedTo('claude-sonnet-4-6', anthropicAt(CLAUDE_A)));
  });

  it('given a Claude server, when a role names gpt-4o, then the launch is refused saying what is accepted', () => {
    expect(() => buildRunLaunched({ ...input, team: { executor: { model: 'gpt-4o' } } }, ctx('anthropic', CLAUDE_A))).toThrow(
      new InvalidLaunchError(`team.executor.model: 'gpt-4o' is not served here; this server's provider anthropic at ${CLAUDE_A} serves Claude models (claude-...)`),
    );
  });

  it('given the offline model, when a role names a Claude model, then it is refused: the offline model serves its own name only', () => {
    expect(() => buildRunLaunched({ ...input, team: { reviewer: { model: 'claude-opus-4-1' } } }, ctx('offline', 'offline:'))).toThrow(/^team\.reviewer\.model: 'claude-opus-4-1' is not served here; .* serves the offline model triad-offline-1$/);
  });

  it("given a Claude server, when a loop's planner or the summary names another provider's model, then it is refused", () => {
    const loop = { strategy: 'plan_execute' as const, plannerModel: 'gpt-4o' };
    expect(() => buildRunLaunched({ ...input, team: { executor: { loop } } }, ctx('anthropic', CLAUDE_A))).toThrow(/^team\.executor\.loop\.plannerModel: 'gpt-4o'/);
    expect(() => buildRunLaunched({ ...input, contextWindow: { summaryModel: 'triad-offline-1' } }, ctx('anthropic', CLAUDE_A))).toThrow(/^contextWindow\.summaryModel: 'triad-offline-1'/);
  });
});

describe('a launch with a provider per role', () => {
  const LOCAL = 'http://127.0.0.1:11434';
  const openaiAt = (endpoint: string) => ({ provider: 'openai', endpoint });
  /** A process on Claude, with an OpenAI-compatible server set up beside it. */
  const ctx = (here: ProcessModel): LaunchContext => ({
    runId: 'run_1',
    launchedBy: 'user:ann',
    now: new Date('2026-01-01T00:00:00Z'),
    provider: here.provider,
    defaultModel: defaultModelOf(here.provider),
    models: { here, catalogueOf, defaultModelOf },
  });
  const claudeAndLocal: ProcessModel = { ...anthropicAt(CLAUDE_A), also: [openaiAt(LOCAL)] };
  const input = { goal: 'g', acceptanceCriteria: ['c'] };

  it('given a Claude process with a local server, when the executor names openai, then the executor is pinned there and the others to Claude', () => {
    const data = buildRunLaunched({ ...input, team: { executor: { provider: 'openai', model: 'llama3.2:3b' } } }, ctx(claudeAndLocal));
    expect(data.team.executor).toMatchObject({ provider: 'openai', model: 'llama3.2:3b' });
    expect(data.team.architect.provider).toBeUndefined();
    expect(data.pin).toEqual({
      architect: { provider: 'anthropic', model: 'claude-sonnet-4-6', endpoint: CLAUDE_A },
      executor: { provider: 'openai', model: 'llama3.2:3b', endpoint: LOCAL },
      reviewer: { provider: 'anthropic', model: 'claude-sonnet-4-6', endpoint: CLAUDE_A },
    });
  });

  it("given a role on openai naming no model, then it gets the provider's default, not the process's", () => {
    const data = buildRunLaunched({ ...input, team: { reviewer: { provider: 'openai' } } }, ctx(claudeAndLocal));
    expect(data.team.reviewer.model).toBe('gpt-4.1-mini');
    expect(data.team.architect.model).toBe('claude-sonnet-4-6');
  });

  it("given a role on openai, then its model is not held to Claude's names, while a Claude role's still is", () => {
    expect(() => buildRunLaunched({ ...input, team: { executor: { provider: 'openai', model: 'qwen2.5-coder:7b' } } }, ctx(claudeAndLocal))).not.toThrow();
    expect(() => buildRunLaunched({ ...input, team: { architect: { model: 'qwen2.5-coder:7b' } } }, ctx(claudeAndLocal))).toThrow(
      new InvalidLaunchError(`team.architect.model: 'qwen2.5-coder:7b' is not served here; this server's provider anthropic at ${CLAUDE_A} serves Claude models (claude-...)`),
    );
  });

  it('given a provider the process is not set up for, or not a provider name, then the launch is refused saying which it has', () => {
    expect(() => buildRunLaunched({ ...input, team: { executor: { provider: 'openai' } } }, ctx(anthropicAt(CLAUDE_A)))).toThrow(
      new InvalidLaunchError("team.executor.provider: 'openai' is not set up here; this server's providers are anthropic"),
    );
    expect(() => buildRunLaunched({ ...input, team: { executor: { provider: 'offline' } } }, ctx(claudeAndLocal))).toThrow(/providers are anthropic, openai$/);
    expect(() => buildRunLaunched({ ...input, team: { executor: { provider: 'Open AI!' } } }, ctx(claudeAndLocal))).toThrow(/must be a provider name/);
  });

  it('given a run with the executor on openai, then only a process with both providers at both endpoints drives it', () => {
    const pin = buildRunLaunched({ ...input, team: { executor: { provider: 'openai', model: 'llama3.2:3b' } } }, ctx(claudeAndLocal)).pin!;
    expect(matchPin(pin, claudeAndLocal)).toEqual({ matches: true });
    expect(matchPin(pin, anthropicAt(CLAUDE_A))).toMatchObject({ matches: false, role: 'executor' });
    expect(matchPin(pin, { ...anthropicAt(CLAUDE_A), also: [openaiAt('http://127.0.0.1:8000')] })).toMatchObject({ matches: false, role: 'executor' });
    expect(matchPin(pin, { ...openaiAt(LOCAL), also: [anthropicAt(CLAUDE_A)] })).toEqual({ matches: true });
  });

  it('given a role on openai, when re-pinned to another endpoint, then it stays on openai; a Claude role stays on anthropic', () => {
    const pin = buildRunLaunched({ ...input, team: { executor: { provider: 'openai', model: 'llama3.2:3b' } } }, ctx(claudeAndLocal)).pin!;
    const to = repinned(pin, { endpoint: 'http://127.0.0.1:8000' });
    expect(to.executor).toEqual({ provider: 'openai', model: 'llama3.2:3b', endpoint: 'http://127.0.0.1:8000' });
    expect(to.architect.provider).toBe('anthropic');
  });

  it('given the executor on a server and the others on the offline model, when re-pinned to another server, then only the executor moves', () => {
    const pin = buildRunLaunched({ ...input, team: { executor: { provider: 'openai', model: 'llama3.2:3b' } } }, ctx({ ...OFFLINE, also: [openaiAt(LOCAL)] })).pin!;
    const to = repinned(pin, { endpoint: 'http://127.0.0.1:8000' });
    expect(to).toEqual({ ...pin, executor: { provider: 'openai', model: 'llama3.2:3b', endpoint: 'http://127.0.0.1:8000' } });
    expect(repinned(pin, { endpoint: 'offline:' }).executor).toEqual({ provider: 'offline', model: 'llama3.2:3b', endpoint: 'offline:' });
  });
});

describe('a re-pin', () => {
  const given = DeciderSpecification.for<RunState, RunCommand, TeamRunEvent>(runDecider);
  const AT = '2026-01-02T00:00:00.000Z';
  const resume = (repin: PinChange): RunCommand => ({ type: 'ResumeRun', runId: RUN_ID, by: 'user:olga', at: AT, repin });
  const suspended: TeamRunEvent = { type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner: 'host:1:ab', at: AT } };
  const from = pinOf({ provider: 'scripted', team: team('scripted') } as Pick<RunLaunchedData, 'provider' | 'team'>);

  it('given a suspended run, when an operator re-pins the executor to another endpoint, then RunRepinned names who, the old and the new pin, then RunResumed', () => {
    const to = repinned(from, { models: { executor: 'claude-opus-4-1' }, endpoint: CLAUDE_A });
    given([...planned(), suspended])
      .when(resume({ models: { executor: 'claude-opus-4-1' }, endpoint: CLAUDE_A }))
      .then([
        { type: 'RunRepinned', data: { by: 'user:olga', from, to, at: AT } },
        { type: 'RunResumed', data: { by: 'user:olga', at: AT } },
      ]);
    expect(to.executor).toEqual({ provider: 'anthropic', model: 'claude-opus-4-1', endpoint: CLAUDE_A });
    expect(to.architect).toEqual({ provider: 'anthropic', model: 'scripted', endpoint: CLAUDE_A });
  });

  it('given a re-pinned run, when folded, then its calls use the new model and its pin is the new one', () => {
    const to = repinned(from, { models: { executor: 'claude-opus-4-1' }, endpoint: CLAUDE_A });
    const events: TeamRunEvent[] = [...planned(), suspended, { type: 'RunRepinned', data: { by: 'user:olga', from, to, at: AT } }];
    const state = events.reduce((folded, event, revision) => evolve(folded, event, { revision, position: revision + 1 }), initialRunState(RUN_ID));
    expect(modelOfCall(state, 'executor')).toBe('claude-opus-4-1');
    expect(pinOf(state.launched!)).toEqual(to);
  });

  it('given a crashed run, when re-pinned to what it already is, then nothing is recorded', () => {
    given(planned()).when(resume({ models: { executor: 'scripted' } })).then([]);
  });

  it('given an ended run, when re-pinned, then it is a conflict', () => {
    given([...planned(), runEnded('TIMEOUT')]).when(resume({ endpoint: CLAUDE_A })).thenThrows(RunNotActiveError);
  });

  it.each([
    [{ models: { janitor: 'claude-x' } }, /models\.janitor: unknown role/],
    [{ models: { executor: '' } }, /models\.executor must be a model name/],
    [{ models: ['claude-x'] }, /models must be an object/],
    [{ endpoint: 'ftp://host' }, /is not an http\(s\) base URL/],
    [{ endpoint: 'https://user:sk-ant-secret@host.example' }, /must not carry credentials/],
    [{ endpoint: 'https:user:sk-ant-secret@host.example' }, /must not carry credentials/],
    [{ endpoint: 'https:\\\\user:sk-ant-secret@host.example' }, /must not carry credentials/],
  ])('given the body %j, when parsed, then it is refused (400)', (body, message) => {
    expect(() => parsePinChange(body)).toThrow(InvalidRepinError);
    expect(() => parsePinChange(body)).toThrow(message);
  });

  it('given no models and no endpoint, when parsed, then it is a plain resume', () => {
    expect(parsePinChange({})).toBeUndefined();
    expect(parsePinChange({ endpoint: 'http://127.0.0.1:4010/v1' })).toEqual({ endpoint: 'http://127.0.0.1:4010' });
  });
});

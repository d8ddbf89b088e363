import type { ContextCompactedData, ModelCallCompletedData } from '../../../src/team/domain/run-events';
import { runStatus } from '../../../src/team/domain/run-state';
import { AnthropicModelProvider } from '../../../src/team/models/anthropic.provider';
import { costOf } from '../../../src/team/domain/pricing';
import { SUMMARY_SYSTEM_PROMPT } from '../../../src/team/domain/resilience/context-window';
import { fakePromptTokens, startFakeMessagesApi, type FakeMessagesApi, type FakeStep, type RecordedRequest } from '../../support/fake-messages-api';
import { dataOf, startRun, type Harness } from '../driver/driver-support';

// Prompt caching and token counting through the real SDK against the loopback Messages API, which
// bills cache reads and writes by the request's breakpoints and answers count_tokens.

const API_KEY = 'sk-ant-context-test-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

const systemOf = (r: RecordedRequest) => JSON.stringify(r.body?.system ?? '');

/** Stateless answers: the executor writes `writes` files (one per call), then submits (at once after a compaction). */
function answers(writes: number): (r: RecordedRequest) => FakeStep {
  return (r) => {
    const system = systemOf(r);
    if (system.includes(JSON.stringify(SUMMARY_SYSTEM_PROMPT).slice(1, 40))) return { kind: 'response', content: [{ type: 'text', text: 'Summary: files were written.' }] };
    if (system.includes('You are the Architect')) return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_plan', input: { plan: 'write files' } }] };
    if (system.includes('You are the Reviewer')) {
      return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_verdict', input: { verdict: 'APPROVE', findings: [], summary: 'ok' } }] };
    }
    const done = (r.body!.messages as unknown[]).length >> 1;
    const compacted = JSON.stringify(r.body!.messages).includes('Summary of the earlier conversation');
    if (done < writes && !compacted) return { kind: 'response', content: [{ type: 'tool_use', name: 'write_file', input: { path: `f${done}.txt`, content: `file ${done} `.repeat(40) } }] };
    return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_work', input: { summary: 'wrote the files' } }] };
  };
}

describe('prompt caching and token counting on the Anthropic provider (loopback API)', () => {
  let api: FakeMessagesApi;
  let h: Harness | undefined;
  let writes = 3;

  beforeAll(async () => {
    api = await startFakeMessagesApi({ apiKey: API_KEY, promptCache: true, fallback: (r) => answers(writes)(r) });
  });
  afterAll(() => api.stop());
  afterEach(() => {
    h?.remove();
    h = undefined;
    api.reset();
  });

  it('records cache writes and reads in every usage and prices them; later turns read the cached prefix', async () => {
    writes = 3;
    h = await startRun({ model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url }), launch: { team: TEAM, reviewPolicy: { humanGate: false } } });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('completed');
    const events = await h.events();
    const calls = dataOf<ModelCallCompletedData>(events, 'ModelCallCompleted');
    for (const call of calls) {
      expect(call.usage).toEqual({ inputTokens: expect.any(Number), outputTokens: expect.any(Number), cacheReadTokens: expect.any(Number), cacheWriteTokens: expect.any(Number) });
      expect(call.costUsd).toBe(costOf(call.model, call.usage));
    }
    const executor = calls.filter((c) => c.role === 'executor');
    expect(executor).toHaveLength(4);
    expect(executor[0].usage.cacheReadTokens).toBe(0);
    expect(executor[0].usage.cacheWriteTokens).toBeGreaterThan(0);
    // Each later call reads everything the previous one wrote (tools, system, conversation so far).
    for (let i = 1; i < executor.length; i++) {
      expect(executor[i].usage.cacheReadTokens).toBe(executor[i - 1].usage.cacheReadTokens! + executor[i - 1].usage.cacheWriteTokens!);
    }
    const sum = (k: 'cacheReadTokens' | 'cacheWriteTokens') => executor.reduce((n, c) => n + c.usage[k]!, 0);
    expect(state.usage.executor).toMatchObject({ cacheReadTokens: sum('cacheReadTokens'), cacheWriteTokens: sum('cacheWriteTokens') });
    // Far below the 200k window, the estimate decided alone: no count was asked. No secret reached the events.
    expect(api.countRequests).toEqual([]);
    expect(JSON.stringify(events)).not.toContain(API_KEY);
  });

  it('decides compaction on the counted tokens (system prompt and tools included), asking once per prefix', async () => {
    writes = 6;
    // The estimate of the messages alone stays under this budget; the count, with the tools, does not.
    h = await startRun({
      model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url }),
      launch: { team: TEAM, reviewPolicy: { humanGate: false }, contextWindow: { limitTokens: 1_700, marginTokens: 0, keepRecentMessages: 2 } },
    });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('completed');
    const [compacted] = dataOf<ContextCompactedData>(await h.events(), 'ContextCompacted');
    expect(compacted).toMatchObject({ role: 'executor', reason: 'over_budget', method: 'model', countedTokens: expect.any(Number) });
    expect(compacted.countedTokens).toBeGreaterThan(1_700);
    // The estimate alone would not have compacted then.
    expect(compacted.tokensBefore).toBeLessThan(1_700);
    // The count is the server's count of a request it was sent.
    expect(api.countRequests.map((r) => fakePromptTokens(r.body!))).toContain(compacted.countedTokens);
    const keys = api.countRequests.map((r) => r.rawBody);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('falls back to the estimate when counting fails, warns without the key, and the run goes on', async () => {
    writes = 2;
    api.countTokensFault = { kind: 'http_error', status: 500, message: `upstream broke for ${API_KEY}` };
    const warnings: string[] = [];
    // A limit the conversation comes near (so counts are asked), but that the estimate stays under.
    h = await startRun({
      model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url }),
      launch: { team: TEAM, reviewPolicy: { humanGate: false }, contextWindow: { limitTokens: 3_000, marginTokens: 0 } },
      logger: { warn: (m) => warnings.push(m) },
    });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('completed');
    expect(api.countRequests.length).toBeGreaterThan(0);
    expect(warnings.length).toBe(api.countRequests.length);
    expect(warnings[0]).toMatch(/^run run_\w+: token count failed, using the estimate: Anthropic API HTTP 500/);
    expect(warnings.join('\n')).not.toContain(API_KEY);
    expect(dataOf<ContextCompactedData>(await h.events(), 'ContextCompacted')).toEqual([]);
  });
});

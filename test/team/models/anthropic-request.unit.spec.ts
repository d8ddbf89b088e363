import { toCountParams, toParams } from '../../../src/team/models/anthropic.provider';
import type { ChatMessage, ModelRequest, ToolSpec } from '../../../src/team/models/model.port';

// The request builder: at most four cache breakpoints, tools in a stable order, thinking settings
// and blocks sent exactly.

const tool = (name: string): ToolSpec => ({ name, description: `the ${name} tool`, input_schema: { type: 'object', properties: {} } });

function request(messages: ChatMessage[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    runId: 'run_1',
    role: 'executor',
    model: 'claude-sonnet-4-6',
    system: 'You are the executor.',
    messages,
    tools: [tool('write_file'), tool('read_file'), tool('submit_work'), tool('list_files')],
    maxTokens: 4096,
    ...extra,
  };
}

/** A conversation of `turns` turns: user, then assistant tool_use + user tool_result pairs. */
function conversation(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'The task.' }] }];
  for (let i = 1; i < turns; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `step ${i}` }, { type: 'tool_use', id: `t${i}`, name: 'read_file', input: { path: `f${i}` } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: `contents ${i}` }] });
  }
  return messages;
}

/** Paths of every block that carries cache_control, in prefix order (tools, system, messages). */
function breakpoints(body: unknown): string[] {
  const found: string[] = [];
  const walk = (value: unknown, path: string) => {
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}[${i}]`));
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (k === 'cache_control') found.push(path);
        else walk(v, path ? `${path}.${k}` : k);
      }
    }
  };
  walk(body, '');
  const rank = (p: string) => (p.startsWith('tools') ? 0 : p.startsWith('system') ? 1 : 2);
  return found.sort((a, b) => rank(a) - rank(b));
}

describe('Anthropic request builder', () => {
  it('given tools in any order, when built, then they are sent in name order with one breakpoint on the last', () => {
    const a = toParams(request(conversation(1)));
    const b = toParams(request(conversation(1), { tools: [tool('submit_work'), tool('list_files'), tool('write_file'), tool('read_file')] }));
    expect(a.tools!.map((t) => (t as { name: string }).name)).toEqual(['list_files', 'read_file', 'submit_work', 'write_file']);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(breakpoints(a)).toEqual(['tools[3]', 'system[0]', 'messages[0].content[0]']);
  });

  it.each([1, 2, 3, 10, 40])('given a %d-turn conversation, then at most 4 breakpoints: tools, system, previous user message, last block', (turns) => {
    const messages = conversation(turns);
    const params = toParams(request(messages));
    const found = breakpoints(params);
    expect(found.length).toBeLessThanOrEqual(4);
    const last = messages.length - 1;
    const lastBlock = `messages[${last}].content[${(messages[last].content as unknown[]).length - 1}]`;
    if (turns === 1) expect(found).toEqual(['tools[3]', 'system[0]', lastBlock]);
    else expect(found).toEqual(['tools[3]', 'system[0]', `messages[${last - 2}].content[0]`, lastBlock]);
  });

  it('given a string message, then it becomes one text block holding the breakpoint', () => {
    const params = toParams(request([{ role: 'user', content: 'Hello' }], { tools: [] }));
    expect(params.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hello', cache_control: { type: 'ephemeral' } }] }]);
    expect(params.tools).toBeUndefined();
  });

  it('given caching off, then no breakpoint and the system prompt is a string', () => {
    const params = toParams(request(conversation(5)), { cache: false });
    expect(breakpoints(params)).toEqual([]);
    expect(params.system).toBe('You are the executor.');
  });

  it('does not change the caller\'s messages', () => {
    const messages = conversation(3);
    const before = JSON.stringify(messages);
    toParams(request(messages));
    expect(JSON.stringify(messages)).toBe(before);
  });

  it('given thinking, then budget_tokens is sent, max_tokens leaves room for the answer, and blocks go back exactly', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Do it.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Let me think ␛␛ about it.', signature: 'sig_abc==' },
          { type: 'redacted_thinking', data: 'EncryptedBlob==' },
          { type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'A' }] },
    ];
    const params = toParams(request(messages, { thinking: { budgetTokens: 2048 } }));
    expect(params.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(params.max_tokens).toBe(4096 + 2048);
    // Stored machine text is decoded: the model's own characters go back.
    expect(params.messages[1].content).toEqual([
      { type: 'thinking', thinking: 'Let me think ␛ about it.', signature: 'sig_abc==' },
      { type: 'redacted_thinking', data: 'EncryptedBlob==' },
      { type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a' } },
    ]);
    // A summary call never thinks.
    expect(toParams(request(messages, { thinking: { budgetTokens: 2048 }, purpose: 'summary' })).thinking).toBeUndefined();
  });

  it('puts no breakpoint on a thinking block: the one before it that can hold one gets it', () => {
    const params = toParams(request([{ role: 'assistant', content: [{ type: 'text', text: 'x' }, { type: 'thinking', thinking: 't', signature: 's' }] }], { tools: [] }));
    expect(breakpoints(params)).toEqual(['system[0]', 'messages[0].content[0]']);
  });

  it('counts tokens for the same prompt without breakpoints', () => {
    const params = toCountParams({ ...request(conversation(3)), thinking: { budgetTokens: 1024 } });
    expect(breakpoints(params)).toEqual([]);
    expect(params.system).toBe('You are the executor.');
    expect(params.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(params.tools!.map((t) => (t as { name: string }).name)).toEqual(['list_files', 'read_file', 'submit_work', 'write_file']);
  });
});

describe('tool schemas in the request', () => {
  it('given the same tools in two requests, then both send the schema copied once, frozen, and never the registry’s own object', () => {
    const spec: ToolSpec = { name: 'write_file', description: 'writes', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };
    const first = toParams(request([{ role: 'user', content: [{ type: 'text', text: 'go' }] }], { tools: [spec] }));
    const second = toParams(request([{ role: 'user', content: [{ type: 'text', text: 'again' }] }], { tools: [spec] }));
    const [a, b] = [first.tools![0] as { input_schema: Record<string, unknown> }, second.tools![0] as { input_schema: Record<string, unknown> }];
    expect(a.input_schema).toEqual(spec.input_schema);
    expect(a.input_schema).not.toBe(spec.input_schema);
    expect(b.input_schema).toBe(a.input_schema);
    expect(Object.isFrozen(a.input_schema) && Object.isFrozen(a.input_schema.properties)).toBe(true);
    // The registry's own object is not frozen by being sent, and a change to it does not reach a copy already sent.
    expect(Object.isFrozen(spec.input_schema)).toBe(false);
    (spec.input_schema.properties as Record<string, unknown>).content = { type: 'string' };
    expect(a.input_schema.properties).toEqual({ path: { type: 'string' } });
  });
});

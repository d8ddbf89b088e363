import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { trace } from '@opentelemetry/api';
import { inChatSpan, inToolSpan, RunTrace } from '../../src/observability/tracing';

// Span shapes with the SDK's in-memory exporter: names, GenAI attributes, parents, errors, and
// message content only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
});
afterEach(() => {
  exporter.reset();
  delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
});

const CALL = { runId: 'run_1', role: 'executor', turn: 3, provider: 'anthropic', model: 'claude-sonnet-4-5', maxTokens: 1024, system: 'You execute.', messages: [{ role: 'user', content: 'secret task' }] };
const RESULT = { model: 'claude-sonnet-4-5-20250929', stopReason: 'tool_use', usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 2 }, content: [{ type: 'text', text: 'answer' }] };

it('a chat span inside its phase span, with request, response and usage attributes and no content by default', async () => {
  const run = new RunTrace('run_1');
  await run.inPhase({ role: 'executor', iteration: 1, agent: 'agent:executor:run_1' }, () => inChatSpan(CALL, async () => RESULT));
  run.end();
  const [chat, phase] = exporter.getFinishedSpans();
  expect(phase.name).toBe('invoke_agent executor');
  expect(phase.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'executor', 'gen_ai.agent.id': 'agent:executor:run_1', 'triad.run.id': 'run_1' });
  expect(chat.name).toBe('chat claude-sonnet-4-5');
  expect(chat.parentSpanContext?.spanId).toBe(phase.spanContext().spanId);
  expect(chat.attributes).toMatchObject({
    'gen_ai.provider.name': 'anthropic',
    'gen_ai.request.model': 'claude-sonnet-4-5',
    'gen_ai.request.max_tokens': 1024,
    'gen_ai.response.model': 'claude-sonnet-4-5-20250929',
    'gen_ai.response.finish_reasons': ['tool_use'],
    'gen_ai.usage.input_tokens': 10,
    'gen_ai.usage.output_tokens': 5,
    'gen_ai.usage.cache_read.input_tokens': 2,
    'triad.turn': 3,
  });
  expect(JSON.stringify(chat.attributes)).not.toContain('secret task');
});

it('message content and tool arguments when opted in', async () => {
  process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
  await inChatSpan(CALL, async () => RESULT);
  await inToolSpan({ runId: 'run_1', role: 'executor', turn: 3, name: 'write_file', callId: 'toolu_1', input: { path: 'a.txt' } }, async () => ({ output: 'written' }));
  const [chat, tool] = exporter.getFinishedSpans();
  expect(JSON.parse(chat.attributes['gen_ai.input.messages'] as string)).toEqual(CALL.messages);
  expect(chat.attributes['gen_ai.output.messages']).toContain('answer');
  expect(tool.attributes).toMatchObject({ 'gen_ai.tool.call.arguments': '{"path":"a.txt"}', 'gen_ai.tool.call.result': 'written' });
});

it('a failed call marks its span with the failure kind; a reviewer phase names its review', async () => {
  const run = new RunTrace('run_2');
  const failure = Object.assign(new Error('overloaded'), { kind: 'overloaded' });
  await expect(run.inPhase({ role: 'reviewer', iteration: 2 }, () => inChatSpan(CALL, () => Promise.reject(failure)))).rejects.toBe(failure);
  run.end();
  const [chat, phase] = exporter.getFinishedSpans();
  expect(chat.attributes['error.type']).toBe('overloaded');
  expect(chat.status.code).toBe(2);
  expect(phase.attributes['triad.review.id']).toBe('rev_run_2_2');
});

import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

/**
 * Traces through the OpenTelemetry API only: without an SDK registered (no
 * OTEL_EXPORTER_OTLP_ENDPOINT, see otel-sdk.ts) every span is the API's no-op and costs nothing.
 * Span names and attributes follow the OpenTelemetry GenAI semantic conventions, version
 * GENAI_SEMCONV_VERSION (gen_ai.provider.name, gen_ai.input.messages / gen_ai.output.messages):
 * - `invoke_agent {role}` — one agent phase of a run (architect, executor, reviewer; per iteration);
 * - `chat {model}` — one model call, a child of its phase;
 * - `execute_tool {tool}` — one tool call, a child of its phase.
 * Every span carries `triad.run.id`; turns, review ids and tool call ids where they apply. Message
 * content is recorded only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
 */
export const GENAI_SEMCONV_VERSION = '1.37.0';

function tracer() {
  // Looked up at each span: a provider registered after this module loaded is used.
  return trace.getTracer('triad');
}

export function captureMessageContent(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? '').toLowerCase() === 'true';
}

/** The provider name for gen_ai.provider.name: the Anthropic provider is `anthropic`; others are triad's own. */
function providerName(provider: string): string {
  return provider === 'anthropic' ? 'anthropic' : `triad.${provider}`;
}

/** A run's phase spans, as one driver goes through them: a new span when the role or iteration changes. */
export class RunTrace {
  private current?: { key: string; span: Span };

  constructor(private readonly runId: string) {}

  /** Runs `work` inside the span of the phase (`role`, `iteration`), starting it if it is new. */
  inPhase<T>(phase: { role: string; iteration: number; agent?: string } | undefined, work: () => Promise<T>): Promise<T> {
    if (!phase) return work();
    const key = `${phase.role}:${phase.iteration}`;
    if (this.current?.key !== key) {
      this.end();
      const attributes: Attributes = {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': phase.role,
        'triad.run.id': this.runId,
        'triad.iteration': phase.iteration,
      };
      if (phase.agent) attributes['gen_ai.agent.id'] = phase.agent;
      // The review a reviewer phase leads to is named by the run and iteration (`rev_<runId>_<iteration>`).
      if (phase.role === 'reviewer') attributes['triad.review.id'] = `rev_${this.runId}_${phase.iteration}`;
      this.current = { key, span: tracer().startSpan(`invoke_agent ${phase.role}`, { kind: SpanKind.INTERNAL, attributes }, context.active()) };
    }
    return context.with(trace.setSpan(context.active(), this.current.span), work);
  }

  /** Ends the open phase span (the phase ended, or the driver stopped). */
  end(): void {
    this.current?.span.end();
    this.current = undefined;
  }
}

export interface ChatCall {
  runId: string;
  role: string;
  turn: number;
  provider: string;
  model: string;
  maxTokens: number;
  system: string;
  messages: unknown;
}

export interface ChatResult {
  model: string;
  stopReason: string;
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number };
  content: unknown;
}

/** One model call in a `chat` span; a thrown error marks it (`error.type`: the failure kind). */
export async function inChatSpan<R extends ChatResult>(call: ChatCall, work: () => Promise<R>): Promise<R> {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': providerName(call.provider),
    'gen_ai.request.model': call.model,
    'gen_ai.request.max_tokens': call.maxTokens,
    'gen_ai.conversation.id': call.runId,
    'gen_ai.agent.name': call.role,
    'triad.run.id': call.runId,
    'triad.turn': call.turn,
  };
  const content = captureMessageContent();
  if (content) {
    attributes['gen_ai.system_instructions'] = JSON.stringify([{ type: 'text', content: call.system }]);
    attributes['gen_ai.input.messages'] = JSON.stringify(call.messages);
  }
  return inActiveSpan(`chat ${call.model}`, SpanKind.CLIENT, attributes, async (span) => {
    const result = await work();
    span.setAttributes({
      'gen_ai.response.model': result.model,
      'gen_ai.response.finish_reasons': [result.stopReason],
      'gen_ai.usage.input_tokens': result.usage.inputTokens,
      'gen_ai.usage.output_tokens': result.usage.outputTokens,
    });
    if (result.usage.cacheReadTokens !== undefined) span.setAttribute('gen_ai.usage.cache_read.input_tokens', result.usage.cacheReadTokens);
    if (result.usage.cacheWriteTokens !== undefined) span.setAttribute('gen_ai.usage.cache_creation.input_tokens', result.usage.cacheWriteTokens);
    if (content) span.setAttribute('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', content: result.content, finish_reason: result.stopReason }]));
    return result;
  });
}

export interface ToolCall {
  runId: string;
  role: string;
  turn: number;
  name: string;
  callId: string;
  input: unknown;
}

/** One tool call in an `execute_tool` span; an error result marks it. */
export async function inToolSpan<R extends { isError?: boolean; output?: string }>(call: ToolCall, work: () => Promise<R>): Promise<R> {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.callId,
    'gen_ai.tool.type': 'function',
    'gen_ai.agent.name': call.role,
    'triad.run.id': call.runId,
    'triad.turn': call.turn,
  };
  const content = captureMessageContent();
  if (content) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(call.input);
  return inActiveSpan(`execute_tool ${call.name}`, SpanKind.INTERNAL, attributes, async (span) => {
    const result = await work();
    if (content && typeof result.output === 'string') span.setAttribute('gen_ai.tool.call.result', result.output);
    if (result.isError) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return result;
  });
}

/** `body` inside an active span that ends with it; a throw marks the span failed and goes on. */
function inActiveSpan<R>(name: string, kind: SpanKind, attributes: Attributes, body: (span: Span) => Promise<R>): Promise<R> {
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await body(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function failed(span: Span, err: unknown): void {
  const kind = (err as { kind?: unknown })?.kind;
  span.setAttribute('error.type', typeof kind === 'string' ? kind : ((err as Error)?.name ?? 'Error'));
  // The message only: a provider's error text is already redacted of keys by the provider.
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
}

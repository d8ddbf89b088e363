import {
  ModelError,
  type AssistantBlock,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type Usage,
} from './model.port';
import { toMachineText } from '../../shared/text';

/**
 * A model that answers from a script, for tests and benchmarks. A step is a response, or an error
 * to throw (a `ModelError` to exercise the agent loop's failure handling). Calls are recorded as
 * plain copies of the requests, without the signal and callback.
 */

export type ScriptStep = ModelResponse | Error;
export type ScriptFunction = (request: ModelRequest, callIndex: number) => ScriptStep | Promise<ScriptStep>;

export interface ScriptedModelOptions {
  /** Delay before each answer; the request's signal cuts it short with ModelError 'aborted'. */
  latencyMs?: number;
}

export type RecordedModelCall = Omit<ModelRequest, 'signal' | 'onTextDelta'>;

export class ScriptExhaustedError extends Error {
  override readonly name = 'ScriptExhaustedError';
}

export class ScriptedModelProvider implements ModelProvider {
  readonly name = 'scripted';
  readonly calls: RecordedModelCall[] = [];
  private readonly steps: readonly ScriptStep[] | undefined;
  private readonly script: ScriptFunction | undefined;

  constructor(
    script: readonly ScriptStep[] | ScriptFunction,
    private readonly options: ScriptedModelOptions = {},
  ) {
    if (typeof script === 'function') this.script = script;
    else this.steps = script.map((step) => (step instanceof Error ? step : structuredClone(step)));
  }

  /** Scripted steps not answered yet (undefined for a function script). */
  get remaining(): number | undefined {
    return this.steps ? Math.max(0, this.steps.length - this.calls.length) : undefined;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const callIndex = this.calls.length;
    const { signal, onTextDelta, ...rest } = request;
    this.calls.push(structuredClone(rest));

    if (this.options.latencyMs && this.options.latencyMs > 0) await delay(this.options.latencyMs, signal);
    if (signal?.aborted) throw new ModelError('aborted', 'model request aborted');

    const step = await this.stepFor(request, callIndex);
    if (step instanceof Error) throw step;
    // As every provider answers: strings in machine text (a copy; the script is not changed).
    const response = toMachineText(step);
    for (const block of response.content) {
      if (block.type === 'text') streamText(block.text, onTextDelta);
    }
    return response;
  }

  private async stepFor(request: ModelRequest, callIndex: number): Promise<ScriptStep> {
    if (this.script) return this.script(request, callIndex);
    const step = this.steps![callIndex];
    if (step === undefined) {
      throw new ScriptExhaustedError(`ScriptedModelProvider: no response scripted for call #${callIndex + 1} (${this.steps!.length} scripted)`);
    }
    return step;
  }
}

// Builders for scripts.

const DEFAULT_USAGE: Usage = { inputTokens: 10, outputTokens: 5 };

export function textResponse(text: string, extra: Partial<ModelResponse> = {}): ModelResponse {
  return { model: 'scripted', content: [{ type: 'text', text }], stopReason: 'end_turn', usage: { ...DEFAULT_USAGE }, ...extra };
}

export function toolUseResponse(
  name: string,
  input: Record<string, unknown>,
  extra: Partial<ModelResponse> & { id?: string; text?: string } = {},
): ModelResponse {
  const { id, text, ...rest } = extra;
  const content: AssistantBlock[] = [];
  if (text) content.push({ type: 'text', text });
  content.push({ type: 'tool_use', id: id ?? `toolu_scripted_${name}_${++toolUseCounter}`, name, input });
  return { model: 'scripted', content, stopReason: 'tool_use', usage: { ...DEFAULT_USAGE }, ...rest };
}

let toolUseCounter = 0;

/** Delivers text in word-sized pieces, as a streaming model would. */
function streamText(text: string, onTextDelta: ((text: string) => void) | undefined): void {
  if (!onTextDelta) return;
  for (const piece of text.match(/\S+\s*|\s+/g) ?? []) {
    try {
      onTextDelta(piece);
    } catch {
      // Live streaming is best effort: a failing listener must not fail the model turn.
    }
  }
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ModelError('aborted', 'model request aborted'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ModelError('aborted', 'model request aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

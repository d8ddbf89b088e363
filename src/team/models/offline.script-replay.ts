import type { ChatMessage, RoleName } from './model.port';

/**
 * Replaying a role script of the offline model (`offline.model.ts`) against the conversation: the
 * tool calls already in the history must be the script's first steps, their results feed its
 * decisions, and the first step not yet taken is the answer.
 */

export interface ToolObservation {
  content: string;
  isError: boolean;
}

export interface TakenStep {
  id: string;
  name: string;
  input: Record<string, unknown>;
  result?: ToolObservation;
}

/** Thrown by the script to answer with a tool call (the first step not yet in the history). */
export class NextCall {
  constructor(
    readonly name: string,
    readonly input: Record<string, unknown>,
    readonly say: string,
  ) {}
}

/** Thrown when the conversation is not one this script could have produced. */
export class UnexpectedState {
  constructor(readonly reason: string) {}
}

export class Replay {
  private index = 0;

  /**
   * `onlyNextCall`: only the step not yet taken must be among the offered tools (a plan-first
   * phase offers different tools at each stage; the steps taken were offered when they were taken).
   */
  constructor(
    private readonly steps: TakenStep[],
    private readonly availableTools: ReadonlySet<string>,
    private readonly role: RoleName,
    private readonly onlyNextCall = false,
  ) {}

  /** The result of this step if it was taken already; otherwise the step becomes the answer. */
  call(name: string, input: Record<string, unknown>, say: string): ToolObservation {
    const taken = this.steps[this.index];
    if ((!taken || !this.onlyNextCall) && !this.availableTools.has(name)) throw new UnexpectedState(`the ${name} tool is not available to the ${this.role}`);
    if (!taken) throw new NextCall(name, input, say);
    if (taken.name !== name || stableJson(taken.input) !== stableJson(input)) {
      throw new UnexpectedState(`step ${this.index + 1} was ${taken.name} ${stableJson(taken.input)}, expected ${name} ${stableJson(input)}`);
    }
    if (!taken.result) throw new UnexpectedState(`the ${taken.name} call ${taken.id} has no tool_result`);
    this.index += 1;
    return taken.result;
  }

  /** A final answer is only right if nothing was done after the script's last step. */
  finish(text: string): string {
    if (this.index < this.steps.length) {
      throw new UnexpectedState(`the conversation has ${this.steps.length - this.index} tool call(s) after the role's last step`);
    }
    return text;
  }
}

/** The tool calls made so far, each with its result; a description of the problem if inconsistent. */
export function takenSteps(messages: ChatMessage[]): TakenStep[] | string {
  const steps: TakenStep[] = [];
  const byId = new Map<string, TakenStep>();
  for (const message of messages) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content) {
      if (message.role === 'assistant' && block.type === 'tool_use') {
        if (byId.has(block.id)) return `tool_use id ${block.id} appears twice`;
        const step: TakenStep = { id: block.id, name: block.name, input: block.input ?? {} };
        steps.push(step);
        byId.set(block.id, step);
      } else if (message.role === 'user' && block.type === 'tool_result') {
        const step = byId.get(block.tool_use_id);
        if (!step) return `a tool_result answers an unknown tool_use ${block.tool_use_id}`;
        step.result = { content: typeof block.content === 'string' ? block.content : JSON.stringify(block.content), isError: block.is_error === true };
      }
    }
  }
  return steps;
}

/** JSON with sorted keys, to compare tool inputs however their keys were ordered or cloned. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

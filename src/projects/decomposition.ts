import type { AssistantBlock, ModelRequest, ModelResponse, ToolSpec } from '../team/models/model.port';
import type { ArchitectTurn } from './domain/project-events';
import type { ProjectStrategy, TaskSpec } from './domain/task-graph';

/**
 * The architect's decomposition of a project goal into a task graph: one model turn offered one
 * tool, `submit_task_graph`, whose input is the graph. The turn is recorded (ProjectPlanned, or
 * ProjectPlanningFailed when the model gives no valid graph), never parsed from prose.
 */

export const SUBMIT_TASK_GRAPH = 'submit_task_graph';

export const SUBMIT_TASK_GRAPH_TOOL: ToolSpec = {
  name: SUBMIT_TASK_GRAPH,
  description:
    'Submit the project as a graph of tasks. Each task is done by its own team run: give it a short key, a self-contained goal, ' +
    'its acceptance criteria and the keys of the tasks it needs finished first (dependsOn). No cycles.',
  input_schema: {
    type: 'object',
    required: ['tasks'],
    properties: {
      tasks: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['key', 'goal', 'acceptanceCriteria'],
          properties: {
            key: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' },
            goal: { type: 'string' },
            acceptanceCriteria: { type: 'array', items: { type: 'string' } },
            dependsOn: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    },
  },
};

export const PROJECT_ARCHITECT_PROMPT =
  'You are the Architect of a team of agents. Break the project below into tasks that separate team runs can do, ' +
  'and submit them with submit_task_graph. Keep tasks few and concrete; a task that needs another finished first names it in dependsOn.';

export interface DecompositionInput {
  projectId: string;
  goal: string;
  acceptanceCriteria: string[];
  strategy: ProjectStrategy;
}

const OPEN = '<project>';
const CLOSE = '</project>';

/** The architect's request: the goal, the criteria and the strategy (also as JSON, which the offline model reads). */
export function decompositionRequest(input: DecompositionInput, model: string, signal?: AbortSignal): ModelRequest {
  const criteria = input.acceptanceCriteria.length > 0 ? input.acceptanceCriteria.map((c) => `- ${c}`).join('\n') : '(none given)';
  const parallel = input.strategy === 'parallel' ? '\nThe tasks run in parallel: they must be independent (no dependsOn).' : '';
  const text =
    `Project goal:\n${input.goal}\n\nAcceptance criteria:\n${criteria}\n\nStrategy: ${input.strategy}${parallel}\n\n` +
    `${OPEN}${JSON.stringify({ goal: input.goal, acceptanceCriteria: input.acceptanceCriteria, strategy: input.strategy })}${CLOSE}`;
  return {
    runId: input.projectId,
    role: 'architect',
    model,
    system: PROJECT_ARCHITECT_PROMPT,
    messages: [{ role: 'user', content: text }],
    tools: [SUBMIT_TASK_GRAPH_TOOL],
    maxTokens: 8192,
    ...(signal ? { signal } : {}),
  };
}

/** The turn as recorded, and the tasks it submitted (undefined when it called no submit_task_graph). */
export function readDecomposition(response: ModelResponse): { architect: ArchitectTurn; tasks?: unknown } {
  const call = response.content.find((b) => b.type === 'tool_use' && b.name === SUBMIT_TASK_GRAPH);
  const text = response.content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('\n')
    .slice(0, 2000);
  const architect: ArchitectTurn = {
    model: response.model,
    usage: { inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens },
    ...(text ? { text } : {}),
  };
  if (!call || call.type !== 'tool_use') return { architect };
  return { architect: { ...architect, toolUseId: call.id, input: call.input }, tasks: (call.input as { tasks?: unknown }).tasks };
}

/**
 * The offline model's decomposition, deterministic: one task per acceptance criterion (one task
 * whose criterion is the goal when there are none); the first task is the foundation the others build on (they depend
 * on it), except under `parallel`, where tasks are independent.
 */
export function offlineTaskGraph(input: Pick<DecompositionInput, 'goal' | 'acceptanceCriteria' | 'strategy'>): TaskSpec[] {
  if (input.acceptanceCriteria.length === 0) return [{ key: 'task-1', goal: input.goal, acceptanceCriteria: [input.goal], dependsOn: [] }];
  return input.acceptanceCriteria.map((criterion, i) => ({
    key: `task-${i + 1}`,
    goal: `${input.goal} (part ${i + 1} of ${input.acceptanceCriteria.length}: ${criterion})`,
    acceptanceCriteria: [criterion],
    dependsOn: i === 0 || input.strategy === 'parallel' ? [] : ['task-1'],
  }));
}

/** The offline model's answer to a decomposition request: one submit_task_graph call. */
export function offlineDecompositionTurn(request: ModelRequest): AssistantBlock[] {
  const first = request.messages[0];
  const text = typeof first?.content === 'string' ? first.content : (first?.content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n');
  const start = text.lastIndexOf(OPEN);
  const end = text.lastIndexOf(CLOSE);
  if (start < 0 || end < start) return [{ type: 'text', text: 'Offline model: this request carries no project to decompose.' }];
  let input: DecompositionInput;
  try {
    input = JSON.parse(text.slice(start + OPEN.length, end)) as DecompositionInput;
  } catch {
    return [{ type: 'text', text: 'Offline model: the project in this request is not readable.' }];
  }
  const tasks = offlineTaskGraph({ goal: String(input.goal ?? ''), acceptanceCriteria: Array.isArray(input.acceptanceCriteria) ? input.acceptanceCriteria.map(String) : [], strategy: input.strategy });
  return [
    { type: 'text', text: `Offline model: ${tasks.length} task(s), one per acceptance criterion.` },
    { type: 'tool_use', id: `toolu_offline_graph_${tasks.length}`, name: SUBMIT_TASK_GRAPH, input: { tasks } },
  ];
}

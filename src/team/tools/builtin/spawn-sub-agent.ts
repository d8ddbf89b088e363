import type { ToolDefinition } from '../tool.port';
import { SPAWN_SUB_AGENT_TOOL, SUB_AGENT_LIMITS } from '../../domain/sub-agents';
import { SUB_AGENT_ROLES } from '../../domain/run-events';

/**
 * spawn_sub_agent: delegates a task to a sub-agent. Offered to the model like any tool, but run by
 * the run driver (driver/sub-agent-runner.ts), which records the sub-agent's turns in the run's
 * stream; `execute` only answers a call that reached the registry some other way.
 */
export function spawnSubAgentTool(): ToolDefinition {
  const r = SUB_AGENT_LIMITS.ranges;
  const d = SUB_AGENT_LIMITS.defaults;
  return {
    name: SPAWN_SUB_AGENT_TOOL,
    description:
      'Delegate one well-defined task to a sub-agent, which works with its own tools (never more than yours) and returns its ' +
      `answer as this call's result. role is its speciality; tools limits it to some of your tools. Limits: maxTurns ` +
      `(default ${d.maxTurns}), maxTokens (default ${d.maxTokens}, counted against the run's budget), timeoutMs (default ` +
      `${d.timeoutMs}); priority 1 (highest) to 10 (lowest, default ${d.priority}) orders it when sub-agents queue.`,
    inputSchema: {
      type: 'object',
      properties: {
        role: { type: 'string', enum: [...SUB_AGENT_ROLES], description: 'The sub-agent\'s speciality.' },
        task: { type: 'string', minLength: 1, pattern: '\\S', description: 'The task, complete: the sub-agent sees nothing else.' },
        tools: { type: 'array', items: { type: 'string' }, description: 'Tool names it may use (default: all of yours).' },
        maxTurns: { type: 'integer', minimum: r.maxTurns[0], maximum: r.maxTurns[1] },
        maxTokens: { type: 'integer', minimum: r.maxTokens[0], maximum: r.maxTokens[1] },
        timeoutMs: { type: 'integer', minimum: r.timeoutMs[0], maximum: r.timeoutMs[1] },
        priority: { type: 'integer', minimum: r.priority[0], maximum: r.priority[1] },
      },
      required: ['role', 'task'],
      additionalProperties: false,
    },
    readOnly: false,
    idempotent: false,
    // The driver rates each spawn by the tools its sub-agent gets: `high` when any of them is (then,
    // under a tool-approval policy, the spawn waits for a human: the sub-agent is awaiting_approval).
    risk: 'low',
    async execute() {
      return { isError: true, output: `${SPAWN_SUB_AGENT_TOOL} is run by the run driver, not as a plain tool` };
    },
  };
}

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isDomainError } from '../../shared/errors';
import { RUN_STATUSES, type RunStatus } from '../../team/domain/run-events';
import { PROJECT_STRATEGIES } from '../../projects/domain/task-graph';
import type { TriadOperations } from './triad-operations';

/**
 * triad as an MCP server: tools that launch runs and projects and read what they did (runs,
 * events, the workspace diff, reviews, the decision log), the same for `triad mcp` on stdio and
 * for streamable HTTP at `/mcp`. There is no tool that decides a review or a tool approval, on
 * purpose: an agent calling triad never stands in for the human at a gate.
 */

/** Every tool's name: the list tests compare `tools/list` with. */
export const TRIAD_MCP_TOOLS = ['launch_run', 'launch_project', 'list_runs', 'show_run', 'wait_for_run', 'run_events', 'workspace_diff', 'list_reviews', 'show_review', 'verify_decisions'] as const;

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const LAUNCH: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/** The longest a `wait_for_run` call waits (an MCP client's request times out after a minute by default). */
const MAX_WAIT_MS = 55_000;

const id = (what: string) => z.string().min(1).max(200).describe(what);
const options = z.record(z.string(), z.unknown());

export interface McpFailureLog {
  error(message: string): void;
}

export function buildTriadMcpServer(ops: TriadOperations, version: string, log: McpFailureLog): McpServer {
  const server = new McpServer({ name: 'triad', version }, { instructions: 'triad runs a team of agents (Architect, Executor, Reviewer) on a goal with acceptance criteria. Launch a run, wait for it, read its events and workspace diff. Reviews and tool approvals are decided by people through the API or the console, never through these tools.' });
  // One answer shape: the value as JSON text and as structured content; a failure as an error result.
  const answer = async (fn: () => Promise<unknown>): Promise<CallToolResult> => {
    try {
      const value = await fn();
      const structured = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
      return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: structured };
    } catch (err) {
      if (isDomainError(err)) return { isError: true, content: [{ type: 'text', text: err.message }] };
      log.error(`an MCP tool failed: ${(err as Error)?.message ?? String(err)}`);
      return { isError: true, content: [{ type: 'text', text: 'the tool failed on the server; it is logged there' }] };
    }
  };

  server.registerTool(
    'launch_run',
    {
      title: 'Launch a team run',
      description: 'Launch a team run: the Architect plans, the Executor works, the Reviewer reviews, then a human decides at the review gate. Answers at once with the run id; follow it with wait_for_run.',
      // Strict, as POST /v1/runs is: a misspelt field (`maxIteration`) is refused, not dropped.
      inputSchema: z
        .object({
        goal: z.string().describe('what the team is to do'),
        acceptanceCriteria: z.array(z.string()).describe('what the work must meet (the offline model reads `file <path> exists` and `file <path> contains "<text>"`)'),
        team: options.optional().describe('per role (architect, executor, reviewer): model, maxTurns, tools, loop… as POST /v1/runs takes it'),
        maxIterations: z.number().int().optional(),
        timeoutMs: z.number().int().optional(),
        budget: options.optional(),
        reviewPolicy: options.optional(),
        toolApproval: options.optional(),
        idempotencyKey: z.string().optional().describe('the same key (and launcher) names the same run'),
        })
        .strict(),
      annotations: LAUNCH,
    },
    (args) => answer(() => ops.launchRun(args)),
  );

  server.registerTool(
    'launch_project',
    {
      title: 'Launch a project',
      description: 'Launch a project: a goal as a graph of tasks, each a team run (without tasks the architect decomposes the goal); one human review of the whole project.',
      inputSchema: z
        .object({
        goal: z.string(),
        acceptanceCriteria: z.array(z.string()).optional(),
        tasks: z.array(z.object({ key: z.string(), goal: z.string(), acceptanceCriteria: z.array(z.string()), dependsOn: z.array(z.string()).optional() })).optional(),
        strategy: z.enum(PROJECT_STRATEGIES as [string, ...string[]]).optional(),
        concurrency: z.number().int().optional(),
        reviewPolicy: options.optional(),
        run: options.optional().describe('what every task run is launched with: maxIterations, timeoutMs, budget'),
        idempotencyKey: z.string().optional(),
        })
        .strict(),
      annotations: LAUNCH,
    },
    (args) => answer(() => ops.launchProject(args)),
  );

  server.registerTool(
    'list_runs',
    {
      title: 'List runs',
      description: 'The latest runs, newest first, optionally with one status.',
      inputSchema: { status: z.enum(RUN_STATUSES as [RunStatus, ...RunStatus[]]).optional(), limit: z.number().int().min(1).max(1000).optional() },
      annotations: READ,
    },
    ({ status, limit }) => answer(async () => ({ runs: await ops.listRuns(status, limit ?? 50) })),
  );

  server.registerTool(
    'show_run',
    { title: 'Show a run', description: 'A run: status, phase, iteration, usage, termination reason, pending review or tool approvals.', inputSchema: { runId: id('the run id (run_…)') }, annotations: READ },
    ({ runId }) => answer(() => ops.showRun(runId)),
  );

  server.registerTool(
    'wait_for_run',
    {
      title: 'Wait for a run',
      description: `Wait until the run ends or waits for a human (status "waiting"), at most timeoutMs (default 30000, at most ${MAX_WAIT_MS}); "timeout" if it is still working.`,
      inputSchema: { runId: id('the run id'), timeoutMs: z.number().int().min(0).max(MAX_WAIT_MS).optional() },
      annotations: READ,
    },
    ({ runId, timeoutMs }) => answer(() => ops.waitForRun(runId, timeoutMs ?? 30_000)),
  );

  server.registerTool(
    'run_events',
    {
      title: "Read a run's events",
      description: "A page of the run's recorded events (model turns, tool calls, transitions, decisions) from fromRevision; nextRevision when there are more.",
      inputSchema: { runId: id('the run id'), fromRevision: z.number().int().min(0).optional(), limit: z.number().int().min(1).max(1000).optional() },
      annotations: READ,
    },
    ({ runId, fromRevision, limit }) => answer(() => ops.runEvents(runId, fromRevision ?? 0, limit ?? 100)),
  );

  server.registerTool(
    'workspace_diff',
    {
      title: "A run's workspace diff",
      description: 'What the executor changed in an iteration (default: the latest) against the iteration before, as a unified diff rebuilt from the run events.',
      inputSchema: { runId: id('the run id'), iteration: z.number().int().min(1).max(1000).optional() },
      annotations: READ,
    },
    ({ runId, iteration }) => answer(() => ops.workspaceDiff(runId, iteration)),
  );

  server.registerTool(
    'list_reviews',
    { title: 'List pending reviews', description: 'Work waiting for a human at the review gate (needs the reviewer role). Deciding is for people, not for this server.', inputSchema: {}, annotations: READ },
    () => answer(async () => ({ reviews: await ops.listReviews() })),
  );

  server.registerTool(
    'show_review',
    { title: 'Show a review', description: "A review as the console shows it: the run, the criteria, every iteration's verdict, findings, human feedback and diffs, who may decide and whether you may (needs the reviewer role).", inputSchema: { reviewId: id('the review id (rev_…)') }, annotations: READ },
    ({ reviewId }) => answer(() => ops.showReview(reviewId)),
  );

  server.registerTool(
    'verify_decisions',
    {
      title: 'Verify the decision log',
      description: 'Check the hash chain and every signature of the decision log (needs the auditor role); with since (a record hash or signed head token), also that the log still extends it.',
      inputSchema: { since: z.string().max(4096).optional() },
      annotations: READ,
    },
    ({ since }) => answer(() => ops.verifyDecisions(since)),
  );

  return server;
}
